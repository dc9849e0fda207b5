// EventLoopThread: the shim's one background thread, which owns the kj event loop and every
// Cap'n Proto object.
//
// The debugger's threads never touch kj: they hand work to this thread with run() and wait on
// a PendingCall. The thread is created with every signal blocked, so no signal meant for the
// debugger is ever delivered here. kj's event port sets SIGPIPE to SIG_IGN for the whole
// process when it starts; the constructor restores the debugger's own SIGPIPE disposition
// right after (writes to a closed socket then fail with EPIPE on this thread, where SIGPIPE
// stays blocked).
#pragma once

#include <kj/async-io.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mqd::client {

class EventLoopThread {
 public:
  // Starts the thread and waits until its event loop runs. Throws std::runtime_error if it
  // cannot start.
  EventLoopThread();
  // Stops the loop (cancelling whatever is pending on it) and joins the thread.
  ~EventLoopThread();
  EventLoopThread(const EventLoopThread&) = delete;
  EventLoopThread& operator=(const EventLoopThread&) = delete;

  // Runs `fn` on the loop thread and returns when it has returned (or, if it returns a
  // promise, when that promise resolves). Exceptions propagate to the caller. Must not be
  // called from the loop thread itself.
  template <typename Func>
  auto run(Func&& fn) {
    return executor_->executeSync([this, &fn]() {
      destroyHandedBack();
      return fn();
    });
  }

  // Any thread. Keeps `object` (one of the RPC system's, which a debugger thread held) until
  // the loop thread's next run(), and destroys it there.
  void destroyOnLoop(std::shared_ptr<void> object);

  // Only on the loop thread.
  kj::AsyncIoContext& io() { return *io_; }

 private:
  void main();
  // Loop thread: destroys what destroyOnLoop() kept.
  void destroyHandedBack();

  std::thread thread_;
  kj::AsyncIoContext* io_ = nullptr;
  kj::Own<const kj::Executor> executor_;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_;
  std::mutex handedBackMutex_;
  std::vector<std::shared_ptr<void>> handedBack_;
};

}  // namespace mqd::client
