// Bulk: large payloads (target memory, recorded walks) that may travel zstd-compressed.
//
// The sender compresses when the session asked for compression and it pays (the payload is
// big enough and shrinks); the receiver checks the announced size against a limit before it
// allocates, so a hostile peer cannot make it inflate a small message into a huge one.
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "mqd.capnp.h"

namespace mqd {

// The largest payload a Bulk may announce (256 MiB).
constexpr size_t kMaxBulkBytes = 256u << 20;

struct BulkSizes {
  size_t raw = 0;   // bytes before compression
  size_t wire = 0;  // bytes as sent
};

// Fills `out` with `data`, compressed when `compress` is set and that makes it smaller.
BulkSizes setBulk(wire::Bulk::Builder out, kj::ArrayPtr<const kj::byte> data, bool compress);

// The payload of `in`; throws ProxyError(PROTOCOL) if it is malformed, does not decompress to
// its announced size, or announces more than `limit` bytes.
kj::Array<kj::byte> readBulk(wire::Bulk::Reader in, size_t limit = kMaxBulkBytes);

// A payload kept as it came, its bytes made when first asked for: a zstd frame is decompressed
// then, not when it arrives. For target memory sent ahead of what reads it (a job never seen's
// guesses: about 90 MB of 64 ranks, of which the DLL reads a tenth), decompressing every
// frame on arrival, into pages the worker touched for the first time, cost it more than half a
// second in a first dump.
class BulkBytes {
 public:
  // `bytes`, as they are.
  explicit BulkBytes(kj::Array<kj::byte> bytes);
  // `in`'s payload, its compressed frame copied; throws ProxyError(PROTOCOL) at once if it
  // announces more than `limit` bytes, and from bytes() if it does not decompress to what it
  // announced.
  BulkBytes(wire::Bulk::Reader in, size_t limit);
  BulkBytes(BulkBytes&&) = default;
  BulkBytes& operator=(BulkBytes&&) = default;

  // The announced size: what bytes() holds.
  size_t size() const { return size_; }
  // The payload, decompressed at the first call (not thread-safe: one thread owns it).
  const kj::byte* bytes() const;
  // Whether the payload is still its compressed frame: bytes() not asked for yet.
  bool packed() const { return packed_ != nullptr; }

 private:
  size_t size_;
  mutable kj::Array<kj::byte> bytes_;   // the payload, once made
  mutable kj::Array<kj::byte> packed_;  // its zstd frame until then
};

// A whole Cap'n Proto message as a Bulk, and back. The reader owns the bytes it reads from.
BulkSizes setBulkMessage(wire::Bulk::Builder out, capnp::MessageBuilder& message, bool compress);

class BulkMessageReader {
 public:
  explicit BulkMessageReader(wire::Bulk::Reader in);
  // Another reader of the same message: it shares the bytes, and its traversal limit starts
  // anew (a message read again and again would exhaust one reader's).
  BulkMessageReader again() const;
  template <typename T>
  typename T::Reader getRoot() {
    return reader_->getRoot<T>();
  }
  bool empty() const { return empty_; }

 private:
  BulkMessageReader() = default;
  void open();  // reader_ over words_

  std::shared_ptr<const kj::Array<capnp::word>> words_;
  kj::Own<capnp::MessageReader> reader_;
  bool empty_ = true;
};

}  // namespace mqd
