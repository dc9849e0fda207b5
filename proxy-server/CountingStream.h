// CountingStream: a connection that counts the bytes it carries into the session board
// (wire.bytes_in / wire.bytes_out), and otherwise passes everything through.
#pragma once

#include <kj/async-io.h>

namespace mqd::server {

class CountingStream final : public kj::AsyncIoStream {
 public:
  explicit CountingStream(kj::Own<kj::AsyncIoStream> inner) : inner_(kj::mv(inner)) {}

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
};

}  // namespace mqd::server
