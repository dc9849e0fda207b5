#include "IdleTimeout.h"

namespace mqd::server {

IdleTimeout::IdleTimeout(kj::Timer& timer, kj::Duration limit)
    : timer_(timer), limit_(limit), last_(timer.now()) {}

kj::Promise<void> IdleTimeout::expired() {
  kj::TimePoint due = last_ + limit_;
  return timer_.atTime(due).then([this]() -> kj::Promise<void> {
    if (timer_.now() - last_ >= limit_) return kj::READY_NOW;
    return expired();  // touched meanwhile: wait for the new deadline
  });
}

}  // namespace mqd::server
