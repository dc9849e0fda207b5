#include "SshTransport.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "Log.h"
#include "ProxyErrors.h"

extern char** environ;

namespace mqd::client {
namespace {

// The program ssh runs on the remote host. The path was checked by Endpoint::parse to hold no
// character a shell interprets; it is quoted anyway, except for a leading ~/ which the remote
// shell must expand.
std::string remoteCommand(const Endpoint& endpoint, const ClientConfig& config) {
  std::string program = "mqd-proxy-server";
  if (!endpoint.path.empty()) {
    if (endpoint.path.rfind("~/", 0) == 0) {
      program = "~/'" + endpoint.path.substr(2) + "'";
    } else {
      program = "'" + endpoint.path + "'";
    }
  }
  return program + " --stdio --log-level " + logLevelName(config.logLevel);
}

// `name` itself when it has a slash, else its first executable match in $PATH; "" if none.
std::string findProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

[[noreturn]] void unreachable(const std::string& why) {
  throw ProxyError(MQD_PROXY_ERR_UNREACHABLE, why);
}

// A pipe or a socket pair: [0] and [1] are its two ends, each closed when let go.
struct FdPair {
  kj::AutoCloseFd end[2];
  // From a pipe2()/socketpair() result; false, nothing owned, when the call failed.
  bool take(int made, const int fds[2]) {
    if (made != 0) return false;
    end[0] = kj::AutoCloseFd(fds[0]);
    end[1] = kj::AutoCloseFd(fds[1]);
    return true;
  }
  bool pipe() {
    int fds[2];
    return take(::pipe2(fds, O_CLOEXEC), fds);
  }
  bool socketPair() {
    int fds[2];
    return take(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), fds);
  }
};

// In the grandchild, between fork and exec: async-signal-safe calls only.
[[noreturn]] void execSsh(const char* program, char* const* argv, int streamFd, int stderrFd,
                          int execErrorFd) {
  ::setsid();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  ::dup2(streamFd, 0);
  ::dup2(streamFd, 1);
  ::dup2(stderrFd, 2);
  // Everything else closes at exec (execErrorFd too: its EOF tells the parent exec worked).
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 4096; ++fd) {
      if (fd != execErrorFd) ::close(fd);
    }
  }
  ::execve(program, argv, environ);
  int error = errno;
  ssize_t ignored = ::write(execErrorFd, &error, sizeof error);
  (void)ignored;
  ::_exit(127);
}

