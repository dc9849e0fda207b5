#include "ChildProgram.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace mqd::client {
namespace {

// In the grandchild, between fork and exec: async-signal-safe calls only.
[[noreturn]] void execProgram(const char* program, char* const* argv, int in, int out, int err,
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
  // (Each dup2 clears close-on-exec on its copy; the originals close at exec.)
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
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

bool take(FdPair& pair, int made, const int fds[2]) {
  if (made != 0) return false;
  pair.end[0] = kj::AutoCloseFd(fds[0]);
  pair.end[1] = kj::AutoCloseFd(fds[1]);
  return true;
}

}  // namespace

bool FdPair::pipe() {
  int fds[2];
  return take(*this, ::pipe2(fds, O_CLOEXEC), fds);
}

bool FdPair::socketPair() {
  int fds[2];
  return take(*this, ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), fds);
}

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

StartedProgram startProgram(const std::string& program, const std::vector<std::string>& args,
                            int in, int out, int err) {
  std::vector<std::string> copies = args;
  std::vector<char*> argv;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The intermediate's report of the program's pid, and exec's errno.
  FdPair pidPipe, execPipe;
  if (!pidPipe.pipe() || !execPipe.pipe()) {
    throw std::runtime_error(std::string("cannot create pipes: ") + std::strerror(errno));
  }
  pid_t child = ::fork();
  if (child == 0) {
    // The intermediate: forks the program, reports its pid and exits (no destructor runs), so
    // that the program is not the debugger's child.
    pid_t grandchild = ::fork();
    if (grandchild == 0) {
      execProgram(program.c_str(), argv.data(), in, out, err, execPipe.end[1]);
    }
    ssize_t ignored = ::write(pidPipe.end[1], &grandchild, sizeof grandchild);
    (void)ignored;
    ::_exit(grandchild < 0 ? 1 : 0);
  }
  int forkError = errno;
  // The children's ends: closed here, so that each pipe ends when the children's copies do.
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
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(forkError));
  if (pid <= 0) throw std::runtime_error("fork failed");
  if (execError != 0) throw std::runtime_error(program + ": " + std::strerror(execError));
  StartedProgram started;
  started.pid = pid;
  // (glibc 2.36's <sys/pidfd.h> lacks C++ linkage: the system calls are made directly.)
  started.pidfd = kj::AutoCloseFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  return started;
}

ProgramOutput runProgram(const std::vector<std::string>& args, std::chrono::milliseconds limit) {
  std::string program = findProgram(args.at(0));
  if (program.empty()) throw std::runtime_error("cannot find " + args[0] + " on PATH");
  FdPair out, err;
  if (!out.pipe() || !err.pipe()) {
    throw std::runtime_error(std::string("cannot create pipes: ") + std::strerror(errno));
  }
  kj::AutoCloseFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null.get() < 0) throw std::runtime_error(std::string("/dev/null: ") + std::strerror(errno));
  StartedProgram started = startProgram(program, args, null.get(), out.end[1], err.end[1]);
  out.end[1] = nullptr;
  err.end[1] = nullptr;

  ProgramOutput result;
  std::string* into[2] = {&result.out, &result.err};
  bool open[2] = {true, true};
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (open[0] || open[1]) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (started.pidfd.get() >= 0) {
        ::syscall(SYS_pidfd_send_signal, started.pidfd.get(), SIGTERM, nullptr, 0);
      }
      throw std::runtime_error(args[0] + " did not end within " +
                               std::to_string(limit.count()) + " ms");
    }
    struct pollfd fds[2];
    int count = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      fds[count].fd = i == 0 ? out.end[0].get() : err.end[0].get();
      fds[count].events = POLLIN;
      fds[count].revents = 0;
      which[count++] = i;
    }
    int ready = ::poll(fds, static_cast<nfds_t>(count), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    for (int k = 0; k < count && ready > 0; ++k) {
      if (fds[k].revents == 0) continue;
      char buffer[4096];
      ssize_t n = ::read(fds[k].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open[which[k]] = false;
      } else if (into[which[k]]->size() < (1u << 20)) {  // a bound on what is kept
        into[which[k]]->append(buffer, static_cast<size_t>(n));
      }
    }
  }
  return result;
}

}  // namespace mqd::client
