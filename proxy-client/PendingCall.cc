#include "PendingCall.h"

#include "ProxyErrors.h"

namespace mqd::client {

bool PendingCall::post(Task task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (over_) return false;
  tasks_.push_back(std::move(task));
  wake_.notify_one();
  return true;
}

void PendingCall::finish(std::shared_ptr<void> message, capnp::AnyStruct::Reader results) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (over_) return;  // `message` dies here, on the loop thread
  message_ = std::move(message);
  results_ = results;
  over_ = true;
  wake_.notify_one();
}

void PendingCall::fail(int code, std::string detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (over_) return;
  errorCode_ = code;
  errorDetail_ = std::move(detail);
  over_ = true;
  wake_.notify_one();
}

bool PendingCall::serve(std::chrono::milliseconds silence) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Callbacks the server asked for before the reply must run before the reply is used: the
    // server cannot finish until they did, so any still queued here precede it.
    if (!tasks_.empty()) {
      Task task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      continue;
    }
    if (over_) return message_ != nullptr;
    auto deadline = std::chrono::steady_clock::now() + silence;
    if (!wake_.wait_until(lock, deadline, [&] { return over_ || !tasks_.empty(); })) {
      over_ = true;
      errorCode_ = MQD_PROXY_ERR_TIMEOUT;
      errorDetail_ = "no answer from the server for " + std::to_string(silence.count()) + " ms";
      return false;
    }
  }
}

}  // namespace mqd::client
