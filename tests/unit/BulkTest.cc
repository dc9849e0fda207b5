#include <doctest/doctest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "Bulk.h"
#include "ProxyErrors.h"
#include "mqd_proxy.h"

using namespace mqd;

namespace {

std::vector<kj::byte> heapLike(size_t n) {
  // Mostly zeros and small repeating pointers, as process heaps are.
  std::vector<kj::byte> v(n, 0);
  for (size_t i = 0; i < n; i += 64) v[i] = static_cast<kj::byte>(i / 64);
  return v;
}

std::vector<kj::byte> noise(size_t n) {
  std::vector<kj::byte> v(n);
  uint32_t x = 2463534242u;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<kj::byte>(x);
  }
  return v;
}

int protocolErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ProxyError& e) {
    return e.code();
  }
  return 0;
}

}  // namespace

TEST_CASE("Bulk: compressed only when asked, when big enough, and when it shrinks") {
  capnp::MallocMessageBuilder m;
  auto heap = heapLike(64 << 10);

  auto raw = m.initRoot<wire::Bulk>();
  BulkSizes s = setBulk(raw, kj::arrayPtr(heap.data(), heap.size()), false);
  CHECK(raw.isRaw());
  CHECK(s.raw == heap.size());
  CHECK(s.wire == heap.size());

  capnp::MallocMessageBuilder m2;
  auto packed = m2.initRoot<wire::Bulk>();
  s = setBulk(packed, kj::arrayPtr(heap.data(), heap.size()), true);
  CHECK(packed.isZstd());
  CHECK(s.wire < s.raw / 10);
  auto back = readBulk(packed.asReader());
  REQUIRE(back.size() == heap.size());
  CHECK(std::equal(back.begin(), back.end(), heap.begin()));

  capnp::MallocMessageBuilder m3;
  auto small = m3.initRoot<wire::Bulk>();
  auto few = heapLike(100);
  setBulk(small, kj::arrayPtr(few.data(), few.size()), true);
  CHECK(small.isRaw());  // too small to pay

  capnp::MallocMessageBuilder m4;
  auto random = m4.initRoot<wire::Bulk>();
  auto n = noise(8192);
  s = setBulk(random, kj::arrayPtr(n.data(), n.size()), true);
  CHECK(random.isRaw());  // would not shrink
  CHECK(s.wire == s.raw);
  auto same = readBulk(random.asReader());
  CHECK(std::equal(same.begin(), same.end(), n.begin()));
}

TEST_CASE("Bulk: malformed payloads are protocol errors, and limits hold before allocation") {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<wire::Bulk>();
  auto heap = heapLike(8192);
  setBulk(b, kj::arrayPtr(heap.data(), heap.size()), true);
  REQUIRE(b.isZstd());

  // A size beyond the receiver's limit is refused without inflating anything.
  CHECK(protocolErrorOf([&] { readBulk(b.asReader(), 4096); }) == MQD_PROXY_ERR_PROTOCOL);
  // An announced size that does not match the data.
  b.setSize(8000);
  CHECK(protocolErrorOf([&] { readBulk(b.asReader()); }) == MQD_PROXY_ERR_PROTOCOL);
  b.setSize(8192);
  // Corrupt compressed bytes.
  auto z = b.getZstd();
  for (size_t i = 4; i < z.size(); i += 3) z[i] ^= 0x5a;
  CHECK(protocolErrorOf([&] { readBulk(b.asReader()); }) == MQD_PROXY_ERR_PROTOCOL);
  // Raw data shorter than announced.
  capnp::MallocMessageBuilder m2;
  auto r = m2.initRoot<wire::Bulk>();
  setBulk(r, kj::arrayPtr(heap.data(), 100), false);
  r.setSize(200);
  CHECK(protocolErrorOf([&] { readBulk(r.asReader()); }) == MQD_PROXY_ERR_PROTOCOL);
}

TEST_CASE("Bulk: a whole message travels and reads back") {
  capnp::MallocMessageBuilder inner;
  auto walk = inner.initRoot<wire::CommunicatorWalk>();
  walk.initSetup().setRc(0);
  auto comms = walk.initCommunicators(300);
  for (unsigned i = 0; i < comms.size(); ++i) comms[i].initGet().setRc(static_cast<int>(i));
  for (bool compress : {false, true}) {
    capnp::MallocMessageBuilder outer;
    auto b = outer.initRoot<wire::Bulk>();
    setBulkMessage(b, inner, compress);
    CHECK(b.isZstd() == compress);
    BulkMessageReader reader(b.asReader());
    REQUIRE_FALSE(reader.empty());
    auto back = reader.getRoot<wire::CommunicatorWalk>();
    REQUIRE(back.getCommunicators().size() == 300);
    CHECK(back.getCommunicators()[299].getGet().getRc() == 299);
  }
}

