// SessionLink: the call machinery of one session, as the debugger's threads use it: the
// event-loop thread that owns every Cap'n Proto object, the connection on it, and the calls in
// flight.
//
// Contract:
// - start() sends one Session request, built by `send` on the loop thread, and returns at once;
//   finish() serves the server's callbacks on the calling thread (the debugger's) until that
//   call's reply arrives. Calls are finished in the order they were started: the server
//   answers them in that order.
// - finish() throws ProxyError when the call has no reply: after config.timeout the connection
//   is given up (MQD_PROXY_ERR_SESSION_LOST for every later call), so a late reply is never
//   taken for a later call's; a lost session is explained by the server's post-mortem of its
//   worker (MQD_PROXY_ERR_WORKER_DIED with the signal, the DLL and the call, when it died).
// - roundTrip() = start() + finish(), after the link's `settleFirst` (the calls sent earlier
//   whose replies are still awaited: MqsClient's recalled set-ups), its time given to `took`
//   (the cost rule's round trip).
// - Reply<Results> reads a reply in place in the RPC system's message and hands that message
//   back to the loop thread when it goes.
// Nothing here knows what a call means: that is MqsClient's and the classes it holds.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ClientConfig.h"
#include "ClientCounters.h"
#include "Connection.h"
#include "EntryPoints.h"
#include "EventLoopThread.h"
#include "PendingCall.h"
#include "ProxyErrors.h"
#include "mqd.capnp.h"

namespace mqd::client {

class DebuggerSide;
class SessionRecorder;

template <typename Results>
class Reply {
 public:
  Reply(std::shared_ptr<PendingCall> call, EventLoopThread& loop)
      : call_(std::move(call)), loop_(&loop) {}
  Reply(Reply&& other) noexcept : call_(std::move(other.call_)), loop_(other.loop_) {}
  Reply& operator=(Reply&&) = delete;
  ~Reply() {
    if (call_) loop_->destroyOnLoop(call_->takeReplyMessage());
  }
  typename Results::Reader get() const { return call_->reply().as<Results>(); }
  PendingCall& call() const { return *call_; }

  // The DLL's rc (the results' `rc`), unless a callback hit an error the debugger must see
  // instead: then that error is thrown.
  int dllResult() const {
    if (call_->callbackErrorCode() != 0) {
      throw ProxyError(call_->callbackErrorCode(), call_->callbackErrorDetail());
    }
    return get().getRc();
  }

 private:
  std::shared_ptr<PendingCall> call_;
  EventLoopThread* loop_;
};

class SessionLink {
 public:
  // `config` and `counters` outlive the link.
  SessionLink(const ClientConfig& config, ClientCounters& counters);
  // The connection goes on the loop thread, then the thread stops.
  ~SessionLink();
  SessionLink(const SessionLink&) = delete;
  SessionLink& operator=(const SessionLink&) = delete;

  // See the contract: what every round trip waits for first, and who learns what it took.
  void setRoundTripHooks(std::function<void()> settleFirst, std::function<void(double)> took) {
    settleFirst_ = std::move(settleFirst);
    took_ = std::move(took);
  }

  // What a round trip waits for first, for a call started by hand (start/finish).
  void settle() {
    if (settleFirst_) settleFirst_();
  }

  // What the server said of the session when it opened.
  struct Opened {
    DllInfo dll;
    bool takesInfoTokens = false;
    bool readsOnNode = false;
    std::vector<int> nodeRanks;  // with readsOnNode: the ranks the server's host runs
    // with readsOnNode: by rank, its processes on that host
    std::map<int, std::vector<NodeProcess>> nodeProcesses;
    uint32_t refreshAheadBytes = 0;  // the most others one update carries (0: not said)
  };
  // A new connection and session (the old one, if any, is dropped), serving `side`'s callbacks
  // and recording into `recorder` (may be null; it outlives the link). Throws ProxyError.
  Opened open(DebuggerSide& side, SessionRecorder* recorder);
  // Whether a session is open and its connection not broken.
  bool usable() const { return connection_.get() != nullptr && !connection_->broken(); }
  // Whether requests may carry compressed bulk (as the session was opened): on the thread that
  // opened it, or inside a `send`.
  bool compress() const { return compress_; }

