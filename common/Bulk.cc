#include "Bulk.h"

#include <capnp/orphan.h>
#include <capnp/serialize.h>
#include <kj/io.h>
#include <zstd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string>

#include "ProxyErrors.h"

namespace mqd {
namespace {

// Below this, compression costs more than it saves.
constexpr size_t kCompressMinBytes = 512;
// Fast, and still several times smaller for heap memory and walks.
constexpr int kZstdLevel = 1;

// Contexts reused frame after frame (a frame is one block of target memory, often a few KiB): a
// context made for every frame cost a fifth of compressing an 8 KiB block of a rank's heap and
// a quarter of decompressing it (bench/mqd-bench-bulk). A pool any thread takes one from and
// gives it back to, not one per thread: a thread_local with a destructor would keep the shim
// loaded past the debugger's dlclose(), and a later dlopen() would find its old state. Its
// slots are atomic pointers, so that a lease that ends while the process or the shim is being
// torn down (after the pool's destructor freed what it held) leaves nothing worse than one
// context not given back, never a lock destroyed under it.
template <typename Context, Context* (*Create)(), size_t (*Free)(Context*)>
class ContextPool {
 public:
  ContextPool() = default;
  ~ContextPool() {
    for (auto& slot : slots_) Free(slot.exchange(nullptr));  // zstd frees null as nothing
  }
  KJ_DISALLOW_COPY(ContextPool);

  // One context lent, given back when the lease ends; get() is null if zstd could not allocate
  // one.
  class Lease {
   public:
    explicit Lease(ContextPool& pool) : pool_(pool), context_(pool.take()) {}
    ~Lease() { pool_.give(context_); }
    KJ_DISALLOW_COPY(Lease);
    Context* get() const { return context_; }

   private:
    ContextPool& pool_;
    Context* context_;
  };

 private:
  Context* take() {
    for (auto& slot : slots_) {
      if (Context* kept = slot.exchange(nullptr)) return kept;
    }
    return Create();
  }
  void give(Context* context) {
    if (context == nullptr) return;
    for (auto& slot : slots_) {
      Context* none = nullptr;
      if (slot.compare_exchange_strong(none, context)) return;
    }
    Free(context);  // more leases at once than slots
  }

  std::array<std::atomic<Context*>, 8> slots_{};  // about the threads that compress at once
};

using CompressPool = ContextPool<ZSTD_CCtx, ZSTD_createCCtx, ZSTD_freeCCtx>;
using DecompressPool = ContextPool<ZSTD_DCtx, ZSTD_createDCtx, ZSTD_freeDCtx>;

CompressPool& compressors() {
  static CompressPool pool;
  return pool;
}

DecompressPool& decompressors() {
  static DecompressPool pool;
  return pool;
}

// Compresses the `size` bytes written to it into one zstd frame in `out`, which holds
// ZSTD_compressBound(size); finish() says 0 when zstd reported an error, the frame did not fit
// or another number of bytes was written.
class ZstdOutputStream final : public kj::OutputStream {
 public:
  ZstdOutputStream(kj::ArrayPtr<kj::byte> out, size_t size)
      : ctx_(compressors()) {
    output_ = {out.begin(), out.size(), 0};
    ok_ = ctx_.get() != nullptr &&
          !ZSTD_isError(ZSTD_CCtx_reset(ctx_.get(), ZSTD_reset_session_and_parameters)) &&
          !ZSTD_isError(ZSTD_CCtx_setParameter(ctx_.get(), ZSTD_c_compressionLevel, kZstdLevel)) &&
          !ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(ctx_.get(), size));
  }
  KJ_DISALLOW_COPY(ZstdOutputStream);

  void write(const void* buffer, size_t size) override {
    ZSTD_inBuffer input{buffer, size, 0};
    while (ok_ && input.pos < input.size) {
      ok_ = !ZSTD_isError(ZSTD_compressStream2(ctx_.get(), &output_, &input, ZSTD_e_continue)) &&
            (input.pos == input.size || output_.pos < output_.size);
    }
  }

  // Ends the frame; the compressed size, or 0 when compression failed.
  size_t finish() {
    ZSTD_inBuffer none{nullptr, 0, 0};
    while (ok_) {
      size_t left = ZSTD_compressStream2(ctx_.get(), &output_, &none, ZSTD_e_end);
      if (ZSTD_isError(left) || (left != 0 && output_.pos == output_.size)) ok_ = false;
      if (left == 0) break;
    }
    return ok_ ? output_.pos : 0;
  }

