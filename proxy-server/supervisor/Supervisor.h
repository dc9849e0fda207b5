// Supervisor: the listening half of mqd-proxy-server, on libuv.
//
// With --stdio it listens for nothing: the one connection is stdin/stdout, relayed to a single
// worker through a socketpair (StdioRelay), and the server ends with it.
//
// It accepts connections and forks one Worker per connection, so that each debugger gets its
// own copy of the vendor DLL's global state and a crash takes down one session only. It never
// loads vendor code itself. Handles and their lives:
//
//   listener_   open at run() -> accepting -> closed at shutdown (unix socket file removed,
//               unless systemd passed the socket: --listen systemd, SocketActivation.h)
//   signals_    SIGINT/SIGTERM start shutdown; SIGCHLD reaps workers; closed when done
//   killTimer_  armed at shutdown; escalates to SIGKILL after --shutdown-grace-ms
//
// A worker's exit is logged with its status or signal and the session's one-line summary from
// the session board.
//
// Security (docs/security.md, "Security model"): at start-up it reads the token and the TLS
// identity, resolves --worker-user, and refuses to listen on a non-loopback TCP address without a
// token. Each worker admits its connection itself (Admission.h) after dropping privileges. Beyond
// --max-sessions live workers, a connection gets a short-lived refusing child that tells the client
// why (at most kMaxRefusers at once; beyond that it is closed unanswered).
#pragma once

#include <sys/types.h>
#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Admission.h"
#include "DllAllowList.h"
#include "Endpoint.h"
#include "PrivilegeDrop.h"
#include "ServerOptions.h"
#include "SessionBoard.h"
#include "StdioRelay.h"
#include "TlsIdentity.h"

namespace mqd::server {

class Supervisor {
 public:
  Supervisor(const ServerOptions& options, const DllAllowList& dlls);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Reads --token-file, --tls-cert/--tls-key and resolves --worker-user: throws
  // std::runtime_error saying what is wrong with any of them.
  // Binds, listens and serves until SIGINT or SIGTERM. Returns the exit status. Throws
  // std::runtime_error when the endpoint cannot be bound, or is a non-loopback TCP address
  // and there is no --token-file.
  int run();

 private:
  struct Worker {
    pid_t pid;
    uint64_t connection;
    SessionBoard::Slot* slot;
    bool refuser;  // only tells an over-the-limit client why, then exits
  };

  void bindListener();
  // --listen systemd: takes over the socket systemd passed (SocketActivation.h).
  void adoptActivatedSocket();
  // Listens on the bound or adopted listener_, logs it and writes --ready-file.
  void finishListening();
  // Refuses (throws std::runtime_error) a non-loopback TCP `address` without a token; warns
  // when it would carry the token in clear text. `what` names the listener in the message.
  void checkExposure(const sockaddr* address, const std::string& what);
  // --stdio: one connection on stdin/stdout, relayed to a worker (StdioRelay.h).
  void startStdio();
  void writeReadyFile(const std::string& bound);
  void onConnection(int status);
  // Forks a worker for `client`; with a non-empty `refusal`, a child that only refuses it.
  void forkWorker(int fd, const std::string& refusal = "");
  void reapWorkers();
  void beginShutdown(int signum);
  void finishIfIdle();
  // Closes the handles run() starts with (the signals and the kill timer), so that the loop
  // can end: once the last worker is gone after a stop, or when run() fails to start.
  void closeLoopHandles();

  static void connectionCallback(uv_stream_t* server, int status);
  static void signalCallback(uv_signal_t* handle, int signum);
  static void killTimerCallback(uv_timer_t* timer);

  const ServerOptions& options_;
  const DllAllowList& dlls_;
  Endpoint endpoint_;
  SessionBoard board_;
  uv_loop_t loop_;
  union {
    uv_pipe_t pipe;
    uv_tcp_t tcp;
  } listener_;
  bool listenerOpen_ = false;
  bool activated_ = false;  // listener_ is systemd's socket (--listen systemd)
  uv_signal_t sigint_, sigterm_, sigchld_;
  uv_timer_t killTimer_;
  std::unique_ptr<TlsIdentity> tls_;
  std::optional<WorkerUser> workerUser_;
  AdmissionPolicy admission_;
  std::map<pid_t, Worker> workers_;
  std::unique_ptr<StdioRelay> relay_;  // --stdio only
  std::vector<int> childCloses_;       // descriptors a forked worker must not keep
  size_t sessions_ = 0;  // workers_ that are not refusers
  size_t refusers_ = 0;
  uint64_t connections_ = 0;
  bool stopping_ = false;
  bool finished_ = false;
};

}  // namespace mqd::server
