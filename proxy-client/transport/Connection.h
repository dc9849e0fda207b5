// Connection: one connection to a server and the session opened on it. Lives on the event-loop
// thread; every member is touched only there.
//
// open() connects to the endpoint (with TLS for tls:), passes the server's admission handshake
// (common/Handshake.h: the token of MQD_PROXY_TOKEN_FILE; a direct connection sends what
// follows behind the hello, AdmissionFirst), bootstraps the Proxy capability and opens a
// Session for the configured DLL, passing a DebuggerService for the server's callbacks.
// `current` is the call the debugger is waiting on, if any: the DebuggerService posts
// callbacks to it.
#pragma once

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/one-of.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ClientConfig.h"
#include "ClientCounters.h"
#include "EntryPoints.h"
#include "PendingCall.h"
#include "PostMortem.h"
#include "ProxyErrors.h"
#include "mqd.capnp.h"

namespace mqd::client {

class DebuggerSide;
class StdioProcess;
class SessionRecorder;

// The vendor DLL as the server described it when the session opened.
struct DllInfo {
  std::string path;
  std::string versionString;
  int compatibility = 0;
  int taddrWidth = 0;
  std::set<std::string> entryPoints;  // optional entry points present
  std::string buildId;
  bool has(const char* entryPoint) const { return entryPoints.count(entryPoint) != 0; }
  bool has(EntryPoint entryPoint) const { return has(nameOf(entryPoint)); }

  // As the server's openSession described it.
  static DllInfo from(wire::DllDescription::Reader d);
};

// The parts of SessionOptions that describe this client: protocol version, DLL, architecture
// and address width (the rest is the caller's).
void describeClient(wire::SessionOptions::Builder options, const std::string& dll);

// Names this connection's session to the server after the connection is gone.
struct SessionTicket {
  uint64_t connection = 0;
  uint64_t key = 0;  // 0: the server gave none (no post-mortem possible)
};

// A process of a server's host that reads on its node, listed as the session opened
// (openSession's nodeProcesses): where the shim reads it through the debugger as it sets it up.
struct NodeProcess {
  uint64_t random = 0;  // its AT_RANDOM bytes' address: the proof of identity
  uint64_t stack = 0;   // its stack pointer (0: not known): the set-up epoch's check
};

class Connection;

// The end of connecting: the connection, or the failure that says why there is none (its code
// kept as data on the way: ProxyErrors.h, ChainFailure).
using Connected = kj::OneOf<kj::Own<Connection>, ProxyError>;

class Connection {
 public:
  // Connects and opens a session (telling the server which info tokens the debugger already
  // holds, from `side`, so that a re-established session keeps them). Never rejects: a failure
  // is a ProxyError in the Connected: UNREACHABLE when the endpoint cannot be reached,
  // SESSION_REFUSED when the server says no, AUTH_FAILED for a missing, wrong or unsafe token,
  // TLS when TLS does not fit or verify, TIMEOUT after `config.timeout`.
  // `counters` (owned by the caller, outliving the connection) receive the wire bytes and
  // the callbacks served. A `recorder` (MQD_PROXY_RECORD, outliving the connection) taps the
  // session's two capabilities.
  static kj::Promise<Connected> open(kj::AsyncIoContext& io, const ClientConfig& config,
                                     DebuggerSide& side, ClientCounters& counters,
                                     SessionRecorder* recorder = nullptr);

  // Only connects and passes the handshake (for tools that talk to the Proxy capability, not
  // to a DLL), to config.server with config's token, TLS settings and timeout; fails like
  // open().
  static kj::Promise<Connected> connect(kj::AsyncIoContext& io, const ClientConfig& config);

  // connect(), waited for on `io`'s wait scope: the connection, or throws its ProxyError.
  static kj::Own<Connection> connectNow(kj::AsyncIoContext& io, const ClientConfig& config);

  // The connection `connected` holds; throws its ProxyError if it holds none.
  static kj::Own<Connection> take(Connected&& connected);

  void setStdio(StdioProcess* ssh) { stdio_ = ssh; }

  wire::Proxy::Client& proxy() { return proxy_; }

  // Asks config.server, on a connection of its own (config's token and TLS settings, but
  // `timeout`), how the session named by `ticket` ended. Fails like connect().
  static kj::Promise<PostMortem> postMortem(kj::AsyncIoContext& io, const ClientConfig& config,
                                            SessionTicket ticket,
                                            std::chrono::milliseconds timeout);

  Connection(kj::Own<kj::AsyncIoStream> stream, std::string endpoint, ClientCounters* counters);
  ~Connection() noexcept(false);