 private:
  CompressPool::Lease ctx_;
  ZSTD_outBuffer output_;
  bool ok_;
};

// Writes `rawSize` bytes, produced by `write(kj::OutputStream&)`, into `out`: compressed when
// `compress` is set, the payload is big enough, and that makes it smaller; raw otherwise. Either
// way the bytes are written once, straight into the message.
template <typename Write>
BulkSizes fillBulk(wire::Bulk::Builder out, size_t rawSize, bool compress, Write&& write) {
  BulkSizes sizes{rawSize, rawSize};
  out.setSize(static_cast<uint32_t>(rawSize));
  if (compress && rawSize >= kCompressMinBytes) {
    // Room for the worst case, given back at once: the orphan is the last thing allocated in
    // the message, so truncating it reclaims the rest (capnp/orphan.h).
    auto orphanage = capnp::Orphanage::getForMessageContaining(out);
    auto packed = orphanage.newOrphan<capnp::Data>(
        static_cast<capnp::uint>(ZSTD_compressBound(rawSize)));
    ZstdOutputStream zstd(packed.get(), rawSize);
    write(static_cast<kj::OutputStream&>(zstd));
    size_t n = zstd.finish();
    if (n != 0 && n < rawSize) {
      packed.truncate(static_cast<capnp::uint>(n));
      out.adoptZstd(kj::mv(packed));
      sizes.wire = n;
      return sizes;
    }
    packed.truncate(0);
  }
  kj::ArrayOutputStream raw(out.initRaw(static_cast<capnp::uint>(rawSize)));
  write(static_cast<kj::OutputStream&>(raw));
  return sizes;
}

// The zstd frame `packed`, decompressed into `out`, which has exactly its announced size.
void unpack(kj::ArrayPtr<const kj::byte> packed, kj::ArrayPtr<kj::byte> out) {
  DecompressPool::Lease lease(decompressors());
  ZSTD_DCtx* ctx = lease.get();
  if (ctx == nullptr) throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "no memory to decompress a bulk");
  size_t n = ZSTD_decompressDCtx(ctx, out.begin(), out.size(), packed.begin(), packed.size());
  if (ZSTD_isError(n) || n != out.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "bulk payload does not decompress to its size");
  }
}

// `in`'s payload, into `out`, which has exactly the announced size (checked by the caller).
void readBulkInto(wire::Bulk::Reader in, kj::ArrayPtr<kj::byte> out) {
  if (in.isRaw()) {
    auto raw = in.getRaw();
    if (raw.size() != out.size()) throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "bulk size mismatch");
    if (raw.size() != 0) std::memcpy(out.begin(), raw.begin(), raw.size());  // may be null
    return;
  }
  unpack(in.getZstd(), out);
}

size_t checkedSize(wire::Bulk::Reader in, size_t limit) {
  size_t size = in.getSize();
  if (size > limit) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                     "bulk payload of " + std::to_string(size) + " bytes exceeds the limit");
  }
  return size;
}

}  // namespace

BulkSizes setBulk(wire::Bulk::Builder out, kj::ArrayPtr<const kj::byte> data, bool compress) {
  return fillBulk(out, data.size(), compress,
                  [&](kj::OutputStream& to) { to.write(data.begin(), data.size()); });
}

kj::Array<kj::byte> readBulk(wire::Bulk::Reader in, size_t limit) {
  auto out = kj::heapArray<kj::byte>(checkedSize(in, limit));
  readBulkInto(in, out);
  return out;
}

BulkBytes::BulkBytes(kj::Array<kj::byte> bytes) : size_(bytes.size()), bytes_(kj::mv(bytes)) {}

BulkBytes::BulkBytes(wire::Bulk::Reader in, size_t limit) : size_(checkedSize(in, limit)) {
  if (in.isZstd()) {
    packed_ = kj::heapArray<kj::byte>(in.getZstd());
  } else {
    bytes_ = readBulk(in, limit);
  }
}

const kj::byte* BulkBytes::bytes() const {
  if (packed_ != nullptr) {
    auto out = kj::heapArray<kj::byte>(size_);
    unpack(packed_, out);
    packed_ = nullptr;
    bytes_ = kj::mv(out);
  }
  return bytes_.begin();
}

BulkSizes setBulkMessage(wire::Bulk::Builder out, capnp::MessageBuilder& message, bool compress) {
  size_t bytes = capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word);
  return fillBulk(out, bytes, compress,
                  [&](kj::OutputStream& to) { capnp::writeMessage(to, message); });
}

BulkMessageReader::BulkMessageReader(wire::Bulk::Reader in) {
  size_t size = checkedSize(in, kMaxBulkBytes);
  if (size == 0) return;
  if (size % sizeof(capnp::word) != 0) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "bulk message is not whole words");
  }
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  readBulkInto(in, words.asBytes());
  words_ = std::make_shared<const kj::Array<capnp::word>>(kj::mv(words));
  open();
}

BulkMessageReader BulkMessageReader::again() const {
  BulkMessageReader copy;
  copy.words_ = words_;
  if (words_) copy.open();
  return copy;
}

void BulkMessageReader::open() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 64ull << 20;
  reader_ = kj::heap<capnp::FlatArrayMessageReader>(words_->asPtr(), options);
  empty_ = false;
}

}  // namespace mqd
