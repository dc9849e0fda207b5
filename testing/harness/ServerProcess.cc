#include "ServerProcess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace mqd::harness {

ServerProcess::ServerProcess(const std::string& binary, const std::vector<std::string>& args,
                             bool withStateDir, const std::vector<std::string>& emulator) {
  char tmpl[] = "/tmp/mqd-ready-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  ::unlink(tmpl);
  readyFile_ = tmpl;

  std::vector<std::string> argv = emulator;
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  bool hasStateDir = !withStateDir;
  for (const auto& a : args) hasStateDir = hasStateDir || a == "--state-dir";
  if (!hasStateDir) {
    argv.push_back("--state-dir");
    argv.push_back(stateDir_.path());
  }
  argv.push_back("--ready-file");
  argv.push_back(readyFile_);
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // A test that dies without its destructors (a sanitizer abort, a crash) must not leave
    // its servers behind: they would hold ctest's output pipe open until the test times out.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::execvp(cargs[0], cargs.data());
    std::perror("exec mqd-proxy-server");
    ::_exit(127);
  }
  // A loaded machine's slack, an emulated server's (qemu-user) too.
  auto deadline = std::chrono::steady_clock::now() + kLoadedMachineSlack;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream ready(readyFile_);
    std::string line;
    if (ready && std::getline(ready, line) && !line.empty()) {
      endpoint_ = line;
      return;
    }
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("mqd-proxy-server exited before it was ready");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop(SIGKILL);
  throw std::runtime_error("mqd-proxy-server did not become ready");
}

int ServerProcess::stop(int signal) {
  if (pid_ <= 0) return 0;
  ::kill(pid_, signal);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + kLoadedMachineSlack;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  ::unlink(readyFile_.c_str());
  return status;
}

ServerProcess::~ServerProcess() { stop(SIGTERM); }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mqd-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::string cmd = "rm -rf '" + path_ + "'";
  if (std::system(cmd.c_str()) != 0) {
    // best effort
  }
}

StderrCapture::StderrCapture() {
  char tmpl[] = "/tmp/mqd-stderr-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  file_ = tmpl;
  std::fflush(stderr);
  saved_ = ::dup(2);
  ::dup2(fd, 2);
  ::close(fd);
}

StderrCapture::~StderrCapture() {
  std::fflush(stderr);
  ::dup2(saved_, 2);
  ::close(saved_);
  ::unlink(file_.c_str());
}

std::string StderrCapture::text() const {
  std::fflush(stderr);
  std::ifstream in(file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<pid_t> childrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child;
  while (in >> child) out.push_back(child);
  return out;
}

bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

pid_t killWorkerBetweenCalls(pid_t server, const std::string& shimLog) {
  std::vector<pid_t> workers = childrenOnceThere(server, 1);
  if (workers.size() != 1) {
    throw std::runtime_error("the server has " + std::to_string(workers.size()) +
                             " workers, not one");
  }
  // proxy-client/transport/Connection.cc, markBroken, for a connection the server closed.
  const std::string lost = "unusable: the server closed the connection";
  auto seen = [&] {
    std::string log = fileText(shimLog);
    size_t n = 0;
    for (size_t at = log.find(lost); at != std::string::npos; at = log.find(lost, at + 1)) ++n;
    return n;
  };
  size_t before = seen();
  ::kill(workers[0], SIGKILL);
  if (!waitFor([&] { return seen() > before; })) {
    throw std::runtime_error("the shim never logged its connection closed in " + shimLog +
                             " (MQD_PROXY_LOG=info when its session opened?)");
  }
  return workers[0];
}

std::vector<pid_t> childrenOnceThere(pid_t pid, size_t count) {
  std::vector<pid_t> children;
  waitFor([&] {
    children = childrenOf(pid);
    return children.size() == count;
  });
  return children;
}

}  // namespace mqd::harness