TEST_CASE("Bulk: the payload is written once into the message, which keeps no spare room") {
  // Compressed: the worst-case room zstd was given is handed back to the message.
  auto heap = heapLike(256 << 10);
  capnp::MallocMessageBuilder packedMessage;
  auto packed = packedMessage.initRoot<wire::Bulk>();
  BulkSizes s = setBulk(packed, kj::arrayPtr(heap.data(), heap.size()), true);
  REQUIRE(packed.isZstd());
  size_t packedBytes = packedMessage.sizeInWords() * sizeof(capnp::word);
  CHECK(packedBytes < s.wire + 64);

  // Incompressible: raw, and the attempt left nothing behind either.
  auto n = noise(64 << 10);
  capnp::MallocMessageBuilder rawMessage;
  auto raw = rawMessage.initRoot<wire::Bulk>();
  s = setBulk(raw, kj::arrayPtr(n.data(), n.size()), true);
  REQUIRE(raw.isRaw());
  size_t rawBytes = rawMessage.sizeInWords() * sizeof(capnp::word);
  CHECK(rawBytes < n.size() + 64);

  // A whole message, raw: exactly its serialised form, readable as the flat array would be.
  capnp::MallocMessageBuilder inner;
  inner.initRoot<wire::CommunicatorWalk>().initCommunicators(40);
  capnp::MallocMessageBuilder outer;
  auto b = outer.initRoot<wire::Bulk>();
  s = setBulkMessage(b, inner, false);
  auto flat = capnp::messageToFlatArray(inner);
  CHECK(s.raw == flat.asBytes().size());
  REQUIRE(b.getRaw().size() == flat.asBytes().size());
  CHECK(std::equal(flat.asBytes().begin(), flat.asBytes().end(), b.getRaw().begin()));
}

TEST_CASE("Bulk: an empty payload reads back empty") {
  // Found by fuzz_server_connection: an empty raw Bulk has no bytes to point at.
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<wire::Bulk>();
  b.setSize(0);
  b.initRaw(0);
  CHECK(readBulk(b.asReader()).size() == 0);
  capnp::MallocMessageBuilder none;
  auto unset = none.initRoot<wire::Bulk>();  // neither raw nor zstd set: raw, null
  CHECK(readBulk(unset.asReader()).size() == 0);
  CHECK(BulkMessageReader(unset.asReader()).empty());
}

TEST_CASE("Bulk: bytes kept compressed are decompressed when first asked for, once") {
  capnp::MallocMessageBuilder m;
  auto b = m.initRoot<wire::Bulk>();
  auto heap = heapLike(16 << 10);
  setBulk(b, kj::arrayPtr(heap.data(), heap.size()), true);
  REQUIRE(b.isZstd());

  BulkBytes kept(b.asReader(), heap.size());
  CHECK(kept.size() == heap.size());
  CHECK(kept.packed());
  const kj::byte* first = kept.bytes();
  CHECK_FALSE(kept.packed());
  CHECK(std::equal(first, first + kept.size(), heap.begin()));
  CHECK(kept.bytes() == first);  // made once

  // Its own copy: the message may go.
  auto z = b.getZstd();
  BulkBytes copy(b.asReader(), heap.size());
  for (auto& byte : z) byte = 0;
  CHECK(std::equal(copy.bytes(), copy.bytes() + copy.size(), heap.begin()));

  // A size beyond the limit is refused at once; a frame that does not decompress to its size
  // when its bytes are asked for, and again at the next ask.
  setBulk(b, kj::arrayPtr(heap.data(), heap.size()), true);
  CHECK(protocolErrorOf([&] { BulkBytes(b.asReader(), 4096); }) == MQD_PROXY_ERR_PROTOCOL);
  b.setSize(8000);
  BulkBytes wrong(b.asReader(), heap.size());
  CHECK(protocolErrorOf([&] { wrong.bytes(); }) == MQD_PROXY_ERR_PROTOCOL);
  CHECK(protocolErrorOf([&] { wrong.bytes(); }) == MQD_PROXY_ERR_PROTOCOL);

  // Raw payloads are copied as they are.
  capnp::MallocMessageBuilder m2;
  auto r = m2.initRoot<wire::Bulk>();
  setBulk(r, kj::arrayPtr(heap.data(), 100), false);
  BulkBytes raw(r.asReader(), 100);
  CHECK_FALSE(raw.packed());
  CHECK(std::equal(raw.bytes(), raw.bytes() + 100, heap.begin()));
}
