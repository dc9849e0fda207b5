#include "Supervisor.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "LeakCheck.h"
#include "ReplacementFile.h"
#include "Log.h"
#include "SocketActivation.h"
#include "SocketTrust.h"
#include "TokenFile.h"
#include "mqd_proxy.h"
#include "Worker.h"

namespace mqd::server {
namespace {

constexpr int kBacklog = 64;
constexpr size_t kMaxRefusers = 16;  // children telling over-the-limit clients why, at once
constexpr int kRefusalLingerMs = 1000;

// Whether a bound address only accepts connections from this machine.
bool isLoopbackAddress(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr);
    return (ip >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& ip = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&ip)) return true;
    return IN6_IS_ADDR_V4MAPPED(&ip) && ip.s6_addr[12] == 127;
  }
  return false;
}

[[noreturn]] void uvFail(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + uv_strerror(err));
}

// The endpoint --listen names. For systemd's socket only whether it carries TLS is known before
// run() takes the socket; it is a TCP placeholder until then.
Endpoint listenEndpoint(const std::string& listen) {
  if (!isActivationListen(listen)) return Endpoint::parse(listen);
  Endpoint e;
  e.kind = Endpoint::Kind::Tcp;
  e.tls = listen == "tls:systemd";
  return e;
}

// The name of the address a TCP socket is bound to, in endpoint syntax (the real port).
std::string boundTcpName(const Endpoint& endpoint, const uv_tcp_t* tcp) {
  sockaddr_storage name{};
  int len = sizeof name;
  uv_tcp_getsockname(tcp, reinterpret_cast<sockaddr*>(&name), &len);
  char host[INET6_ADDRSTRLEN] = "";
  uint16_t realPort = 0;
  if (name.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&name);
    uv_ip6_name(in6, host, sizeof host);
    realPort = ntohs(in6->sin6_port);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&name);
    uv_ip4_name(in4, host, sizeof host);
    realPort = ntohs(in4->sin_port);
  }
  Endpoint actual = endpoint;
  actual.host = host;
  actual.port = realPort;
  return actual.toString();
}

std::string signalName(int signum) {
  const char* abbrev = sigabbrev_np(signum);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signum);
}

// A socket file left by a server that died: connectable means another server owns it.
void removeStaleSocket(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode)) {
    throw std::runtime_error("--listen unix:" + path + ": exists and is not a socket");
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  bool alive = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  if (alive) {
    throw std::runtime_error("--listen unix:" + path + ": another server is listening there");
  }
  ::unlink(path.c_str());
}

}  // namespace

Supervisor::Supervisor(const ServerOptions& options, const DllAllowList& dlls)
    : options_(options), dlls_(dlls), endpoint_(listenEndpoint(options.listen)) {
  if (!options.tokenFile.empty()) admission_.token = readTokenFile(options.tokenFile);
  if (endpoint_.tls) {
    tls_ = std::make_unique<TlsIdentity>(options.tlsCert, options.tlsKey);
    admission_.tls = tls_.get();
  }
  admission_.handshakeTimeoutMs = options.handshakeTimeoutMs;
  if (!options.workerUser.empty()) workerUser_ = resolveWorkerUser(options.workerUser);
  int err = uv_loop_init(&loop_);
  if (err != 0) uvFail("uv_loop_init", err);
}

