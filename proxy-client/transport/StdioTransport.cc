#include "StdioTransport.h"

#include <signal.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "ChildProgram.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "SlurmJob.h"

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

[[noreturn]] void unreachable(const std::string& why) {
  throw ProxyError(MQD_PROXY_ERR_UNREACHABLE, why);
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

std::vector<std::string> stdioCommand(const Endpoint& endpoint, const ClientConfig& config) {
  return endpoint.kind == Endpoint::Kind::Slurm ? srunCommand(endpoint, config)
                                                : sshCommand(endpoint, config);
}

kj::Own<StdioProcess> StdioProcess::start(kj::AsyncIoContext& io, const Endpoint& endpoint,
                                          const ClientConfig& config,
                                          kj::Own<kj::AsyncIoStream>* stream) {
  std::vector<std::string> args = stdioCommand(endpoint, config);
  bool slurm = endpoint.kind == Endpoint::Kind::Slurm;
  std::string launcher = endpoint.launcherName();
  std::string program = findProgram(args[0]);
  if (program.empty()) {
    unreachable(endpoint.toString() + ": cannot find the " + launcher + " program \"" +
                args[0] + "\"" +
                (slurm ? " (Slurm's client, slurm-client: run where the job's srun runs)"
                       : " (install openssh-client, or set MQD_PROXY_SSH)"));
  }
  // The stream to the launcher and its stderr.
  FdPair pair, err;
  if (!pair.socketPair() || !err.pipe()) {
    unreachable(endpoint.toString() + ": cannot create pipes for " + launcher + ": " +
                std::strerror(errno));
  }
  StartedProgram started;
  try {
    started = startProgram(program, args, pair.end[1], pair.end[1], err.end[1]);
  } catch (const std::runtime_error& e) {
    unreachable(endpoint.toString() + ": cannot start " + launcher + ": " + e.what());
  }
  // The child's ends: closed here, so that each ends when the launcher's copies do.
  pair.end[1] = nullptr;
  err.end[1] = nullptr;
  auto flags = kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
               kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC;
  *stream = io.lowLevelProvider->wrapSocketFd(pair.end[0].release(), flags);
  MQD_LOG(Debug, "%s %d started for %s", launcher.c_str(), started.pid,
          endpoint.toString().c_str());
  return kj::Own<StdioProcess>(
      new StdioProcess(io, started.pid, kj::mv(started.pidfd), err.end[0].release(), launcher,
                       endpoint.host),
      kj::_::HeapDisposer<StdioProcess>::instance);
}

StdioProcess::StdioProcess(kj::AsyncIoContext& io, int pid, kj::AutoCloseFd pidfd,
                           int stderrFd, std::string launcher, std::string host)
    : io_(io),
      pid_(pid),
      pidfd_(kj::mv(pidfd)),
      launcher_(std::move(launcher)),
      host_(std::move(host)),
      stderr_(io.lowLevelProvider->wrapInputFd(
          stderrFd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                        kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC)),
      ended_(readStderr().fork()) {}

StdioProcess::~StdioProcess() {
  if (pidfd_.get() >= 0) ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGTERM, nullptr, 0);
}

kj::Promise<void> StdioProcess::readStderr() {
  return stderr_->tryRead(buffer_, 1, sizeof buffer_)
      .then(
          [this](size_t n) -> kj::Promise<void> {
            if (n == 0) {
              takeLines(true);
              MQD_LOG(Debug, "%s %d closed its stderr", launcher_.c_str(), pid_);
              return kj::READY_NOW;
            }
            partial_.append(buffer_, n);
            takeLines(false);
            return readStderr();
          },
          [this](kj::Exception&&) { takeLines(true); });
}

void StdioProcess::takeLines(bool flush) {
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
    // The remote server's own warnings and errors are shown like the shim's; the launcher's
    // chatter and the server's informational lines only at info.
    bool serious = line.find("] warn: ") != std::string::npos ||
                   line.find("] error: ") != std::string::npos;
    LogLevel level = serious ? LogLevel::Warn : LogLevel::Info;
    if (logEnabled(level)) {
      logf(level, "%s %s: %s", launcher_.c_str(), host_.c_str(), line.c_str());
    }
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

kj::Promise<void> StdioProcess::whenEnded(std::chrono::milliseconds limit) {
  return io_.provider->getTimer().timeoutAfter(limit.count() * kj::MILLISECONDS,
                                               ended_.addBranch())
      .catch_([](kj::Exception&&) {});
}

std::string StdioProcess::stderrTail() const {
  std::string out;
  for (const std::string& line : tail_) out += (out.empty() ? "" : "; ") + line;
  return out;
}

}  // namespace mqd::client