ssize_t readFully(int fd, void* buffer, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, static_cast<char*>(buffer) + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

std::vector<std::string> sshCommand(const Endpoint& endpoint, const ClientConfig& config) {
  long long seconds = (config.timeout.count() + 999) / 1000;
  std::vector<std::string> args = {config.ssh, "-T", "-o", "BatchMode=yes",
                                   "-o", "ConnectTimeout=" + std::to_string(seconds)};
  if (endpoint.port != 0) {
    args.push_back("-p");
    args.push_back(std::to_string(endpoint.port));
  }
  if (!endpoint.user.empty()) {
    args.push_back("-l");
    args.push_back(endpoint.user);
  }
  std::istringstream options(config.sshOptions);
  std::string word;
  while (options >> word) args.push_back(word);
  args.push_back("--");
  args.push_back(endpoint.host);
  args.push_back(remoteCommand(endpoint, config));
  return args;
}

kj::Own<SshProcess> SshProcess::start(kj::AsyncIoContext& io, const Endpoint& endpoint,
                                      const ClientConfig& config,
                                      kj::Own<kj::AsyncIoStream>* stream) {
  std::vector<std::string> args = sshCommand(endpoint, config);
  std::string program = findProgram(config.ssh);
  if (program.empty()) {
    unreachable(endpoint.toString() + ": cannot find the ssh program \"" + config.ssh +
                "\" (install openssh-client, or set MQD_PROXY_SSH)");
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The stream to ssh, its stderr, the intermediate's report of ssh's pid, and exec's errno.
  FdPair pair, err, pidPipe, execPipe;
  if (!pair.socketPair() || !err.pipe() || !pidPipe.pipe() || !execPipe.pipe()) {
    unreachable(endpoint.toString() + ": cannot create pipes for ssh: " + std::strerror(errno));
  }
  pid_t child = ::fork();
  if (child == 0) {
    // The intermediate: forks ssh, reports its pid and exits (no destructor runs), so that ssh
    // is not the debugger's child.
    pid_t grandchild = ::fork();
    if (grandchild == 0) {
      execSsh(program.c_str(), argv.data(), pair.end[1], err.end[1], execPipe.end[1]);
    }
    ssize_t ignored = ::write(pidPipe.end[1], &grandchild, sizeof grandchild);
    (void)ignored;
    ::_exit(grandchild < 0 ? 1 : 0);
  }
  int forkError = errno;
  // The child's ends: closed here, so that each pipe ends when the child's copies do.
  pair.end[1] = nullptr;
  err.end[1] = nullptr;
  pidPipe.end[1] = nullptr;
  execPipe.end[1] = nullptr;
  pid_t pid = -1;
  int execError = 0;
  if (child > 0) {
    if (readFully(pidPipe.end[0], &pid, sizeof pid) != sizeof pid) pid = -1;
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (pid > 0 &&
        readFully(execPipe.end[0], &execError, sizeof execError) != sizeof execError) {
      execError = 0;  // EOF: exec succeeded
    }
  }
  if (child < 0 || pid <= 0 || execError != 0) {
    std::string why = child < 0   ? std::string("fork: ") + std::strerror(forkError)
                      : pid <= 0  ? std::string("fork failed")
                                  : program + ": " + std::strerror(execError);
    unreachable(endpoint.toString() + ": cannot start ssh: " + why);
  }
  // (glibc 2.36's <sys/pidfd.h> lacks C++ linkage: the system calls are made directly.)
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 if ssh already ended (then there is nothing to end)
  auto flags = kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
               kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC;
  *stream = io.lowLevelProvider->wrapSocketFd(pair.end[0].release(), flags);
  MQD_LOG(Debug, "ssh %d started for %s", static_cast<int>(pid), endpoint.toString().c_str());
  return kj::Own<SshProcess>(new SshProcess(io, pid, kj::AutoCloseFd(pidfd),
                                            err.end[0].release(), endpoint.host),
                             kj::_::HeapDisposer<SshProcess>::instance);
}

SshProcess::SshProcess(kj::AsyncIoContext& io, int pid, kj::AutoCloseFd pidfd, int stderrFd,
                       std::string host)
    : io_(io),
      pid_(pid),
      pidfd_(kj::mv(pidfd)),
      host_(std::move(host)),
      stderr_(io.lowLevelProvider->wrapInputFd(
          stderrFd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                        kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC)),
      ended_(readStderr().fork()) {}

SshProcess::~SshProcess() {
  if (pidfd_.get() >= 0) ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGTERM, nullptr, 0);
}

kj::Promise<void> SshProcess::readStderr() {
  return stderr_->tryRead(buffer_, 1, sizeof buffer_)
      .then(
          [this](size_t n) -> kj::Promise<void> {
            if (n == 0) {
              takeLines(true);
              MQD_LOG(Debug, "ssh %d closed its stderr", pid_);
              return kj::READY_NOW;
            }
            partial_.append(buffer_, n);
            takeLines(false);
            return readStderr();
          },
          [this](kj::Exception&&) { takeLines(true); });
}

void SshProcess::takeLines(bool flush) {
  size_t start = 0;
  for (;;) {
    size_t end = partial_.find('\n', start);
    if (end == std::string::npos) break;
    std::string line = partial_.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.rfind(std::string(kStdioPostMortemPrefix) + "\t", 0) == 0) {
      std::vector<std::string> f;
      std::stringstream fields(line);
      std::string field;
      while (std::getline(fields, field, '\t')) f.push_back(field);
      if (f.size() >= 5) {
        workerEnd_.known = true;
        workerEnd_.ended = true;
        workerEnd_.worker = std::atoi(f[1].c_str());
        workerEnd_.how = f[2];
        workerEnd_.lastCall = f[3];
        workerEnd_.dll = f[4];
      }
      continue;
    }
    // The remote server's own warnings and errors are shown like the shim's; ssh's chatter
    // and the server's informational lines only at info.
    bool serious = line.find("] warn: ") != std::string::npos ||
                   line.find("] error: ") != std::string::npos;
    LogLevel level = serious ? LogLevel::Warn : LogLevel::Info;
    if (logEnabled(level)) logf(level, "ssh %s: %s", host_.c_str(), line.c_str());
    tail_.push_back(line);
    if (tail_.size() > kTailLines) tail_.pop_front();
  }
  partial_.erase(0, start);
  if (partial_.size() > 4096) partial_.erase(0, partial_.size() - 4096);
  if (flush && !partial_.empty()) {
    partial_ += '\n';
    takeLines(false);
  }
}

kj::Promise<void> SshProcess::whenEnded(std::chrono::milliseconds limit) {
  return io_.provider->getTimer().timeoutAfter(limit.count() * kj::MILLISECONDS,
                                               ended_.addBranch())
      .catch_([](kj::Exception&&) {});
}

std::string SshProcess::stderrTail() const {
  std::string out;
  for (const std::string& line : tail_) out += (out.empty() ? "" : "; ") + line;
  return out;
}

}  // namespace mqd::client