Supervisor::~Supervisor() {
  // run() leaves no handle open; a failed bind may leave the listener to close here.
  if (listenerOpen_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    listenerOpen_ = false;
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

void Supervisor::bindListener() {
  if (isActivationListen(options_.listen)) {
    adoptActivatedSocket();
    finishListening();
    return;
  }
  if (systemdPassedSockets()) {
    MQD_LOG(Warn, "systemd passed this server a socket, but --listen is %s, which it binds "
            "itself: give it --listen systemd (MQD_LISTEN=systemd in the service's settings) "
            "to serve systemd's socket", options_.listen.c_str());
  }
  int err;
  if (endpoint_.kind == Endpoint::Kind::Unix) {
    if (endpoint_.path.size() >= sizeof(sockaddr_un::sun_path)) {
      throw std::runtime_error("--listen unix:" + endpoint_.path + ": path too long");
    }
    if (socketDirectory(endpoint_.path) == privateSocketDirectory()) {
      // The default socket without XDG_RUNTIME_DIR: its private directory, made or checked
      // as the clients do (SocketTrust.h).
      try {
        preparePrivateDirectory(privateSocketDirectory());
      } catch (const SocketDistrusted& e) {
        throw std::runtime_error("--listen unix:" + endpoint_.path + ": " + e.what());
      }
    }
    removeStaleSocket(endpoint_.path);
    uv_pipe_init(&loop_, &listener_.pipe, 0);
    listenerOpen_ = true;
    mode_t old = ::umask(0177);  // the socket is created 0600: only this user may connect
    err = uv_pipe_bind(&listener_.pipe, endpoint_.path.c_str());
    ::umask(old);
    if (err != 0) uvFail("--listen " + endpoint_.toString(), err);
    ::chmod(endpoint_.path.c_str(), 0600);
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    std::string port = std::to_string(endpoint_.port);
    int gai = ::getaddrinfo(endpoint_.host.c_str(), port.c_str(), &hints, &found);
    if (gai != 0) {
      throw std::runtime_error("--listen " + endpoint_.toString() + ": " + gai_strerror(gai));
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
    checkExposure(found->ai_addr, "--listen " + endpoint_.toString());
    uv_tcp_init(&loop_, &listener_.tcp);
    listenerOpen_ = true;
    err = uv_tcp_bind(&listener_.tcp, found->ai_addr, 0);
    if (err != 0) uvFail("--listen " + endpoint_.toString(), err);
  }
  finishListening();
}

void Supervisor::finishListening() {
  std::string bound = endpoint_.kind == Endpoint::Kind::Unix
                          ? endpoint_.toString()
                          : boundTcpName(endpoint_, &listener_.tcp);
  listener_.pipe.data = this;  // same offset for both members
  int err = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), kBacklog, connectionCallback);
  if (err != 0) uvFail("listen on " + bound, err);
  MQD_LOG(Info, "listening on %s%s", bound.c_str(), activated_ ? " (socket from systemd)" : "");
  if (!options_.readyFile.empty()) writeReadyFile(bound);
}

void Supervisor::checkExposure(const sockaddr* address, const std::string& what) {
  if (isLoopbackAddress(address)) return;
  if (admission_.token.empty()) {
    throw std::runtime_error(
        what + ": not a loopback address, so other machines could connect and make this server "
        "load its DLLs and read target memory through them; give it --token-file FILE "
        "(a private file holding a shared secret), or listen on tcp:127.0.0.1:PORT or a "
        "unix: socket");
  }
  if (!endpoint_.tls) {
    MQD_LOG(Warn, "%s: the token and every message cross the network in clear text; consider "
            "tls:HOST:PORT with --tls-cert and --tls-key", what.c_str());
  }
}

void Supervisor::adoptActivatedSocket() {
  ActivatedSocket s = takeActivatedSocket();
  bool tls = endpoint_.tls;
  endpoint_ = s.endpoint;
  endpoint_.tls = tls;
  std::string what = "--listen " + options_.listen + " (" + endpoint_.toString() + ")";
  int err;
  if (endpoint_.kind == Endpoint::Kind::Unix) {
    if (tls) {
      throw std::runtime_error(what + ": TLS needs a TCP socket; use --listen systemd for a "
                               "unix socket");
    }
    uv_pipe_init(&loop_, &listener_.pipe, 0);
    listenerOpen_ = true;
    err = uv_pipe_open(&listener_.pipe, s.fd);
  } else {
    checkExposure(reinterpret_cast<const sockaddr*>(&s.address), what);
    uv_tcp_init(&loop_, &listener_.tcp);
    listenerOpen_ = true;
    err = uv_tcp_open(&listener_.tcp, s.fd);
  }
  if (err != 0) uvFail(what, err);
  s.fd.release();  // the listener's now: closed with it
  activated_ = true;
}

void Supervisor::startStdio() {
  // The protocol gets private copies of stdin and stdout; fd 0 becomes /dev/null and fd 1 a
  // copy of stderr, so that nothing else in this process or its workers (a vendor DLL's
  // printf) can write into the stream.
  int in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  int out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0) {
    throw std::runtime_error(std::string("--stdio: standard input or output is closed: ") +
                             std::strerror(errno));
  }
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::close(null);
  }
  ::dup2(2, 1);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    ::close(in);
    ::close(out);
    throw std::runtime_error(std::string("--stdio: socketpair: ") + std::strerror(errno));
  }
  relay_ = std::make_unique<StdioRelay>(&loop_, in, out, pair[0], [this]() {
    // The worker's side ended and everything it sent is written: the server is done.
    relay_->close();
    beginShutdown(0);
  });
  childCloses_ = {in, out, pair[0]};
  MQD_LOG(Debug, "serving one connection on stdin/stdout");
  forkWorker(pair[1]);
  ::close(pair[1]);
  childCloses_.clear();
  if (workers_.empty()) {
    relay_->close();
    throw std::runtime_error("--stdio: could not start the worker");
  }
  relay_->start();
}

