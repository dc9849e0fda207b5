#include "EventLoopThread.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "Log.h"

namespace mqd::client {

EventLoopThread::EventLoopThread() {
  std::mutex m;
  std::condition_variable cv;
  bool ready = false;

  // The new thread inherits the creating thread's mask: block everything around the creation
  // and restore the caller's mask straight away.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  thread_ = std::thread([&] {
    std::unique_lock<std::mutex> lock(m, std::defer_lock);
    try {
      struct sigaction sigpipe;
      sigaction(SIGPIPE, nullptr, &sigpipe);
      auto io = kj::setupAsyncIo();
      sigaction(SIGPIPE, &sigpipe, nullptr);

      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      lock.lock();
      io_ = &io;
      executor_ = kj::getCurrentThreadExecutor().addRef();
      stop_ = kj::mv(paf.fulfiller);
      ready = true;
      cv.notify_all();
      lock.unlock();
      paf.promise.wait(io.waitScope);
      io_ = nullptr;
    } catch (const kj::Exception& e) {
      if (!lock.owns_lock()) lock.lock();
      startError_ = e.getDescription().cStr();
    } catch (const std::exception& e) {
      if (!lock.owns_lock()) lock.lock();
      startError_ = e.what();
    }
    if (!ready) {
      if (!lock.owns_lock()) lock.lock();
      ready = true;
      if (startError_.empty()) startError_ = "event loop thread ended early";
      cv.notify_all();
    }
  });
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);

  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return ready; });
  if (!startError_.empty() || !executor_) {
    lock.unlock();
    thread_.join();
    throw std::runtime_error("mqd-proxy: cannot start its event loop: " + startError_);
  }
}

EventLoopThread::~EventLoopThread() {
  if (stop_) stop_->fulfill();
  if (thread_.joinable()) thread_.join();
}

}  // namespace mqd::client
