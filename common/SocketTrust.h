// SocketTrust: whether a unix socket, and the server listening on it, may be trusted with a
// debugger's token and target memory (docs/security.md, "The client authenticates a unix server"
// explains the rule); and the private directory the default socket lives in when there is no
// $XDG_RUNTIME_DIR.
//
// A unix socket is only as safe as its directory: whoever may create names there can put a
// server of their own at the path before the real one starts, or between two of its runs, and
// the client is the one who connects (the server's mode 0600 cannot help). So a client sends
// nothing (the hello carries the token) unless
//   * the directory holding the socket belongs to a trusted user and is not writable by group
//     or others, unless it is sticky (like /tmp: others may add names there, not replace ours);
//   * the socket file is a socket, not a symbolic link, and belongs to a trusted user;
//   * the process that listens on it (SO_PEERCRED) runs as a trusted user;
// where the trusted users are this process's effective user, root, and the one configured
// (MQD_PROXY_SERVER_UID, e.g. a shared server's service account). The directory's own
// ancestors are not checked.
//
// The private directory (privateSocketDirectory(), Endpoint.h) is created by whichever of the
// client and the server comes first, mode 0700, and accepted by both only as a real directory
// (not a link) of their own user with mode 0700: one planted by someone else is refused,
// naming its owner, never used.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

namespace mqd {

// A socket, its directory or its server that may not be trusted; what() says whose it is and
// what to set (MQD_PROXY_SERVER, MQD_PROXY_SERVER_UID, XDG_RUNTIME_DIR).
class SocketDistrusted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The users a client trusts with a unix socket: itself (the effective user), root, and
// `also` (-1: no one else).
struct TrustedUsers {
  uid_t self;
  long long also = -1;
  bool trusts(uid_t uid) const;
};

// Checks the socket at `path` and its directory (see above), before connecting. Nothing to
// check when there is no socket there (connecting then fails: no such file). Throws
// SocketDistrusted.
void checkSocketPath(const std::string& path, const TrustedUsers& trusted);

// Checks the user the listening process runs as (SO_PEERCRED of the connected socket `fd`).
// Throws SocketDistrusted, also when the credentials cannot be read.
void checkSocketPeer(int fd, const std::string& path, const TrustedUsers& trusted);

// Creates `dir` (mode 0700) when it is missing, and accepts it only as a directory, not a
// link, that belongs to the effective user and has mode 0700. Throws SocketDistrusted.
void preparePrivateDirectory(const std::string& dir);

// The directory part of a socket path ("." for a bare name).
std::string socketDirectory(const std::string& path);

}  // namespace mqd