  template <typename Send>
  std::shared_ptr<PendingCall> start(EntryPoint entryPoint, Send&& send);
  template <typename Results>
  Reply<Results> finish(std::shared_ptr<PendingCall> pending, EntryPoint entryPoint);
  template <typename Results, typename Send>
  Reply<Results> roundTrip(EntryPoint entryPoint, Send&& send);
  // finish() for a call whose outcome no longer matters.
  void drain(std::shared_ptr<PendingCall> pending);
  // finish() for a set-up with `behind` (may be null) sent behind it: `behind` is drained (and
  // null) when the set-up fails or answers with a callback's error.
  template <typename Results>
  Reply<Results> finishSetUp(std::shared_ptr<PendingCall> setUp, EntryPoint entryPoint,
                             std::shared_ptr<PendingCall>& behind);
  // Sends a request whose reply nobody waits for (its failure is ignored); nothing when the
  // connection is broken.
  template <typename Send>
  void sendDetached(Send&& send);

  // Runs `fn` on the loop thread (for what holds RPC objects: destroying them); before the
  // first open(), when there are none, on this one.
  template <typename Func>
  void onLoop(Func&& fn) {
    if (loop_) {
      loop_->run([&]() { fn(); });
    } else {
      fn();
    }
  }

 private:
  // A call that timed out: the connection is given up, the call forgotten.
  void abandon(const std::shared_ptr<PendingCall>& pending);
  // A failed call's connection error, explained by the server's post-mortem. Throws.
  [[noreturn]] void failLost(int code, const std::string& detail, const char* entryPoint);

  const ClientConfig& config_;
  ClientCounters& counters_;
  std::unique_ptr<EventLoopThread> loop_;
  kj::Own<Connection> connection_;  // created, used and destroyed on the loop thread
  bool compress_ = false;           // connection_->compress(), as the session opened
  SessionTicket ticket_;
  std::function<void()> settleFirst_;
  std::function<void(double)> took_;
};

template <typename Send>
std::shared_ptr<PendingCall> SessionLink::start(EntryPoint entryPoint, Send&& send) {
  auto pending = std::make_shared<PendingCall>(nameOf(entryPoint));
  ++counters_.callsForwarded;
  loop_->run([&]() {
    Connection& c = *connection_;
    if (c.broken()) {
      pending->fail(MQD_PROXY_ERR_SESSION_LOST, c.brokenReason());
      return;
    }
    c.addCall(pending);
    c.track(pending, send(c.session()));
  });
  return pending;
}

template <typename Results>
Reply<Results> SessionLink::finish(std::shared_ptr<PendingCall> pending, EntryPoint entryPoint) {
  if (!pending->serve(config_.timeout)) {
    int code = pending->errorCode();
    std::string detail = pending->errorDetail();
    if (code == MQD_PROXY_ERR_TIMEOUT) abandon(pending);
    if (code == MQD_PROXY_ERR_SESSION_LOST) failLost(code, detail, nameOf(entryPoint));
    throw ProxyError(code, detail);
  }
  return Reply<Results>(std::move(pending), *loop_);
}

template <typename Results, typename Send>
Reply<Results> SessionLink::roundTrip(EntryPoint entryPoint, Send&& send) {
  settle();
  auto started = std::chrono::steady_clock::now();
  Reply<Results> reply = finish<Results>(start(entryPoint, std::forward<Send>(send)), entryPoint);
  if (took_) {
    took_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return reply;
}

template <typename Results>
Reply<Results> SessionLink::finishSetUp(std::shared_ptr<PendingCall> setUp, EntryPoint entryPoint,
                                        std::shared_ptr<PendingCall>& behind) {
  auto reply = [&]() {
    try {
      return finish<Results>(std::move(setUp), entryPoint);
    } catch (...) {
      if (behind) drain(std::move(behind));
      throw;
    }
  }();
  // A set-up that answers with a callback's error: the debugger will not ask the call behind.
  if (behind && reply.call().callbackErrorCode() != 0) drain(std::move(behind));
  return reply;
}

template <typename Send>
void SessionLink::sendDetached(Send&& send) {
  loop_->run([&]() {
    if (connection_.get() == nullptr || connection_->broken()) return;
    send(connection_->session()).detach([](kj::Exception&&) {});
  });
}

}  // namespace mqd::client
