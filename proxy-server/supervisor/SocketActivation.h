// SocketActivation: the listening socket systemd hands to `mqd-proxy-server --listen systemd`
// (packaging/systemd/mqd-proxy-server.socket), by the protocol of sd_listen_fds(3): the socket
// is descriptor 3, LISTEN_PID names this process and LISTEN_FDS is the number of sockets.
//
// Contract of takeActivatedSocket():
//   - exactly one socket, a SOCK_STREAM one that is already listening (the unit's Accept=no),
//     bound to a TCP address or a unix socket path; anything else throws std::runtime_error
//     saying what is wrong and what to change;
//   - on success the descriptor is close-on-exec and LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES
//     are removed from the environment, so that no worker or vendor DLL sees them;
//   - the caller owns the descriptor (closed if it is not released). systemd owns the socket
//     file of a unix socket: the server must not remove it.
#pragma once

#include <sys/socket.h>

#include <kj/io.h>

#include <string>

#include "Endpoint.h"

namespace mqd::server {

struct ActivatedSocket {
  kj::AutoCloseFd fd;       // closed unless the caller releases it to its listener
  Endpoint endpoint;        // what it is bound to: unix:PATH or tcp:HOST:PORT
  sockaddr_storage address;  // the bound address itself (TCP: for the loopback rule)
};

// The --listen values that ask for systemd's socket (plain, or TLS on a TCP socket).
inline bool isActivationListen(const std::string& listen) {
  return listen == "systemd" || listen == "tls:systemd";
}

ActivatedSocket takeActivatedSocket();

// Whether systemd passed this process sockets (LISTEN_PID is ours, LISTEN_FDS > 0): a server
// that was given --listen ADDRESS warns then, since it will not serve them.
bool systemdPassedSockets();

}  // namespace mqd::server
