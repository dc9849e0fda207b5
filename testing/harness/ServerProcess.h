// ServerProcess: a real mqd-proxy-server started for a test, stopped (SIGTERM, then SIGKILL)
// when the object goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace mqd::harness {

// A fresh private directory under $TMPDIR (or /tmp), removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class ServerProcess {
 public:
  // Starts `binary` with `args` plus --ready-file, waits (up to 20 s) until it listens, and
  // returns. Throws std::runtime_error if it exits or does not become ready. `endpoint()`
  // is the address it bound (with the real port for tcp:...:0). Unless `args` name one, the
  // server keeps its learned state in a private directory (stateDir()), never in $HOME.
  // withStateDir false: start a program that takes no --state-dir (mqd-relay). `emulator`
  // prefixes the command (qemu-<arch> -L SYSROOT for a foreign build of the server).
  ServerProcess(const std::string& binary, const std::vector<std::string>& args,
                bool withStateDir = true, const std::vector<std::string>& emulator = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  const std::string& stateDir() const { return stateDir_.path(); }

  // Sends `signal` and waits for the exit; returns the wait status.
  int stop(int signal);

 private:
  pid_t pid_ = -1;
  TempDir stateDir_;
  std::string readyFile_;
  std::string endpoint_;
};


// Redirects this process's stderr (fd 2) into a file while alive; text() returns what was
// written so far.
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture();
  std::string text() const;

 private:
  int saved_ = -1;
  std::string file_;
};

// The whole content of a file ("" when it cannot be read).
std::string fileText(const std::string& path);

// The child processes of `pid` (a server's workers), from /proc.
std::vector<pid_t> childrenOf(pid_t pid);

// How long a test waits for what must happen (a process to start or end, a line in a log)
// before it fails: the slack of a loaded machine (two tests at once, a sanitized copy, a CPU
// hog beside them). Only a failure waits this long; what happens sooner ends the wait.
constexpr std::chrono::seconds kLoadedMachineSlack{60};

// Polls `condition` until it holds or `limit` has passed; its last answer.
bool waitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds limit = kLoadedMachineSlack);

// Kills the server's one worker (SIGKILL) between two calls of the debugger, and returns once
// the shim has seen its connection close, as a debugger's next call a moment later finds it
// (not racing the shim's event loop, which a loaded machine delays): by the shim's log, where
// MQD_PROXY_LOG=info when its session opened writes it. Returns the worker's pid; throws when
// the server has not one worker, or the shim never says so within kLoadedMachineSlack.
pid_t killWorkerBetweenCalls(pid_t server, const std::string& shimLog);

// childrenOf(pid) once it counts `count` (a worker that ended leaves when its server has
// reaped it, at the server's own pace), or as it is after kLoadedMachineSlack.
std::vector<pid_t> childrenOnceThere(pid_t pid, size_t count);

}  // namespace mqd::harness
