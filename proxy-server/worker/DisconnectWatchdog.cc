#include "DisconnectWatchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "Log.h"

namespace mqd::server {
namespace {

// poll() that resumes after EINTR with the time left. Returns poll's result.
int pollFor(pollfd* fds, nfds_t n, int timeoutMs) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    int rc = ::poll(fds, n, timeoutMs);
    if (rc >= 0 || errno != EINTR) return rc;
    if (timeoutMs >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      timeoutMs = left.count() > 0 ? static_cast<int>(left.count()) : 0;
    }
  }
}

// A text field of the session board (NUL-terminated unless it fills its array).
std::string boardText(const char* field, size_t size) {
  return std::string(field, ::strnlen(field, size));
}

}  // namespace

DisconnectWatchdog::DisconnectWatchdog(int connectionFd, std::chrono::milliseconds grace,
                                       kj::Maybe<const SessionBoard::Slot&> slot)
    : grace_(grace), slot_(slot) {
  int duplicate = ::fcntl(connectionFd, F_DUPFD_CLOEXEC, 3);
  if (duplicate < 0) throw std::system_error(errno, std::generic_category(), "dup");
  connectionFd_ = kj::AutoCloseFd(duplicate);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  stopRead_ = kj::AutoCloseFd(fds[0]);
  stopWrite_ = kj::AutoCloseFd(fds[1]);
  thread_ = std::thread([this] { watch(); });
}

DisconnectWatchdog::~DisconnectWatchdog() {
  char byte = 0;
  while (::write(stopWrite_.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void DisconnectWatchdog::watch() {
  pollfd fds[2] = {{stopRead_.get(), POLLIN, 0}, {connectionFd_.get(), POLLRDHUP, 0}};
  // Until the peer hangs up (POLLHUP and POLLERR are always reported too).
  for (;;) {
    if (pollFor(fds, 2, -1) < 0) return;  // cannot watch: leave the worker alone
    if (fds[0].revents != 0) return;
    if ((fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) break;
  }
  // The peer is gone: an idle worker ends within the grace period and stops us.
  if (pollFor(fds, 1, static_cast<int>(grace_.count())) != 0) return;
  std::string dll = "(none loaded)";
  std::string call = "(no call yet)";
  KJ_IF_MAYBE(slot, slot_) {
    if (slot->dll[0] != '\0') dll = boardText(slot->dll, sizeof slot->dll);
    if (slot->lastCall[0] != '\0') call = boardText(slot->lastCall, sizeof slot->lastCall);
  }
  MQD_LOG(Warn,
          "the debugger disconnected, and %lld ms later this worker is still busy in vendor DLL "
          "%s during %s: killing it",
          static_cast<long long>(grace_.count()), dll.c_str(), call.c_str());
  ::kill(::getpid(), SIGKILL);
}

}  // namespace mqd::server
