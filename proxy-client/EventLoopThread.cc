#include "EventLoopThread.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "Log.h"

namespace mqd::client {

EventLoopThread::EventLoopThread() {
  // Start-up hand-shake; shared so the thread never touches the constructor's stack after it.
  struct Startup {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::string error;
    kj::AsyncIoContext* io = nullptr;
    kj::Own<const kj::Executor> executor;
    kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop;
  };
  auto startup = std::make_shared<Startup>();

  // The new thread inherits the creating thread's mask: block everything around the creation
  // and restore the caller's mask straight away.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  thread_ = std::thread([startup] {
    try {
      struct sigaction sigpipe;
      sigaction(SIGPIPE, nullptr, &sigpipe);
      auto io = kj::setupAsyncIo();
      sigaction(SIGPIPE, &sigpipe, nullptr);
      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      {
        std::lock_guard<std::mutex> lock(startup->m);
        startup->io = &io;
        startup->executor = kj::getCurrentThreadExecutor().addRef();
        startup->stop = kj::mv(paf.fulfiller);
        startup->done = true;
        startup->cv.notify_all();
      }
      paf.promise.wait(io.waitScope);
    } catch (const kj::Exception& e) {
      std::lock_guard<std::mutex> lock(startup->m);
      if (!startup->done) startup->error = e.getDescription().cStr();
      MQD_LOG(Error, "event loop thread failed: %s", e.getDescription().cStr());
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(startup->m);
      if (!startup->done) startup->error = e.what();
      MQD_LOG(Error, "event loop thread failed: %s", e.what());
    }
    std::lock_guard<std::mutex> lock(startup->m);
    if (!startup->done) {
      if (startup->error.empty()) startup->error = "event loop thread ended early";
      startup->done = true;
      startup->cv.notify_all();
    }
  });
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);

  std::unique_lock<std::mutex> lock(startup->m);
  startup->cv.wait(lock, [&] { return startup->done; });
  if (!startup->error.empty()) {
    lock.unlock();
    thread_.join();
    throw std::runtime_error("mqd-proxy: cannot start its event loop: " + startup->error);
  }
  io_ = startup->io;
  executor_ = kj::mv(startup->executor);
  stop_ = kj::mv(startup->stop);
}

void EventLoopThread::destroyOnLoop(std::shared_ptr<void> object) {
  if (object == nullptr) return;
  std::lock_guard<std::mutex> lock(handedBackMutex_);
  handedBack_.push_back(std::move(object));
}

void EventLoopThread::destroyHandedBack() {
  std::vector<std::shared_ptr<void>> doomed;
  {
    std::lock_guard<std::mutex> lock(handedBackMutex_);
    doomed.swap(handedBack_);
  }
}  // `doomed` is destroyed here, on the loop thread, outside the lock

EventLoopThread::~EventLoopThread() {
  if (executor_) {
    try {
      executor_->executeSync([this]() { destroyHandedBack(); });
    } catch (...) {
    }
  }
  if (stop_) stop_->fulfill();
  if (thread_.joinable()) thread_.join();
  stop_ = nullptr;
  executor_ = nullptr;
}

}  // namespace mqd::client
