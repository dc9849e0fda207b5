#include "Bulk.h"

#include <capnp/serialize.h>
#include <zstd.h>

#include <cstring>
#include <string>

#include "ProxyErrors.h"

namespace mqd {
namespace {

// Below this, compression costs more than it saves.
constexpr size_t kCompressMinBytes = 512;
// Fast, and still several times smaller for heap memory and walks.
constexpr int kZstdLevel = 1;

}  // namespace

BulkSizes setBulk(wire::Bulk::Builder out, kj::ArrayPtr<const kj::byte> data, bool compress) {
  BulkSizes sizes{data.size(), data.size()};
  out.setSize(static_cast<uint32_t>(data.size()));
  if (compress && data.size() >= kCompressMinBytes) {
    size_t bound = ZSTD_compressBound(data.size());
    auto buffer = kj::heapArray<kj::byte>(bound);
    size_t n = ZSTD_compress(buffer.begin(), bound, data.begin(), data.size(), kZstdLevel);
    if (!ZSTD_isError(n) && n < data.size()) {
      out.setZstd(buffer.slice(0, n));
      sizes.wire = n;
      return sizes;
    }
  }
  out.setRaw(data);
  return sizes;
}

kj::Array<kj::byte> readBulk(wire::Bulk::Reader in, size_t limit) {
  size_t size = in.getSize();
  if (size > limit) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                     "bulk payload of " + std::to_string(size) + " bytes exceeds the limit");
  }
  if (in.isRaw()) {
    auto raw = in.getRaw();
    if (raw.size() != size) throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "bulk size mismatch");
    return kj::heapArray<kj::byte>(raw);
  }
  auto packed = in.getZstd();
  auto out = kj::heapArray<kj::byte>(size);
  size_t n = ZSTD_decompress(out.begin(), size, packed.begin(), packed.size());
  if (ZSTD_isError(n) || n != size) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "bulk payload does not decompress to its size");
  }
  return out;
}

BulkSizes setBulkMessage(wire::Bulk::Builder out, capnp::MessageBuilder& message, bool compress) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  return setBulk(out, words.asBytes(), compress);
}

BulkMessageReader::BulkMessageReader(wire::Bulk::Reader in) {
  if (in.getSize() == 0) return;
  kj::Array<kj::byte> bytes = readBulk(in);
  if (bytes.size() % sizeof(capnp::word) != 0) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "bulk message is not whole words");
  }
  words_ = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words_.begin(), bytes.begin(), bytes.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 64ull << 20;
  reader_ = kj::heap<capnp::FlatArrayMessageReader>(words_.asPtr(), options);
  empty_ = false;
}

}  // namespace mqd
