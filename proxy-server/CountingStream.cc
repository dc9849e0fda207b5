#include "CountingStream.h"

#include "SessionBoard.h"

namespace mqd::server {

kj::Promise<size_t> CountingStream::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  return inner_->tryRead(buffer, minBytes, maxBytes).then([](size_t n) {
    Metrics::add(Count::WireBytesIn, n);
    return n;
  });
}

kj::Promise<void> CountingStream::write(const void* buffer, size_t size) {
  Metrics::add(Count::WireBytesOut, size);
  return inner_->write(buffer, size);
}

kj::Promise<void> CountingStream::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  size_t total = 0;
  for (auto& p : pieces) total += p.size();
  Metrics::add(Count::WireBytesOut, total);
  return inner_->write(pieces);
}

}  // namespace mqd::server