  // For an ssh:// connection: how the remote worker ended, from what the --stdio server
  // said on ssh's stderr, waiting up to `timeout` for ssh to end. Null for other transports
  // (ask postMortem() instead).
  kj::Maybe<kj::Promise<PostMortem>> transportPostMortem(std::chrono::milliseconds timeout);

  wire::Session::Client& session() { return session_; }
  const DllInfo& dll() const { return dll_; }
  const SessionTicket& ticket() const { return ticket_; }
  // The session honours a set-up's infoToken; its server reads targets on its host
  // (mqd.capnp, Proxy.openSession).
  bool takesInfoTokens() const { return takesInfoTokens_; }
  bool readsOnNode() const { return readsOnNode_; }
  // openSession's refreshAheadBytes (0: the server did not say).
  uint32_t refreshAheadBytes() const { return refreshAheadBytes_; }
  // With readsOnNode: the MPI ranks the server's host runs (openSession's nodeRanks).
  const std::vector<int>& nodeRanks() const { return nodeRanks_; }
  // With readsOnNode: by rank, its processes there (nodeProcesses).
  const std::map<int, std::vector<NodeProcess>>& nodeProcesses() const { return nodeProcesses_; }
  // Whether bulk payloads travel zstd-compressed on this connection.
  bool compress() const { return compress_; }
  const std::string& endpoint() const { return endpoint_; }
  ClientCounters* counters() const { return counters_; }  // null for tools without a session

  // Starts `promise` (an RPC reply) and routes its outcome to `call`: the results, or the
  // code of their `failure` (mqd.capnp), or the code of the RPC system's exception.
  template <typename Results>
  void track(std::shared_ptr<PendingCall> call, capnp::RemotePromise<Results>&& promise);

  // After a fatal problem (timeout, disconnect): no further calls go out. broken() may be
  // read from any thread.
  void markBroken(int code, const std::string& why);
  bool broken() const { return brokenCode_ != 0; }
  const std::string& brokenReason() const { return brokenReason_; }

  // The calls sent and not yet answered, in the order sent. The server runs them in that order,
  // so its callbacks belong to the first: current(), null when none. Event-loop thread only
  // (MqsClient adds calls inside its loop's run(), the Debugger service reads current() there).
  std::shared_ptr<PendingCall> current() const {
    return calls_.empty() ? nullptr : calls_.front();
  }
  void addCall(std::shared_ptr<PendingCall> call) { calls_.push_back(std::move(call)); }
  // Forgets `call` (answered, or given up on).
  void forget(const std::shared_ptr<PendingCall>& call) {
    calls_.erase(std::remove(calls_.begin(), calls_.end(), call), calls_.end());
  }

 private:
  class ErrorHandler : public kj::TaskSet::ErrorHandler {
   public:
    void taskFailed(kj::Exception&&) override {}
  };

  std::string endpoint_;
  ClientCounters* counters_;
  ErrorHandler errorHandler_;
  kj::TaskSet tasks_{errorHandler_};
  kj::Own<kj::AsyncIoStream> stream_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;
  wire::Proxy::Client proxy_;
  wire::Session::Client session_{nullptr};
  DllInfo dll_;
  SessionTicket ticket_;
  bool takesInfoTokens_ = false;
  bool readsOnNode_ = false;
  uint32_t refreshAheadBytes_ = 0;
  std::vector<int> nodeRanks_;
  std::map<int, std::vector<NodeProcess>> nodeProcesses_;
  bool compress_ = false;
  StdioProcess* stdio_ = nullptr;  // owned by stream_ (ssh:// and slurm: only)
  std::deque<std::shared_ptr<PendingCall>> calls_;
  std::atomic<int> brokenCode_{0};
  std::string brokenReason_;
};

template <typename Results>
void Connection::track(std::shared_ptr<PendingCall> call,
                       capnp::RemotePromise<Results>&& promise) {
  tasks_.add(promise.then(
      [this, call](capnp::Response<Results>&& response) {
        forget(call);
        if (response.hasFailure()) {
          auto failure = response.getFailure();
          call->fail(checkedFailureCode(failure.getCode()), failure.getDetail());
          return;
        }
        auto message = std::make_shared<capnp::Response<Results>>(kj::mv(response));
        call->finish(message, static_cast<typename Results::Reader>(*message));
      },
      [this, call](kj::Exception&& e) {
        int code = codeOfRpcException(e);
        std::string detail = e.getDescription().cStr();
        if (e.getType() == kj::Exception::Type::DISCONNECTED) markBroken(code, detail);
        forget(call);
        call->fail(code, detail);
      }));
}

}  // namespace mqd::client
