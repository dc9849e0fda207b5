#include <doctest/doctest.h>

#include <cstring>
#include <memory>

#include "ByteOrderCheck.h"

using namespace mqd::server;

namespace {

constexpr uint64_t kTable = 0x601040;  // where the test puts MPIR_debug_typedefs_sizeof

// A process whose set-up read the table as `bytes`, and an image that knows the symbol.
struct SetUp {
  RemoteImage image;
  RemoteProcess process;
  SetUp(const unsigned char (&bytes)[8], bool reportedBig) {
    AddressAnswer a;
    a.knowsAddress = a.written = true;
    a.address = kTable;
    image.symbols["MPIR_debug_typedefs_sizeof"] = a;
    process.targetBigEndian = reportedBig;
    process.memory = std::make_unique<TargetMemory>(4096);
    auto block = kj::heapArray<kj::byte>(4096);
    std::memset(block.begin(), 0xEE, block.size());
    std::memcpy(block.begin() + (kTable % 4096), bytes, sizeof bytes);
    process.memory->store(kTable / 4096 * 4096, kj::mv(block));
  }
};

constexpr unsigned char kLittle[8] = {2, 0, 0, 0, 4, 0, 0, 0};
constexpr unsigned char kBig[8] = {0, 0, 0, 2, 0, 0, 0, 4};

}  // namespace

TEST_CASE("ByteOrderCheck: {sizeof(short), sizeof(int)} tells the byte order, or nothing") {
  CHECK(byteOrderOfTypedefSizes(kLittle) == ByteOrder::Little);
  CHECK(byteOrderOfTypedefSizes(kBig) == ByteOrder::Big);
  const unsigned char other[8] = {2, 0, 0, 0, 8, 0, 0, 0};  // not the value known
  CHECK_FALSE(byteOrderOfTypedefSizes(other).has_value());
}

TEST_CASE("ByteOrderCheck: a reported byte order that contradicts the memory is named") {
  SetUp wrong(kLittle, /*reportedBig=*/true);
  auto said = byteOrderContradiction(&wrong.image, wrong.process);
  REQUIRE(said.has_value());
  CHECK(said->find("says this process is big-endian") != std::string::npos);
  CHECK(said->find("its memory is little-endian") != std::string::npos);

  SetUp wrongBig(kBig, /*reportedBig=*/false);
  said = byteOrderContradiction(&wrongBig.image, wrongBig.process);
  REQUIRE(said.has_value());
  CHECK(said->find("says this process is little-endian") != std::string::npos);

  SetUp right(kBig, /*reportedBig=*/true);
  CHECK_FALSE(byteOrderContradiction(&right.image, right.process).has_value());
}

TEST_CASE("ByteOrderCheck: nothing is said when nothing is known, and no callback is made") {
  SetUp s(kLittle, /*reportedBig=*/true);
  CHECK_FALSE(byteOrderContradiction(nullptr, s.process).has_value());  // image never asked
  SetUp noSymbol(kLittle, true);
  noSymbol.image.symbols.clear();  // a DLL that never looked the table up
  CHECK_FALSE(byteOrderContradiction(&noSymbol.image, noSymbol.process).has_value());
  SetUp unread(kLittle, true);
  unread.process.memory = std::make_unique<TargetMemory>(4096);  // the DLL never read it
  CHECK_FALSE(byteOrderContradiction(&unread.image, unread.process).has_value());
  SetUp off(kLittle, true);
  off.process.memory.reset();  // cache policy off keeps no memory
  CHECK_FALSE(byteOrderContradiction(&off.image, off.process).has_value());
}
