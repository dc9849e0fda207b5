#include "SocketActivation.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mqd::server {
namespace {

constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START

[[noreturn]] void failActivation(const std::string& why) {
  throw std::runtime_error("--listen systemd: " + why);
}

// A decimal environment value, or -1 when unset or not a number.
long environmentNumber(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0) return -1;
  return value;
}

int socketOption(int fd, int option) {
  int value = 0;
  socklen_t size = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, option, &value, &size) != 0) {
    failActivation(std::string("descriptor 3: ") + std::strerror(errno));
  }
  return value;
}

// tcp:HOST:PORT for an IPv4 or IPv6 address and a port in network byte order.
Endpoint tcpEndpoint(int family, const void* address, uint16_t networkPort) {
  char host[INET6_ADDRSTRLEN] = "";
  ::inet_ntop(family, address, host, sizeof host);
  Endpoint e;
  e.kind = Endpoint::Kind::Tcp;
  e.host = host;
  e.port = ntohs(networkPort);
  return e;
}

}  // namespace

bool systemdPassedSockets() {
  return environmentNumber("LISTEN_PID") == static_cast<long>(::getpid()) &&
         environmentNumber("LISTEN_FDS") > 0;
}

ActivatedSocket takeActivatedSocket() {
  if (std::getenv("LISTEN_FDS") == nullptr) {
    failActivation("no socket from systemd (LISTEN_FDS is not set): start the server through its socket "
         "unit (systemctl start mqd-proxy-server.socket), or give --listen an address");
  }
  long pid = environmentNumber("LISTEN_PID");
  if (pid != static_cast<long>(::getpid())) {
    failActivation("the sockets in LISTEN_FDS are for process " +
         std::string(std::getenv("LISTEN_PID") ? std::getenv("LISTEN_PID") : "(none)") +
         ", not this one (" + std::to_string(::getpid()) + ")");
  }
  long count = environmentNumber("LISTEN_FDS");
  if (count != 1) {
    failActivation("systemd passed " + std::string(std::getenv("LISTEN_FDS")) +
         " socket(s); the server serves exactly one: give the socket unit one ListenStream=");
  }
  struct stat st;
  if (::fstat(kFirstFd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    failActivation("descriptor 3 is not a socket");
  }
  ActivatedSocket s;
  s.fd = kj::AutoCloseFd(kFirstFd);
  if (socketOption(s.fd, SO_TYPE) != SOCK_STREAM) {
    failActivation("the socket is not a stream socket: the socket unit needs ListenStream=");
  }
  if (socketOption(s.fd, SO_ACCEPTCONN) == 0) {
    failActivation("the socket is not listening (one connection per start, Accept=yes?): the socket unit "
         "needs Accept=no");
  }
  socklen_t size = sizeof s.address;
  std::memset(&s.address, 0, sizeof s.address);
  if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&s.address), &size) != 0) {
    failActivation(std::string("getsockname: ") + std::strerror(errno));
  }
  switch (s.address.ss_family) {
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&s.address);
      if (size <= offsetof(sockaddr_un, sun_path) || un->sun_path[0] == '\0') {
        failActivation("the socket is unnamed or in the abstract namespace; the server serves a unix "
             "socket with a path, or TCP");
      }
      s.endpoint.kind = Endpoint::Kind::Unix;
      s.endpoint.path = un->sun_path;
      break;
    }
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&s.address);
      s.endpoint = tcpEndpoint(AF_INET, &in->sin_addr, in->sin_port);
      break;
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&s.address);
      s.endpoint = tcpEndpoint(AF_INET6, &in6->sin6_addr, in6->sin6_port);
      break;
    }
    default:
      failActivation("the socket is of address family " + std::to_string(s.address.ss_family) +
           "; the server serves unix sockets and TCP");
  }
  ::fcntl(s.fd, F_SETFD, FD_CLOEXEC);
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  return s;
}

}  // namespace mqd::server