void Supervisor::writeReadyFile(const std::string& bound) {
  std::string line = bound + "\n";
  try {
    ReplacementFile file(options_.readyFile, 0644);  // an address, not a secret
    file.write(line.data(), line.size());
    file.commit();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("--ready-file ") + e.what());
  }
}

int Supervisor::run() {
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sigchld_);
  uv_timer_init(&loop_, &killTimer_);
  sigint_.data = sigterm_.data = sigchld_.data = killTimer_.data = this;
  uv_signal_start(&sigint_, signalCallback, SIGINT);
  uv_signal_start(&sigterm_, signalCallback, SIGTERM);
  uv_signal_start(&sigchld_, signalCallback, SIGCHLD);
  try {
    if (options_.stdio) {
      startStdio();
    } else {
      bindListener();
    }
  } catch (...) {
    closeLoopHandles();
    throw;
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  MQD_LOG(Info, "stopped after %llu connection(s)", static_cast<unsigned long long>(connections_));
  return 0;
}

void Supervisor::connectionCallback(uv_stream_t* server, int status) {
  static_cast<Supervisor*>(server->data)->onConnection(status);
}

void Supervisor::onConnection(int status) {
  if (status != 0) {
    MQD_LOG(Warn, "accept failed: %s", uv_strerror(status));
    return;
  }
  uv_stream_t* client;
  if (endpoint_.kind == Endpoint::Kind::Unix) {
    auto* pipe = new uv_pipe_t;
    uv_pipe_init(&loop_, pipe, 0);
    client = reinterpret_cast<uv_stream_t*>(pipe);
  } else {
    auto* tcp = new uv_tcp_t;
    uv_tcp_init(&loop_, tcp);
    client = reinterpret_cast<uv_stream_t*>(tcp);
  }
  uv_os_fd_t fd = -1;
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&listener_), client) == 0 && !stopping_ &&
      uv_fileno(reinterpret_cast<uv_handle_t*>(client), &fd) == 0) {
    // Every MQD call is a small request and a small reply: Nagle's algorithm would hold each
    // one back for the peer's delayed ACK.
    if (client->type == UV_TCP) uv_tcp_nodelay(reinterpret_cast<uv_tcp_t*>(client), 1);
    if (sessions_ < static_cast<size_t>(options_.maxSessions)) {
      forkWorker(fd);
    } else if (refusers_ < kMaxRefusers) {
      MQD_LOG(Warn, "connection refused: %zu session(s) already (--max-sessions %d)", sessions_,
              options_.maxSessions);
      forkWorker(fd, "the server already serves " + std::to_string(sessions_) +
                             " session(s), its limit (--max-sessions " +
                             std::to_string(options_.maxSessions) + "); try again later");
    } else {
      MQD_LOG(Warn, "connection closed unanswered: at --max-sessions %d with %zu refusals "
              "still lingering", options_.maxSessions, refusers_);
    }
  }
  // The worker owns its duplicate of the connection; the supervisor keeps none.
  uv_close(reinterpret_cast<uv_handle_t*>(client), [](uv_handle_t* h) {
    if (h->type == UV_NAMED_PIPE) {
      delete reinterpret_cast<uv_pipe_t*>(h);
    } else {
      delete reinterpret_cast<uv_tcp_t*>(h);
    }
  });
}

