#include "DllOutput.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace mqd::server {
namespace {

// Room for what a DLL prints between two drains; a DLL that prints more loses the excess
// instead of blocking the worker (the write end is non-blocking).
constexpr int kPipeBytes = 1 << 20;

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("capturing DLL output: ") + what + ": " +
                           std::strerror(errno));
}

}  // namespace

DllOutput::DllOutput() {
  std::fflush(stdout);
  std::fflush(stderr);
  originalStderr_ = kj::AutoCloseFd(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
  if (originalStderr_.get() < 0) fail("dup stderr");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("pipe");
  readEnd_ = kj::AutoCloseFd(fds[0]);
  kj::AutoCloseFd writeEnd(fds[1]);  // fds 1 and 2 keep the pipe's write end open
  ::fcntl(writeEnd, F_SETPIPE_SZ, kPipeBytes);  // best effort
  ::fcntl(readEnd_, F_SETFL, O_NONBLOCK);
  ::fcntl(writeEnd, F_SETFL, O_NONBLOCK);
  if (::dup2(writeEnd, STDOUT_FILENO) < 0 || ::dup2(writeEnd, STDERR_FILENO) < 0) fail("dup2");
}

DllOutput::~DllOutput() {
  if (originalStderr_.get() >= 0) ::dup2(originalStderr_, STDERR_FILENO);
}

std::string DllOutput::drain() {
  std::fflush(stdout);
  std::fflush(stderr);
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(readEnd_, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN: nothing more for now
  }
  return text;
}

}  // namespace mqd::server
