// CountingStream: a connection that reports the bytes it carries (to the server's session
// board, or to the shim's counters), and otherwise passes everything through.
#pragma once

#include <cstddef>
#include <functional>

#include "ForwardingStream.h"

namespace mqd {

class CountingStream final : public ForwardingStream {
 public:
  // `count(in, out)` is called on the stream's thread with the bytes each read delivered and
  // each write sent.
  using Count = std::function<void(size_t in, size_t out)>;

  CountingStream(kj::Own<kj::AsyncIoStream> inner, Count count)
      : ForwardingStream(kj::mv(inner)), count_(std::move(count)) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;

 private:
  Count count_;
};

}  // namespace mqd
