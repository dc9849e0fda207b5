#include <doctest/doctest.h>

#include <capnp/message.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "Bulk.h"
#include "ProxyErrors.h"
#include "TargetMemory.h"
#include "mqd_proxy.h"

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

TEST_CASE("TargetMemory: a fetched block serves the read that missed, and is kept") {
  TargetMemory m(4096);
  unsigned char out[8] = {};
  REQUIRE(m.storeAndRead(0x10000, bytes(pattern(0x10000, 4096)), 0x10ff8, 8, out));
  CHECK(std::memcmp(out, pattern(0x10ff8, 8).data(), 8) == 0);
  CHECK(m.read(0x10000, 8, nullptr));  // kept: the next read of it is a hit

  // A window that does not hold the read (a short answer, a wrong address) serves nothing
  // and is not kept.
  unsigned char untouched[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  unsigned char copy[8];
  std::memcpy(copy, untouched, 8);
  CHECK_FALSE(m.storeAndRead(0x20000, bytes(pattern(0x20000, 1024)), 0x203fc, 8, untouched));
  CHECK_FALSE(m.storeAndRead(0x30000, bytes(pattern(0x30000, 1024)), 0x2fff8, 8, untouched));
  CHECK_FALSE(m.storeAndRead(0x40000, bytes(pattern(0x40000, 1024)), UINT64_MAX - 2, 8,
                             untouched));
  CHECK(std::memcmp(untouched, copy, 8) == 0);
  CHECK_FALSE(m.read(0x20000, 8, nullptr));
  CHECK_FALSE(m.read(0x30000, 8, nullptr));
  CHECK_FALSE(m.read(0x40000, 8, nullptr));
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
  m.touch(0x1010, 8);
  m.touch(0x3ff8, 16);  // across a block boundary: one window per block
  auto current = m.currentWindows();
  REQUIRE(current.size() == 3);
  CHECK(current[0].address == 0x1010);
  CHECK(current[0].size == 8);
  CHECK(current[1].address == 0x3ff8);
  CHECK(current[1].size == 8);
  CHECK(current[2].address == 0x4000);
  CHECK(current[2].size == 8);

  m.newEpoch();
  unsigned char out[8];
  CHECK_FALSE(m.read(0x1010, 8, out));
  CHECK_FALSE(m.failed(0x5000, 8, &rc));
  CHECK(m.currentWindows().empty());
  // ... but remembers what the DLL read in the ended epoch, to prefetch it.
  REQUIRE(m.previousWindows().size() == 3);
  CHECK(m.previousWindows()[0].address == 0x1010);
  m.touch(0x9000, 4);
  m.newEpoch();
  REQUIRE(m.previousWindows().size() == 1);
  m.newEpoch();
  CHECK(m.previousWindows().empty());  // nothing was read in between
  // Every epoch's reads, for a later session's first epoch.
  auto all = m.allWindows();
  REQUIRE(all.size() == 4);
  CHECK(all[0].address == 0x1010);
  CHECK(all[3].address == 0x9000);
}

TEST_CASE("TargetMemory: the next epoch asks for the bytes the DLL read, near ones as one") {
  TargetMemory m(65536);
  constexpr uint64_t gap = TargetMemory::kTouchGap;
  m.touch(0x10000, 8);
  m.touch(0x10000 + 8 + gap, 8);      // exactly kTouchGap after: merged
  m.touch(0x20000, 8);
  m.touch(0x20000 + 8 + gap + 1, 4);  // one byte further: a window of its own
  m.touch(0x10004, 2);                // inside: nothing new
  m.touch(0x30000, 0);                // nothing read
  auto w = m.currentWindows();
  REQUIRE(w.size() == 3);
  CHECK(w[0].address == 0x10000);
  CHECK(w[0].size == 16 + gap);
  CHECK(w[1].address == 0x20000);
  CHECK(w[1].size == 8);
  CHECK(w[2].address == 0x20000 + 8 + gap + 1);
  CHECK(w[2].size == 4);
  // A read bridging two ranges joins them, and the ranges around it, into one.
  m.touch(0x20008, static_cast<uint32_t>(gap));
  w = m.currentWindows();
  REQUIRE(w.size() == 2);
  CHECK(w[1].address == 0x20000);
  CHECK(w[1].size == 8 + gap + 1 + 4);
  // A range longer than a block is asked for block by block.
  m.touch(0x3fff0, 0x20020);
  w = m.currentWindows();
  REQUIRE(w.size() == 6);
  CHECK(w[2].address == 0x3fff0);
  CHECK(w[2].size == 0x10);
  CHECK(w[3].address == 0x40000);
  CHECK(w[3].size == 0x10000);
  CHECK(w[4].address == 0x50000);
  CHECK(w[4].size == 0x10000);
  CHECK(w[5].address == 0x60000);
  CHECK(w[5].size == 0x10);
}

TEST_CASE("TargetMemory: a block stored over small windows serves every read inside it") {
  TargetMemory m(65536);
  unsigned char out[8];
  // The windows of a prefetch: many small ones inside one block.
  for (uint64_t a = 0x10100; a < 0x18000; a += 0x400) m.store(a, bytes(pattern(a, 16)));
  CHECK(m.read(0x17d08, 8, out));
  CHECK_FALSE(m.read(0x1fff0, 8, out));
  // The DLL reads between them: the whole block is asked for and serves all of it, also
  // beyond the many small windows below the read.
  m.store(0x10000, bytes(pattern(0x10000, 65536)));
  for (uint64_t a = 0x10000; a < 0x20000; a += 0x1f8) {
    REQUIRE(m.read(a, 8, out));
    CHECK(std::memcmp(out, pattern(a, 8).data(), 8) == 0);
  }
  // A read across windows that follow each other is served from both.
  m.store(0x3fff0, bytes(pattern(0x3fff0, 0x10)));
  m.store(0x40000, bytes(pattern(0x40000, 0x10)));
  REQUIRE(m.read(0x3fffc, 8, out));
  CHECK(std::memcmp(out, pattern(0x3fffc, 8).data(), 8) == 0);
  std::memset(out, 0xee, sizeof out);
  CHECK_FALSE(m.read(0x4000c, 8, out));  // runs past the second: nothing is written
  CHECK(std::count(out, out + sizeof out, 0xee) == sizeof out);
  CHECK_FALSE(m.read(0x3ffec, 8, out));  // starts before the first
  // Windows that overlap without one holding the other both serve.
  m.store(0x1ff00, bytes(pattern(0x1ff00, 0x200)));
  CHECK(m.read(0x1fff8, 8, out));
  CHECK(m.read(0x20010, 8, out));
  CHECK(m.read(0x10010, 8, out));
}

TEST_CASE("TargetMemory: after a set-up epoch the blocks it kept are named whole, once") {
  TargetMemory m(4096);
  m.newEpoch(true);  // the set-up starts
  m.store(0x1000, bytes(pattern(0x1000, 4096)));
  m.touch(0x1010, 8);
  m.newEpoch();  // the first update
  REQUIRE(m.previousSetUpWindows().size() == 1);
  CHECK(m.previousSetUpWindows()[0].address == 0x1000);
  CHECK(m.previousSetUpWindows()[0].size == 4096);
  REQUIRE(m.previousWindows().size() == 1);
  CHECK(m.previousWindows()[0].size == 8);
  m.store(0x1000, bytes(pattern(0x1000, 4096)));
  m.newEpoch();  // a later update: what the DLL read only
  CHECK(m.previousSetUpWindows().empty());
}

TEST_CASE("TargetMemory: a window that came compressed is decompressed when the DLL reads it") {
  TargetMemory m(65536);
  auto heap = pattern(0x50000, 0x4000);
  std::fill(heap.begin() + 0x100, heap.end(), 0);  // compresses well
  capnp::MallocMessageBuilder message;
  auto good = message.initRoot<mqd::wire::Bulk>();
  mqd::setBulk(good, kj::arrayPtr(heap.data(), heap.size()), true);
  REQUIRE(good.isZstd());
  m.store(0x50000, mqd::BulkBytes(good.asReader(), heap.size()));
  capnp::MallocMessageBuilder message2;
  auto bad = message2.initRoot<mqd::wire::Bulk>();
  mqd::setBulk(bad, kj::arrayPtr(heap.data(), heap.size()), true);
  bad.setSize(0x3000);  // decompresses to more than it announces
  m.store(0x60000, mqd::BulkBytes(bad.asReader(), 0x4000));

  unsigned char out[16];
  // Whether it is held asks for no bytes: the bad frame is not noticed.
  CHECK(m.read(0x60010, 8, nullptr));
  CHECK(m.read(0x50ff8, 16, out));
  CHECK(std::memcmp(out, heap.data() + 0xff8, 16) == 0);
  // Across a compressed window and one stored as it came.
  m.store(0x54000, bytes(pattern(0x54000, 0x10)));
  REQUIRE(m.read(0x53ff8, 16, out));
  CHECK(std::memcmp(out, heap.data() + 0x3ff8, 8) == 0);
  CHECK(std::memcmp(out + 8, pattern(0x54000, 8).data(), 8) == 0);
  // The DLL's read of the bad frame is a protocol error, every time.
  for (int i = 0; i < 2; ++i) {
    int code = 0;
    try {
      m.read(0x60010, 8, out);
    } catch (const mqd::ProxyError& e) {
      code = e.code();
    }
    CHECK(code == MQD_PROXY_ERR_PROTOCOL);
  }
}
