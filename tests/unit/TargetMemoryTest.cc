#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "TargetMemory.h"

using mqd::server::TargetMemory;

namespace {

std::vector<unsigned char> pattern(uint64_t start, size_t n) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((start + i) * 7);
  return v;
}

kj::Array<kj::byte> bytes(const std::vector<unsigned char>& v) {
  return kj::heapArray<kj::byte>(v.data(), v.size());
}

}  // namespace

TEST_CASE("TargetMemory: reads miss into aligned blocks, and hit inside what was stored") {
  TargetMemory m(4096);
  auto r = m.requestFor(0x10008, 8);
  CHECK(r.address == 0x10000);
  CHECK(r.size == 4096);
  // A read across a block boundary asks for both blocks.
  r = m.requestFor(0x10ffc, 8);
  CHECK(r.address == 0x10000);
  CHECK(r.size == 8192);
  // At the top of the address space the request does not wrap.
  r = m.requestFor(~uint64_t{0} - 3, 4);
  CHECK(r.address + r.size - 1 >= ~uint64_t{0} - 1);

  unsigned char out[16];
  CHECK_FALSE(m.read(0x10008, 8, out));
  m.store(0x10000, bytes(pattern(0x10000, 4096)));
  REQUIRE(m.read(0x10008, 8, out));
  CHECK(std::memcmp(out, pattern(0x10008, 8).data(), 8) == 0);
  CHECK(m.read(0x10ff8, 8, out));        // last bytes of the window
  CHECK_FALSE(m.read(0x10ffc, 8, out));  // runs past it
  CHECK_FALSE(m.read(0xfff8, 8, out));   // starts before it

  // A page-aligned fallback window (the readable part of a block) serves what it holds.
  m.store(0x20000, bytes(pattern(0x20000, 1024)));
  CHECK(m.read(0x20100, 16, out));
  CHECK_FALSE(m.read(0x203f8, 16, out));
}

TEST_CASE("TargetMemory: refusals are remembered exactly, and an epoch forgets everything") {
  TargetMemory m(4096);
  int rc = 0;
  m.storeFailure(0x5000, 8, 1002);
  CHECK(m.failed(0x5000, 8, &rc));
  CHECK(rc == 1002);
  CHECK_FALSE(m.failed(0x5000, 4, &rc));  // only that exact range
  m.store(0x1000, bytes(pattern(0x1000, 4096)));
  m.store(0x3000, bytes(pattern(0x3000, 8192)));
  auto current = m.currentWindows();
  REQUIRE(current.size() == 2);
  CHECK(current[1].address == 0x3000);
  CHECK(current[1].size == 8192);

  m.newEpoch();
  unsigned char out[8];
  CHECK_FALSE(m.read(0x1000, 8, out));
  CHECK_FALSE(m.failed(0x5000, 8, &rc));
  CHECK(m.currentWindows().empty());
  // ... but remembers what the ended epoch read, to prefetch it.
  REQUIRE(m.previousWindows().size() == 2);
  CHECK(m.previousWindows()[0].address == 0x1000);
  m.newEpoch();
  CHECK(m.previousWindows().empty());  // nothing was read in between
}
