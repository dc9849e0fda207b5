#include "CountingStream.h"

namespace mqd {

kj::Promise<size_t> CountingStream::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  return inner_->tryRead(buffer, minBytes, maxBytes).then([this](size_t n) {
    count_(n, 0);
    return n;
  });
}

kj::Promise<void> CountingStream::write(const void* buffer, size_t size) {
  count_(0, size);
  return inner_->write(buffer, size);
}

kj::Promise<void> CountingStream::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  size_t total = 0;
  for (auto& p : pieces) total += p.size();
  count_(0, total);
  return inner_->write(pieces);
}

}  // namespace mqd
