// Endpoint: where a server listens and a shim connects, as written by users.
//
//   unix:/absolute/or/relative/path     a unix-domain stream socket
//   tcp:HOST:PORT                       TCP; HOST is a name, an IPv4 address or [IPv6]
//
// The same syntax is used by `mqd-proxy-server --listen` and by MQD_PROXY_SERVER.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mqd {

struct Endpoint {
  enum class Kind { Unix, Tcp };
  Kind kind = Kind::Unix;
  std::string path;  // Unix
  std::string host;  // Tcp, without brackets
  uint16_t port = 0; // Tcp

  // Parses `text`; throws std::invalid_argument with a message that quotes the input and
  // shows the accepted forms.
  static Endpoint parse(const std::string& text);

  // The canonical user-facing form, e.g. "tcp:[::1]:4000".
  std::string toString() const;

  // The form kj's network parser accepts ("unix:/p", "host:port", "[::1]:port").
  std::string toKjAddress() const;

  bool isLoopback() const;  // unix sockets count as loopback
};

// Default unix socket for a server started without --listen and a shim without
// MQD_PROXY_SERVER: $XDG_RUNTIME_DIR/mqd-proxy.sock, else /tmp/mqd-proxy-$UID.sock.
std::string defaultSocketPath();

}  // namespace mqd