void Supervisor::forkWorker(int fd, const std::string& refusal) {
  bool refuser = !refusal.empty();
  uint64_t connection = ++connections_;
  SessionBoard::Slot* slot = refuser ? nullptr : board_.claim(connection);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    MQD_LOG(Error, "cannot fork a worker: %s", std::strerror(errno));
    return;
  }
  if (pid == 0) {
    // Child. First become the worker user, before anything else (and before
    // PR_SET_PDEATHSIG, which a change of credentials clears).
    if (workerUser_) {
      try {
        dropPrivileges(*workerUser_);
      } catch (const std::exception& e) {
        MQD_LOG(Error, "worker: %s", e.what());
        ::_exit(1);
      }
    }
    // Drop everything that belongs to the supervisor's event loop: its signal
    // handlers would feed the parent's signal pipe, and its descriptors are not ours.
    for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) ::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    uv_os_fd_t listenerFd;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(&listener_), &listenerFd) == 0) {
      ::close(listenerFd);
    }
    ::close(uv_backend_fd(&loop_));
    for (int other : childCloses_) ::close(other);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    int worker = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    logSetComponent("mqd-proxy-worker");
    if (refuser) {
      refuseInPlain(worker, MQD_PROXY_ERR_SESSION_REFUSED, refusal, kRefusalLingerMs);
      ::_exit(0);
    }
    if (slot != nullptr) slot->worker = ::getpid();
    WorkerConfig config{&dlls_,   options_.stateDir, options_.blockSize,
                        board_,   slot,              &admission_,
                        uint64_t(options_.maxMessageMiB) << 17,  // MiB in 8-byte words
                        options_.idleTimeoutS,
                        options_.dllCpuLimitS,
                        options_.shutdownGraceMs,
                        options_.nodeMemory,
                        options_.readAround,
                        options_.lookupDiscovery};
    ::_exit(leakCheckedStatus(runWorker(worker, config)));
  }
  if (slot != nullptr) slot->worker = pid;
  workers_[pid] = Worker{pid, connection, slot, refuser};
  ++(refuser ? refusers_ : sessions_);
  MQD_LOG(Info, "connection %llu: %s %d", static_cast<unsigned long long>(connection),
          refuser ? "refusing child" : "worker", static_cast<int>(pid));
}

void Supervisor::signalCallback(uv_signal_t* handle, int signum) {
  auto* self = static_cast<Supervisor*>(handle->data);
  if (signum == SIGCHLD) {
    self->reapWorkers();
  } else {
    self->beginShutdown(signum);
  }
}

