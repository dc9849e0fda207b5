// What another local user, or a clumsy one, can do to an mqd-proxy user on the same machine
// (README.md, "Security model"): plant links, files and FIFOs where the product writes or reads,
// and squat the unix socket a client connects to. The attacker is `nobody`, its part run through
// setpriv; the victim is this test, as root (as in CI), or `daemon` where the victim must be an
// ordinary user. Without root only what needs no second user runs.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "RunCommand.h"
#include "ServerProcess.h"
#include "ShimRig.h"
#include "TestPaths.h"
#include "mqd_proxy.h"

using namespace mqd::harness;
using namespace std::chrono_literals;

namespace {

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string writeFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

// `text` as one word for sh.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A local user other than the one running the test.
struct User {
  std::string name;
  uid_t uid;
  gid_t gid;
};

User user(const char* name) {
  passwd* pw = getpwnam(name);
  REQUIRE(pw != nullptr);
  return {name, pw->pw_uid, pw->pw_gid};
}

// Runs `shell` (sh -c) as `u`, with its own uid and group only.
Command as(const User& u, const std::string& shell) {
  return run("setpriv --reuid=" + std::to_string(u.uid) + " --regid=" + std::to_string(u.gid) +
             " --clear-groups sh -c " + quoted(shell));
}

bool root() {
  if (geteuid() == 0) return true;
  MESSAGE("not root: a second local user is only available as root (as in CI)");
  return false;
}

// A directory both users may write, without the sticky bit: a shared project directory.
const TempDir& sharedDir() {
  static TempDir dir;
  chmod(dir.path().c_str(), 0777);
  return dir;
}

// The shim's settings for the next Rig.
void useServer(const std::string& endpoint) {
  setenv("MQD_PROXY_SERVER", endpoint.c_str(), 1);
  setenv("MQD_PROXY_DLL", mqd::test::kTestDll3, 1);
  setenv("MQD_PROXY_LOG_FILE", (scratch() / "shim.log").c_str(), 1);
  for (const char* v : {"MQD_PROXY_TIMEOUT", "MQD_PROXY_TOKEN_FILE", "MQD_PROXY_RECORD"}) {
    unsetenv(v);
  }
}

// A full session through the shim: set-up and one refresh; the operations seen.
int fullSession() {
  Rig rig;
  rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
  int rc = rig.dll().setup_image(rig.i(), rig.d->imageCallbacks());
  INFO(rig.errorText(rc));
  CHECK(rc == mqs_ok);
  if (rc != mqs_ok) return 0;
  char* m = nullptr;
  REQUIRE(rig.dll().image_has_queues(rig.i(), &m) == mqs_ok);
  REQUIRE(rig.dll().setup_process(rig.p(), rig.d->processCallbacks()) == mqs_ok);
  REQUIRE(rig.dll().process_has_queues(rig.p(), &m) == mqs_ok);
  return rig.refresh();
}

struct stat lstatOf(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st;
}

// A file the attacker wants overwritten through a link: it must keep its content.
std::string victimFile(const std::string& name) {
  return writeFile(scratch() / name, "precious\n", 0644);
}

// Runs `command` with a deadline; 124 means it was still running (blocked) at the deadline.
Command bounded(const std::string& command, int seconds = 10) {
  return run("timeout -s KILL " + std::to_string(seconds) + " " + command);
}

double secondsOf(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("MQD_PROXY_RECORD: a planted link or file is replaced, never written through; "
          "the recording is private (0600)") {
  if (!root()) return;
  User nobody = user("nobody");
  std::string victim = victimFile("record-victim");
  std::string link = sharedDir() / "link.mqdrec";
  std::string planted = sharedDir() / "planted.mqdrec";
  std::string existing = writeFile(sharedDir() / "existing.mqdrec", "old recording\n", 0644);
  Command plant = as(nobody, "ln -s " + victim + " " + link + " && touch " + planted +
                                 " && chmod 666 " + planted);
  INFO(plant.output);
  REQUIRE(plant.status == 0);
  ServerProcess s(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "record.sock"),
                                       "--dll", mqd::test::kTestDll3});
  for (const std::string& path : {link, planted, existing}) {
    INFO(path);
    useServer(s.endpoint());
    setenv("MQD_PROXY_RECORD", path.c_str(), 1);
    CHECK(fullSession() == 5 * 3 * 3);
    unsetenv("MQD_PROXY_RECORD");
    struct stat st = lstatOf(path);
    CHECK(S_ISREG(st.st_mode));
    CHECK(st.st_uid == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(fileText(path).rfind("MQD-REC\n", 0) == 0);
  }
  CHECK(fileText(victim) == "precious\n");
  CHECK(as(nobody, "cat " + planted + " >/dev/null").status != 0);
  // Nothing else is left in the directory: no temporary file stays behind.
  Command listing = run("ls -A " + sharedDir().path());
  CHECK(listing.output == "existing.mqdrec\nlink.mqdrec\nplanted.mqdrec\n");
}

TEST_CASE("--ready-file and log files: a planted link or someone else's file is never "
          "written through") {
  if (!root()) return;
  User nobody = user("nobody");
  std::string dll = mqd::test::kTestDll3;
  // --ready-file writes a temporary file beside its target: a link planted at the name it
  // used (READY.tmp) must not redirect it.
  std::string victim = victimFile("ready-victim");
  std::string ready = sharedDir() / "ready";
  REQUIRE(as(nobody, "ln -s " + victim + " " + ready + ".tmp").status == 0);
  std::string sock = scratch() / "ready.sock";
  // (The server removes its ready file when it stops: look at it while it runs.)
  Command started = bounded(
      "sh -c " + quoted(std::string(mqd::test::kServer) + " --listen unix:" + sock + " --dll " +
                        dll + " --state-dir none --ready-file " + ready +
                        " & pid=$!; for i in $(seq 100); do [ -s " + ready +
                        " ] && break; sleep 0.1; done; stat -c '%F %u %a' " + ready + "; cat " +
                        ready + "; kill $pid; wait $pid"),
      30);
  INFO(started.output);
  CHECK(started.status == 0);
  CHECK(contains(started.output, "regular file 0 644\nunix:" + sock + "\n"));
  CHECK(fileText(victim) == "precious\n");

  // --log-file: a link is refused, and so is a file another user made for us to fill.
  std::string logVictim = victimFile("log-victim");
  std::string linkedLog = sharedDir() / "linked.log";
  std::string plantedLog = sharedDir() / "planted.log";
  REQUIRE(as(nobody, "ln -s " + logVictim + " " + linkedLog + " && touch " + plantedLog +
                         " && chmod 666 " + plantedLog)
              .status == 0);
  for (const std::string& log : {linkedLog, plantedLog}) {
    INFO(log);
    Command r = bounded(std::string(mqd::test::kServer) + " --listen unix:" +
                            (scratch() / "log.sock") + " --dll " + dll + " --log-file " + log,
                        3);
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(contains(r.output, log));
    CHECK(fileText(plantedLog).empty());
  }
  CHECK(fileText(logVictim) == "precious\n");

  // The shim: the same rule for MQD_PROXY_LOG_FILE; the session goes on, logging to stderr.
  ServerProcess s(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "shimlog.sock"),
                                       "--dll", dll});
  for (const std::string& log : {linkedLog, plantedLog}) {
    useServer(s.endpoint());
    setenv("MQD_PROXY_LOG_FILE", log.c_str(), 1);
    setenv("MQD_PROXY_LOG", "info", 1);
    StderrCapture err;
    CHECK(fullSession() == 5 * 3 * 3);
    CHECK(contains(err.text(), "MQD_PROXY_LOG_FILE"));
    unsetenv("MQD_PROXY_LOG");
  }
  CHECK(fileText(logVictim) == "precious\n");
  CHECK(fileText(plantedLog).empty());
}

