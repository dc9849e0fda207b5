#include "SocketTrust.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "RegularFile.h"

namespace mqd {
namespace {

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// "nobody (uid 65534), who is neither you nor root", for refusals.
std::string stranger(uid_t uid) {
  return describeUser(uid) + ", who is neither you nor root";
}

// What to set when `uid` runs a server the user may mean after all.
std::string ifTrusted(uid_t uid) {
  return "If that user's server is the one you mean, set MQD_PROXY_SERVER_UID=" +
         std::to_string(uid) + "; else point MQD_PROXY_SERVER at a socket in a directory only "
                               "you can write";
}

}  // namespace

bool TrustedUsers::trusts(uid_t uid) const {
  return uid == self || uid == 0 || (also >= 0 && static_cast<long long>(uid) == also);
}

std::string socketDirectory(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void checkSocketPath(const std::string& path, const TrustedUsers& trusted) {
  struct stat socket;
  if (::lstat(path.c_str(), &socket) != 0) return;  // connect() will say why
  const std::string where = "unix:" + path + ": ";
  std::string dir = socketDirectory(path);
  struct stat parent;
  if (::stat(dir.c_str(), &parent) != 0) {
    throw SocketDistrusted(where + "cannot check its directory " + dir + ": " +
                           std::strerror(errno));
  }
  if (!trusted.trusts(parent.st_uid)) {
    throw SocketDistrusted(where + "its directory " + dir + " belongs to " +
                           stranger(parent.st_uid) +
                           ", who could put any server there; nothing was sent to it. " +
                           "Use a socket in a directory you or root own (MQD_PROXY_SERVER)");
  }
  if ((parent.st_mode & 022) != 0 && (parent.st_mode & S_ISVTX) == 0) {
    throw SocketDistrusted(where + "its directory " + dir + " (mode " + octal(parent.st_mode) +
                           ") lets group or others replace the socket, and is not sticky; "
                           "nothing was sent to it. Use a socket in a directory only you can "
                           "write (MQD_PROXY_SERVER), or chmod go-w " + dir);
  }
  if (S_ISLNK(socket.st_mode)) {
    throw SocketDistrusted(where + "a symbolic link, not the socket itself; nothing was sent "
                                   "to it. Name the socket in MQD_PROXY_SERVER");
  }
  if (!S_ISSOCK(socket.st_mode)) {
    throw SocketDistrusted(where + fileKind(socket.st_mode) + ", not a socket");
  }
  if (!trusted.trusts(socket.st_uid)) {
    throw SocketDistrusted(where + "the socket belongs to " + stranger(socket.st_uid) +
                           "; nothing was sent to it. " + ifTrusted(socket.st_uid));
  }
}

void checkSocketPeer(int fd, const std::string& path, const TrustedUsers& trusted) {
  const std::string where = "unix:" + path + ": ";
  struct ucred peer {};
  socklen_t length = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
    throw SocketDistrusted(where + "cannot tell who runs the server there (SO_PEERCRED: " +
                           std::strerror(errno) + "); nothing was sent to it");
  }
  if (!trusted.trusts(peer.uid)) {
    throw SocketDistrusted(where + "the server there (process " + std::to_string(peer.pid) +
                           ") runs as " + stranger(peer.uid) + "; nothing was sent to it. " +
                           ifTrusted(peer.uid));
  }
}

void preparePrivateDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw SocketDistrusted(dir + ": cannot create the private socket directory: " +
                           std::strerror(errno));
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    throw SocketDistrusted(dir + ": " + std::strerror(errno));
  }
  const std::string fix = " (set XDG_RUNTIME_DIR to your runtime directory, or name another "
                          "socket: MQD_PROXY_SERVER, --listen)";
  if (!S_ISDIR(st.st_mode)) {
    throw SocketDistrusted(dir + ": the private socket directory is " + fileKind(st.st_mode) +
                           ", not a directory: someone else may have put it there; remove it" +
                           fix);
  }
  if (st.st_uid != ::geteuid()) {
    throw SocketDistrusted(dir + ": the private socket directory belongs to " +
                           describeUser(st.st_uid) +
                           ": another user made it, perhaps to put a server of their own in "
                           "its place; nothing was sent to it. Have it removed" + fix);
  }
  if ((st.st_mode & 07777) != 0700) {
    throw SocketDistrusted(dir + ": the private socket directory has mode " + octal(st.st_mode) +
                           ", not 0700 (chmod 700 " + dir + ")");
  }
}

}  // namespace mqd
