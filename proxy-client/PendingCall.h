// PendingCall: one mqs_* call in flight, as seen by the two threads that share it.
//
// The debugger thread that made the call waits in serve(). The event-loop thread feeds it:
// post() hands over a debugger callback to run (the server asked for a symbol, memory, ...),
// and finish() / fail() deliver the outcome. Callbacks therefore run on the calling thread,
// during the call, as a natively loaded DLL would run them.
//
// The deadline measures silence: it restarts whenever something arrives, so a slow debugger
// callback or a long but active dump never times out, and a server that stops answering does.
// After a timeout the call is abandoned: late posts are refused, and the loop thread drops
// the connection.
#pragma once

#include <capnp/any.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace mqd::client {

class PendingCall {
 public:
  using Task = std::function<void()>;

  explicit PendingCall(const char* entryPoint) : entryPoint_(entryPoint) {}

  const char* entryPoint() const { return entryPoint_; }

  // Loop thread. Queues a callback for the calling thread; false if the call is over.
  bool post(Task task);
  // Loop thread. The reply: `results`, read in place in `message`, the RPC system's own
  // response. Only the loop thread may destroy that (it tells the server the call is over), so
  // whoever takes it hands it back there (EventLoopThread::destroyOnLoop).
  void finish(std::shared_ptr<void> message, capnp::AnyStruct::Reader results);
  // Loop thread. The call failed with a proxy error code.
  void fail(int code, std::string detail);

  // Calling thread. Runs posted callbacks until the call finishes or fails, or until nothing
  // has arrived for `silence`. Returns true when finished (reply() is then set), false when it
  // failed or timed out (error() says how).
  bool serve(std::chrono::milliseconds silence);

  // Calling thread. A callback hit a proxy error the debugger should see instead of the DLL's
  // own result (a target address too wide for this debugger, a malformed request from the
  // server); the first one is kept.
  void noteCallbackError(int code, const std::string& detail) {
    if (callbackErrorCode_ == 0) {
      callbackErrorCode_ = code;
      callbackErrorDetail_ = detail;
    }
  }
  int callbackErrorCode() const { return callbackErrorCode_; }
  const std::string& callbackErrorDetail() const { return callbackErrorDetail_; }

  // Calling thread, after serve() returned true.
  capnp::AnyStruct::Reader reply() const { return results_; }
  // Calling thread: the message reply() reads, for EventLoopThread::destroyOnLoop.
  std::shared_ptr<void> takeReplyMessage() { return std::move(message_); }
  int errorCode() const { return errorCode_; }
  const std::string& errorDetail() const { return errorDetail_; }

 private:
  const char* entryPoint_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  bool over_ = false;  // finished, failed or abandoned: no more tasks
  std::shared_ptr<void> message_;  // set when finished
  capnp::AnyStruct::Reader results_;
  int errorCode_ = 0;
  std::string errorDetail_;
  int callbackErrorCode_ = 0;  // calling thread only
  std::string callbackErrorDetail_;
};

}  // namespace mqd::client
