// ServerProcess: a real mqd-proxy-server started for a test, stopped (SIGTERM, then SIGKILL)
// when the object goes away.
#pragma once

#include <sys/types.h>

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

}  // namespace mqd::harness
