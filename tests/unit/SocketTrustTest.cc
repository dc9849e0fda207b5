// SocketTrust: which unix sockets a client trusts (their directory, file and listening
// process), and the private directory of the default socket. What another user can do is
// tested with a second user in tests/integration/LocalUserTest.cc; here, the rules.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "Endpoint.h"
#include "ServerProcess.h"
#include "SocketTrust.h"

using namespace mqd;
using mqd::harness::TempDir;

namespace {

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const SocketDistrusted& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A listening unix socket at `path` (closed by the caller).
int listenAt(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(fd, 1) == 0);
  return fd;
}

}  // namespace

TEST_CASE("SocketTrust: the default socket is never a name of its own in /tmp") {
  std::string saved = getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "";
  unsetenv("XDG_RUNTIME_DIR");
  std::string dir = "/tmp/mqd-proxy-" + std::to_string(geteuid());
  CHECK(privateSocketDirectory() == dir);
  CHECK(defaultSocketPath() == dir + "/mqd-proxy.sock");
  setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
  CHECK(defaultSocketPath() == "/run/user/7/mqd-proxy.sock");
  if (saved.empty()) {
    unsetenv("XDG_RUNTIME_DIR");
  } else {
    setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  }
  CHECK(socketDirectory("/a/b.sock") == "/a");
  CHECK(socketDirectory("/b.sock") == "/");
  CHECK(socketDirectory("b.sock") == ".");
}

TEST_CASE("SocketTrust: the private directory is made 0700, and only such a one is taken") {
  TempDir tmp;
  std::string dir = tmp / "private";
  preparePrivateDirectory(dir);
  struct stat st;
  REQUIRE(lstat(dir.c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 07777) == 0700);
  preparePrivateDirectory(dir);  // again: it is ours
  chmod(dir.c_str(), 0755);
  CHECK(contains(refusal([&] { preparePrivateDirectory(dir); }), "has mode 0755, not 0700"));
  std::string link = tmp / "link";
  REQUIRE(symlink(dir.c_str(), link.c_str()) == 0);
  CHECK(contains(refusal([&] { preparePrivateDirectory(link); }),
                 "is a symbolic link, not a directory"));
}

TEST_CASE("SocketTrust: a socket is trusted in a directory others cannot write, or a sticky one; "
          "never through a link") {
  TempDir tmp;
  TrustedUsers me{geteuid()};
  std::string path = tmp / "s.sock";
  checkSocketPath(path, me);  // nothing there: connect() will say so
  int fd = listenAt(path);
  checkSocketPath(path, me);
  chmod(tmp.path().c_str(), 0777);
  CHECK(contains(refusal([&] { checkSocketPath(path, me); }),
                 "(mode 0777) lets group or others replace the socket, and is not sticky"));
  chmod(tmp.path().c_str(), 01777);
  checkSocketPath(path, me);
  chmod(tmp.path().c_str(), 0700);
  std::string link = tmp / "link.sock";
  REQUIRE(symlink(path.c_str(), link.c_str()) == 0);
  CHECK(contains(refusal([&] { checkSocketPath(link, me); }), "a symbolic link, not the socket"));
  std::string file = tmp / "file.sock";
  close(open(file.c_str(), O_CREAT | O_WRONLY, 0600));
  CHECK(contains(refusal([&] { checkSocketPath(file, me); }), "a regular file, not a socket"));
  // Only the users trusted: another owner is refused, naming the setting that trusts it.
  if (geteuid() != 0) {
    TrustedUsers strict{geteuid() + 1};
    CHECK(contains(refusal([&] { checkSocketPath(path, strict); }), "MQD_PROXY_SERVER_UID="));
  }
  close(fd);
}

TEST_CASE("SocketTrust: the listening process must run as a trusted user (SO_PEERCRED)") {
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  checkSocketPeer(pair[0], "x.sock", TrustedUsers{geteuid()});
  CHECK(TrustedUsers{1234}.trusts(0));  // root is always trusted
  CHECK(TrustedUsers{1234, 99}.trusts(99));
  CHECK(!TrustedUsers{1234}.trusts(99));
  close(pair[0]);
  close(pair[1]);
  // Not a socket: the credentials cannot be read, and that is a refusal too.
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(contains(refusal([&] { checkSocketPeer(null, "x", TrustedUsers{1}); }),
                 "cannot tell who runs the server there"));
  close(null);
}
