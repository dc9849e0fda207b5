// mqd-proxy-server as a process: its command line, its socket, one worker per connection,
// shutdown on SIGINT/SIGTERM.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "ServerProcess.h"
#include "TestPaths.h"

using namespace mqd::harness;
using namespace std::chrono_literals;

namespace {

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

struct Run {
  int status;
  std::string output;  // stdout and stderr
};

Run run(const std::string& args) {
  std::string cmd = std::string(mqd::test::kServer) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Run r{-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int connectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

size_t childCount(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  size_t n = 0;
  pid_t c;
  while (in >> c) ++n;
  return n;
}


}  // namespace

TEST_CASE("command line: --help, --version, usage errors, missing DLLs") {
  Run help = run("--help");
  CHECK(help.status == 0);
  for (const char* option : {"--dll", "--listen", "--log-level", "--log-file", "--ready-file",
                             "--shutdown-grace-ms", "--version", "--help", "--token-file",
                             "--tls-cert", "--tls-key", "--max-sessions", "--max-message-mib",
                             "--idle-timeout", "--handshake-timeout-ms", "--worker-user"}) {
    INFO(option);
    CHECK(help.output.find(option) != std::string::npos);
  }
  Run version = run("--version");
  CHECK(version.status == 0);
  CHECK(version.output.find("mqd-proxy-server") == 0);
  Run unknown = run("--bogus");
  CHECK(unknown.status == 2);
  CHECK(unknown.output.find("unknown option \"--bogus\"") != std::string::npos);
  Run missing = run("--dll /no/such/libdbg.so --listen unix:" + (scratch() / "x.sock"));
  CHECK(missing.status == 1);
  CHECK(missing.output.find("/no/such/libdbg.so") != std::string::npos);
  Run badListen = run("--listen tcp:nowhere --dll " + std::string(mqd::test::kTestDll3));
  CHECK(badListen.status == 2);
}

TEST_CASE("unix socket: created 0600, removed on SIGTERM; exit status 0") {
  std::string sock = scratch() / "life.sock";
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + sock, "--dll",
                                            mqd::test::kTestDll3, "--log-file",
                                            scratch() / "life.log"});
  struct stat st;
  REQUIRE(stat(sock.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  int status = server.stop(SIGTERM);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(stat(sock.c_str(), &st) != 0);
  CHECK(fileText(scratch() / "life.log").find("shutting down") != std::string::npos);
}

TEST_CASE("unix socket: a stale socket is replaced, a live one is not stolen") {
  std::string sock = scratch() / "stale.sock";
  {
    ServerProcess first(mqd::test::kServer, {"--listen", "unix:" + sock, "--dll",
                                             mqd::test::kTestDll3});
    first.stop(SIGKILL);  // leaves the socket file behind
  }
  struct stat st;
  REQUIRE(stat(sock.c_str(), &st) == 0);
  ServerProcess second(mqd::test::kServer, {"--listen", "unix:" + sock, "--dll",
                                            mqd::test::kTestDll3});
  Run third = run("--listen unix:" + sock + " --dll " + mqd::test::kTestDll3);
  CHECK(third.status == 1);
  CHECK(third.output.find("another server is listening") != std::string::npos);
}

TEST_CASE("one worker process per connection; workers end with their connection") {
  std::string sock = scratch() / "workers.sock";
  // Connections that never say hello: their workers must outlive the test's waits, however
  // slowly a loaded machine forks them (the default handshake timeout is 5 s).
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + sock, "--dll",
                                            mqd::test::kTestDll3, "--log-file",
                                            scratch() / "workers.log",
                                            "--handshake-timeout-ms", "600000"});
  int a = connectUnix(sock);
  int b = connectUnix(sock);
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(waitFor([&] { return childCount(server.pid()) == 2; }));
  close(a);
  CHECK(waitFor([&] { return childCount(server.pid()) == 1; }));
  close(b);
  CHECK(waitFor([&] { return childCount(server.pid()) == 0; }));
  std::string log = fileText(scratch() / "workers.log");
  CHECK(log.find("connection 1: worker") != std::string::npos);
  CHECK(log.find("connection 2: worker") != std::string::npos);
  CHECK(log.find("exited with status 0") != std::string::npos);
}

TEST_CASE("SIGINT with connected clients: workers are ended and the server exits cleanly") {
  std::string sock = scratch() / "busy.sock";
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + sock, "--dll",
                                            mqd::test::kTestDll3, "--shutdown-grace-ms", "120000"});
  int a = connectUnix(sock);
  REQUIRE(waitFor([&] { return childCount(server.pid()) == 1; }));
  // The workers end at SIGTERM, long before the grace: a server that waited it out would be
  // killed by stop() after kLoadedMachineSlack, and not have exited.
  int status = server.stop(SIGINT);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  char byte;
  CHECK(read(a, &byte, 1) == 0);  // the worker closed the connection
  close(a);
}

TEST_CASE("tcp: port 0 binds a free port and reports it") {
  ServerProcess server(mqd::test::kServer, {"--listen", "tcp:127.0.0.1:0", "--dll",
                                            mqd::test::kTestDll3});
  CHECK(server.endpoint().rfind("tcp:127.0.0.1:", 0) == 0);
  CHECK(server.endpoint() != "tcp:127.0.0.1:0");
}
