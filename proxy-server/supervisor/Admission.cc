#include "Admission.h"

#include <kj/debug.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <cstring>

#include "ConstantTime.h"
#include "Handshake.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "TlsIdentity.h"

namespace mqd::server {
namespace {

constexpr int kLingerMs = 1000;

// Waits until `fd` is readable; false after `timeoutMs` or on error.
bool waitReadable(int fd, int timeoutMs) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left < 0) left = 0;
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

// Reads and discards until the peer closes.
kj::Promise<void> drain(kj::AsyncIoStream& stream, kj::ArrayPtr<kj::byte> buffer) {
  return stream.tryRead(buffer.begin(), 1, buffer.size())
      .then([&stream, buffer](size_t n) -> kj::Promise<void> {
        if (n == 0) return kj::READY_NOW;
        return drain(stream, buffer);
      });
}

// Tells the client why over `stream` (inside TLS when there is TLS), then lingers like
// refuseInPlain.
void refuseOnStream(kj::AsyncIoContext& io, kj::AsyncIoStream& stream, int code,
                    const std::string& reason) {
  MQD_LOG(Warn, "connection refused: %s", reason.c_str());
  std::string line = refusalLine(code, reason);
  auto buffer = kj::heapArray<kj::byte>(4096);
  auto refused = stream.write(line.data(), line.size()).then([&stream, &buffer]() {
    stream.shutdownWrite();
    return drain(stream, buffer);
  });
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() {
                io.provider->getTimer()
                    .timeoutAfter(kLingerMs * kj::MILLISECONDS, kj::mv(refused))
                    .wait(io.waitScope);
              })) {
    MQD_LOG(Debug, "while refusing: %s", e->getDescription().cStr());
  }
}

}  // namespace

void refuseInPlain(int fd, int code, const std::string& reason, int lingerMs) {
  MQD_LOG(Warn, "connection refused: %s", reason.c_str());
  std::string line = refusalLine(code, reason);
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lingerMs);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (!waitReadable(fd, static_cast<int>(left))) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
  }
  ::close(fd);
}

kj::Own<kj::AsyncIoStream> admit(kj::AsyncIoContext& io, int fd, const AdmissionPolicy& policy) {
  // The first byte tells a TLS client from a plain one; peek at it without consuming it.
  if (!waitReadable(fd, policy.handshakeTimeoutMs)) {
    MQD_LOG(Warn, "connection dropped: no handshake within %d ms (--handshake-timeout-ms)",
            policy.handshakeTimeoutMs);
    ::close(fd);
    return kj::Own<kj::AsyncIoStream>();
  }
  unsigned char first = 0;
  ssize_t peeked;
  do {
    peeked = ::recv(fd, &first, 1, MSG_PEEK);
  } while (peeked < 0 && errno == EINTR);
  if (peeked <= 0) {
    MQD_LOG(Info, "connection closed by the client before its handshake");
    ::close(fd);
    return kj::Own<kj::AsyncIoStream>();
  }
  if (policy.tls != nullptr && first != kTlsHandshakeRecord) {
    refuseInPlain(fd, MQD_PROXY_ERR_TLS,
                  "this server requires TLS: connect with tls:HOST:PORT (MQD_PROXY_SERVER) "
                  "instead of tcp:HOST:PORT",
                  kLingerMs);
    return kj::Own<kj::AsyncIoStream>();
  }

  kj::Own<kj::AsyncIoStream> stream =
      io.lowLevelProvider->wrapSocketFd(fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
  kj::Duration deadline = policy.handshakeTimeoutMs * kj::MILLISECONDS;
  if (policy.tls != nullptr) {
    auto context = policy.tls->serverContext(io.provider->getTimer(), deadline);
    kj::Maybe<kj::Own<kj::AsyncIoStream>> secured;
    KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() {
                  secured = context->wrapServer(kj::mv(stream)).wait(io.waitScope);
                })) {
      MQD_LOG(Warn, "connection dropped: TLS handshake failed: %s", e->getDescription().cStr());
      return kj::Own<kj::AsyncIoStream>();
    }
    stream = KJ_ASSERT_NONNULL(kj::mv(secured)).attach(kj::mv(context));
  }

  Hello hello;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() {
                hello = io.provider->getTimer()
                            .timeoutAfter(deadline, readHello(*stream))
                            .wait(io.waitScope);
              })) {
    MQD_LOG(Warn, "connection dropped: no complete handshake within %d ms (%s)",
            policy.handshakeTimeoutMs, e->getDescription().cStr());
    return kj::Own<kj::AsyncIoStream>();
  }
  if (!hello.valid) {
    refuseOnStream(io, *stream, hello.code, hello.problem);
    return kj::Own<kj::AsyncIoStream>();
  }
  if (!policy.token.empty()) {
    bool match = constantTimeEqual(hello.token, policy.token);
    std::fill(hello.token.begin(), hello.token.end(), '\0');
    if (!match) {
      refuseOnStream(io, *stream, MQD_PROXY_ERR_AUTH_FAILED,
                     hello.token.empty()
                         ? "authentication failed: this server requires a token (set "
                           "MQD_PROXY_TOKEN_FILE to a file holding it)"
                         : "authentication failed: wrong token (MQD_PROXY_TOKEN_FILE)");
      return kj::Own<kj::AsyncIoStream>();
    }
  }
  std::string ok = acceptLine();
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() {
                stream->write(ok.data(), ok.size()).wait(io.waitScope);
              })) {
    MQD_LOG(Info, "connection closed during the handshake: %s", e->getDescription().cStr());
    return kj::Own<kj::AsyncIoStream>();
  }
  return stream;
}

}  // namespace mqd::server
