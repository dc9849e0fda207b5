// CountingStream: a connection that reports the bytes it carries (to the server's session
// board, or to the shim's counters), and otherwise passes everything through.
#pragma once

#include <kj/async-io.h>

#include <cstddef>
#include <functional>

namespace mqd {

class CountingStream final : public kj::AsyncIoStream {
 public:
  // `count(in, out)` is called on the stream's thread with the bytes each read delivered and
  // each write sent.
  using Count = std::function<void(size_t in, size_t out)>;

  CountingStream(kj::Own<kj::AsyncIoStream> inner, Count count)
      : inner_(kj::mv(inner)), count_(std::move(count)) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  void abortRead() override { inner_->abortRead(); }
  void getsockopt(int level, int option, void* value, kj::uint* length) override {
    inner_->getsockopt(level, option, value, length);
  }
  void setsockopt(int level, int option, const void* value, kj::uint length) override {
    inner_->setsockopt(level, option, value, length);
  }

 private:
  kj::Own<kj::AsyncIoStream> inner_;
  Count count_;
};

}  // namespace mqd