TEST_CASE("FIFOs, devices and directories as configuration, token or TLS files: refused at "
          "once, never waited on") {
  std::string fifo = scratch() / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::string dir = scratch() / "a-directory";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  std::string dll = mqd::test::kTestDll3;
  ServerProcess s(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "fifo.sock"),
                                       "--dll", dll});
  std::string cli = std::string(mqd::test::kCli) + " --server " + s.endpoint();

  // The client's token file, and the server's.
  Command token = bounded("env MQD_PROXY_TOKEN_FILE=" + fifo + " " + cli + " ping");
  INFO(token.output);
  CHECK(token.status == 1);
  CHECK(contains(token.output, fifo + ": a FIFO"));
  Command serverToken = bounded(std::string(mqd::test::kServer) + " --listen tcp:0 --dll " +
                                dll + " --token-file " + fifo);
  INFO(serverToken.output);
  CHECK(serverToken.status == 1);
  CHECK(contains(serverToken.output, fifo + ": a FIFO"));

  // TLS material: the server's key, the client's CA.
  Command key = bounded(std::string(mqd::test::kServer) + " --listen tls:0 --dll " + dll +
                        " --tls-cert " + fifo + " --tls-key " + fifo);
  INFO(key.output);
  CHECK(key.status == 1);
  CHECK(contains(key.output, "a FIFO"));
  ServerProcess tcp(mqd::test::kServer, {"--listen", "tcp:0", "--dll", dll});
  std::string port = tcp.endpoint().substr(tcp.endpoint().rfind(':') + 1);
  Command ca = bounded("env MQD_PROXY_TLS_CA=" + fifo + " " + std::string(mqd::test::kCli) +
                       " --server tls:127.0.0.1:" + port + " ping");
  INFO(ca.output);
  CHECK(ca.status == 1);
  CHECK(contains(ca.output, fifo + ": a FIFO"));

  // The configuration file: a FIFO, an endless device, a directory; each is a problem that
  // `config` reports (exit 1), quickly and without reading the endless one.
  for (const std::string& file : {fifo, std::string("/dev/zero"), dir}) {
    INFO(file);
    Command config;
    double seconds = secondsOf([&] {
      config = bounded("prlimit --as=1000000000 env MQD_PROXY_CONFIG=" + file + " " +
                       std::string(mqd::test::kCli) + " config");
    });
    INFO(config.output);
    CHECK(config.status == 1);
    CHECK(contains(config.output, file + ": "));
    CHECK(contains(config.output, "not a regular file"));
    CHECK(seconds < 5);
  }

  // The shim reads the same file when its session opens: a FIFO there costs the debugger
  // nothing but a warning.
  Command shim = bounded("env MQD_PROXY_CONFIG=" + fifo + " MQD_PROXY_TIMEOUT=2 " +
                         "MQD_PROXY_SERVER=" + s.endpoint() + " MQD_PROXY_DLL=" + dll + " " +
                         mqd::test::kDumpClient + " --dumps 1 --quiet", 20);
  INFO(shim.output);
  CHECK(shim.status == 0);
  CHECK(contains(shim.output, fifo + ": a FIFO"));
}