void Supervisor::reapWorkers() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    auto it = workers_.find(pid);
    if (it == workers_.end()) continue;
    unsigned long long connection = it->second.connection;
    --(it->second.refuser ? refusers_ : sessions_);
    std::string how;
    if (WIFSIGNALED(status)) {
      int sig = WTERMSIG(status);
      bool expected = stopping_ && (sig == SIGTERM || sig == SIGKILL);
      how = signalName(sig);
      const SessionBoard::Slot* slot = it->second.slot;
      if (expected || slot == nullptr) {
        logf(expected ? LogLevel::Info : LogLevel::Warn, "connection %llu: worker %d killed by %s",
             connection, static_cast<int>(pid), how.c_str());
      } else {
        // A crash of the vendor DLL (or of the worker): the other sessions go on.
        MQD_LOG(Error, "connection %llu: worker %d killed by %s in vendor DLL %s during %s",
                connection, static_cast<int>(pid), how.c_str(),
                slot->dll[0] ? slot->dll : "(none loaded)",
                slot->lastCall[0] ? slot->lastCall : "(no call yet)");
      }
    } else {
      how = "exit " + std::to_string(WEXITSTATUS(status));
      MQD_LOG(Info, "connection %llu: worker %d exited with status %d", connection,
              static_cast<int>(pid), WEXITSTATUS(status));
    }
    if (options_.stdio && it->second.slot != nullptr) {
      // The one connection's post-mortem, for the shim at the other end of ssh (it cannot
      // ask a server that is about to exit): a fixed, tab-separated line on stderr
      // (StdioTransport.h reads it).
      const SessionBoard::Slot* slot = it->second.slot;
      std::string line = std::string(kStdioPostMortemPrefix) + "\t" +
                         std::to_string(static_cast<int>(pid)) + "\t" + how + "\t" +
                         slot->lastCall + "\t" + slot->dll + "\n";
      ssize_t ignored = ::write(2, line.data(), line.size());
      (void)ignored;
    }
    if (SessionBoard::Slot* slot = it->second.slot) {
      board_.end(slot, how);
      MQD_LOG(Info, "session summary: %s", SessionBoard::summary(*slot).c_str());
    }
    workers_.erase(it);
  }
  finishIfIdle();
}

void Supervisor::beginShutdown(int signum) {
  if (stopping_) return;
  stopping_ = true;
  if (signum != 0) {
    MQD_LOG(Info, "%s: shutting down (%zu worker(s))", signalName(signum).c_str(),
            workers_.size());
  }
  if (relay_) relay_->close();
  if (listenerOpen_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    listenerOpen_ = false;
    // A socket systemd passed is systemd's, file included: it listens again for the next start.
    if (endpoint_.kind == Endpoint::Kind::Unix && !activated_) ::unlink(endpoint_.path.c_str());
  }
  if (!options_.readyFile.empty()) ::unlink(options_.readyFile.c_str());
  // After a signal, workers are asked to end; after a --stdio connection ended, the worker is
  // ending by itself and only gets the grace period.
  if (signum != 0) {
    for (auto& [pid, worker] : workers_) ::kill(pid, SIGTERM);
  }
  uv_timer_start(&killTimer_, killTimerCallback, static_cast<uint64_t>(options_.shutdownGraceMs),
                 0);
  finishIfIdle();
}

void Supervisor::killTimerCallback(uv_timer_t* timer) {
  auto* self = static_cast<Supervisor*>(timer->data);
  for (auto& [pid, worker] : self->workers_) {
    MQD_LOG(Warn, "worker %d ignored SIGTERM; sending SIGKILL", static_cast<int>(pid));
    ::kill(pid, SIGKILL);
  }
}

void Supervisor::finishIfIdle() {
  if (!stopping_ || !workers_.empty() || finished_) return;
  finished_ = true;
  closeLoopHandles();
}

void Supervisor::closeLoopHandles() {
  for (uv_handle_t* h : {reinterpret_cast<uv_handle_t*>(&sigint_),
                         reinterpret_cast<uv_handle_t*>(&sigterm_),
                         reinterpret_cast<uv_handle_t*>(&sigchld_),
                         reinterpret_cast<uv_handle_t*>(&killTimer_)}) {
    uv_close(h, nullptr);
  }
}

}  // namespace mqd::server
