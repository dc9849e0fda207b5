// What another local user, or a clumsy one, can do to an mqd-proxy user on the same machine
// (docs/security.md, "What another local user can and cannot do"): plant links, files and FIFOs
// where the product writes or reads, and squat the unix socket a client connects to. The attacker
// is `nobody`, its part run through setpriv; the victim is this test, as root (as in CI), or
// `daemon` where the victim must be an ordinary user. Without root only what needs no second user
// runs.
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
#include <functional>
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
std::string shellWord(const std::string& text) {
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

// Where the sanitizers of another user's processes write their reports (tests/sanitize/
// run-sanitized.sh points log_path at a directory only the test's user may write, where a
// report, or the warning every fiber-using process prints once, would kill them instead).
// The last test case reads them.
const TempDir& otherUsersReports() {
  static TempDir dir;
  chmod(dir.path().c_str(), 01777);
  return dir;
}

// `options` (ASAN_OPTIONS, UBSAN_OPTIONS) with log_path moved to otherUsersReports().
std::string reportsElsewhere(const char* variable) {
  const char* options = getenv(variable);
  if (options == nullptr) return "";
  std::string text = options;
  size_t at = text.find("log_path=");
  if (at == std::string::npos) return "";
  size_t end = text.find(':', at);
  std::string name = std::string(variable).substr(0, std::string(variable).find('_'));
  text.replace(at, end == std::string::npos ? std::string::npos : end - at,
               "log_path=" + (otherUsersReports() / name));
  return std::string(variable) + "=" + shellWord(text) + " ";
}

// Runs `shell` (sh -c) as `u`, with its own uid and group only.
Command as(const User& u, const std::string& shell) {
  return run("env " + reportsElsewhere("ASAN_OPTIONS") + reportsElsewhere("UBSAN_OPTIONS") +
             "setpriv --reuid=" + std::to_string(u.uid) + " --regid=" + std::to_string(u.gid) +
             " --clear-groups sh -c " + shellWord(shell));
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

// The built programs and DLLs, copied where another user may run and read them (the build
// tree may sit in a directory only root may enter).
struct Installed {
  std::string server, cli, dll, hostile;
};

const Installed& installed() {
  static TempDir dir;
  static Installed i = [] {
    chmod(dir.path().c_str(), 0755);
    Installed out{dir / "mqd-proxy-server", dir / "mqd-proxy", dir / "libmqd_testdll_l3.so",
                  dir / "libmqd_hostile.so"};
    Command r = run("cp " + std::string(mqd::test::kServer) + " " + out.server + " && cp " +
                    mqd::test::kCli + " " + out.cli + " && cp " + mqd::test::kTestDll3 + " " +
                    out.dll + " && cp " + mqd::test::kHostileDll + " " + out.hostile +
                    " && chmod 755 " + out.server + " " + out.cli + " " + out.dll + " " +
                    out.hostile);
    INFO(r.output);
    REQUIRE(r.status == 0);
    return out;
  }();
  return i;
}

// A process another user started in the background (sh -c "... & echo $! > PIDFILE"): ended
// by its pid when the test is done.
struct Background {
  std::string pidFile;
  ~Background() {
    std::string pid = fileText(pidFile);
    if (!pid.empty()) kill(std::stoi(pid), SIGTERM);
  }
};

// A listener `u` plants at `socket`: it accepts connections and appends every byte it is sent
// to `received` (readable by the test), until it has waited 60 s for one.
Background plantListener(const User& u, const std::string& socket, const std::string& received) {
  std::string script = sharedDir() / "listener.py";
  writeFile(script,
            "import os, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8); s.settimeout(60)\n"
            "out = open(sys.argv[2], 'ab'); os.chmod(sys.argv[2], 0o644)\n"
            "open(sys.argv[2] + '.ready', 'w').close()\n"
            "try:\n"
            "    while True:\n"
            "        c, _ = s.accept(); c.settimeout(3)\n"
            "        try:\n"
            "            while True:\n"
            "                d = c.recv(4096)\n"
            "                if not d: break\n"
            "                out.write(d); out.flush()\n"
            "        except OSError: pass\n"
            "        c.close()\n"
            "except OSError: pass\n",
            0644);
  Background b{received + ".pid"};
  Command r = as(u, "python3 " + script + " " + socket + " " + received + " >/dev/null 2>&1 & " +
                        "echo $! > " + b.pidFile);
  REQUIRE(r.status == 0);
  auto deadline = std::chrono::steady_clock::now() + kLoadedMachineSlack;
  while (access((received + ".ready").c_str(), F_OK) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(access((received + ".ready").c_str(), F_OK) == 0);
  return b;
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

// Runs `command` with a deadline (a loaded machine's slack); killed, it was still running
// (blocked) at the deadline.
Command bounded(const std::string& command,
                int seconds = static_cast<int>(kLoadedMachineSlack.count())) {
  return run("timeout -s KILL " + std::to_string(seconds) + " " + command);
}

// "prlimit --as=BYTES " to bound a command's memory; nothing under AddressSanitizer, whose
// shadow memory alone takes terabytes of address space (the time limit bounds it then).
std::string addressSpaceLimit(const char* bytes) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;
  return "";
#else
  return std::string("prlimit --as=") + bytes + " ";
#endif
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
      "sh -c " + shellWord(std::string(mqd::test::kServer) + " --listen unix:" + sock + " --dll " +
                        dll + " --state-dir none --ready-file " + ready +
                        " & pid=$!; for i in $(seq 600); do [ -s " + ready +
                        " ] && break; sleep 0.1; done; stat -c '%F %u %a' " + ready + "; cat " +
                        ready + "; kill $pid; wait $pid"),
      120);
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
                            (scratch() / "log.sock") + " --dll " + dll + " --log-file " + log);
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
      config = bounded(addressSpaceLimit("1000000000") + "env MQD_PROXY_CONFIG=" + file + " " +
                       std::string(mqd::test::kCli) + " config");
    });
    INFO(config.output);
    CHECK(config.status == 1);
    CHECK(contains(config.output, file + ": "));
    CHECK(contains(config.output, "not a regular file"));
    CHECK(seconds < kLoadedMachineSlack.count());  // not reading the endless one: no deadline
  }

  // The shim reads the same file when its session opens: a FIFO there costs the debugger
  // nothing but a warning.
  Command shim = bounded("env MQD_PROXY_CONFIG=" + fifo + " MQD_PROXY_TIMEOUT=60 " +
                         "MQD_PROXY_SERVER=" + s.endpoint() + " MQD_PROXY_DLL=" + dll + " " +
                         mqd::test::kDumpClient + " --dumps 1 --quiet", 120);
  INFO(shim.output);
  CHECK(shim.status == 0);
  CHECK(contains(shim.output, fifo + ": a FIFO"));
}

TEST_CASE("a unix socket another user holds: the client refuses it, naming the owner, before "
          "it sends a byte") {
  if (!root()) return;
  User nobody = user("nobody");
  // A directory like /tmp: world-writable and sticky. nobody listens there first, at a path a
  // root user also uses.
  TempDir sticky;
  chmod(sticky.path().c_str(), 01777);
  std::string token = writeFile(scratch() / "squat.token", "s3cret-of-root\n", 0600);
  std::string squatted = sticky / "mqd.sock";
  std::string received = sharedDir() / "received";
  Background listener = plantListener(nobody, squatted, received);
  std::string pingSquatted = "env MQD_PROXY_TOKEN_FILE=" + token + " " +
                             std::string(mqd::test::kCli) + " --server unix:" + squatted + " ping";
  Command ping = bounded(pingSquatted);
  INFO(ping.output);
  CHECK(ping.status == 1);
  std::string stranger = "nobody (uid " + std::to_string(nobody.uid) +
                         "), who is neither you nor root; nothing was sent to it";
  CHECK(contains(ping.output, "the socket belongs to " + stranger));
  CHECK(contains(ping.output, "MQD_PROXY_SERVER_UID=" + std::to_string(nobody.uid)));
  // The socket file made ours, the process listening on it is still nobody's (SO_PEERCRED).
  REQUIRE(chown(squatted.c_str(), 0, 0) == 0);
  Command peer = bounded(pingSquatted);
  INFO(peer.output);
  CHECK(peer.status == 1);
  CHECK(contains(peer.output, ") runs as " + stranger));
  std::this_thread::sleep_for(200ms);
  CHECK(fileText(received).empty());  // not the hello, not the token

  // A real server run by nobody, with a DLL of nobody's choosing: neither `info` nor a
  // debugger's session reaches it...
  const Installed& bin = installed();
  std::string real = sticky / "real.sock";
  Background server{sharedDir() / "server.pid"};
  REQUIRE(as(nobody, bin.server + " --listen unix:" + real + " --dll " + bin.hostile +
                         " --state-dir none --ready-file " + (sharedDir() / "server.ready") +
                         " >/dev/null 2>&1 & echo $! > " + server.pidFile)
              .status == 0);
  auto deadline = std::chrono::steady_clock::now() + kLoadedMachineSlack;
  while (fileText(sharedDir() / "server.ready").empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  Command info = bounded(std::string(mqd::test::kCli) + " --server unix:" + real + " info");
  INFO(info.output);
  CHECK(info.status == 1);
  CHECK(contains(info.output, "belongs to nobody"));
  CHECK(!contains(info.output, "vvvvvvvv"));
  useServer("unix:" + real);
  setenv("MQD_PROXY_DLL", bin.hostile.c_str(), 1);
  {
    Rig rig;
    rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
    int rc = rig.dll().setup_image(rig.i(), rig.d->imageCallbacks());
    CHECK(rc == MQD_PROXY_ERR_AUTH_FAILED);
    CHECK(contains(rig.errorText(rc), "belongs to nobody"));
  }
  // ...unless the user says that server is the one they mean.
  for (const std::string& trusted : {std::string("nobody"), std::to_string(nobody.uid)}) {
    Command trustedInfo = bounded("env MQD_PROXY_SERVER_UID=" + trusted + " " +
                                  std::string(mqd::test::kCli) + " --server unix:" + real +
                                  " info");
    INFO(trustedInfo.output);
    CHECK(contains(trustedInfo.output, "vvvvvvvv"));
  }

  // A directory others may write without the sticky bit: refused even for our own server.
  ServerProcess own(mqd::test::kServer, {"--listen", "unix:" + (sharedDir() / "own.sock"),
                                         "--dll", mqd::test::kTestDll3});
  Command open = bounded(std::string(mqd::test::kCli) + " --server " + own.endpoint() + " ping");
  INFO(open.output);
  CHECK(open.status == 1);
  CHECK(contains(open.output, "lets group or others replace the socket, and is not sticky"));
}

TEST_CASE("the default socket without XDG_RUNTIME_DIR: a private directory, never a name in "
          "/tmp another user can take") {
  if (!root()) return;
  User nobody = user("nobody");
  User victim = user("daemon");  // an ordinary user whose default path nobody else uses
  const Installed& bin = installed();
  std::string uid = std::to_string(victim.uid);
  std::string privateDir = "/tmp/mqd-proxy-" + uid;
  std::string oldDefault = "/tmp/mqd-proxy-" + uid + ".sock";
  auto cleanUp = [&] { run("rm -rf " + privateDir + " " + oldDefault); };
  cleanUp();
  std::string token = sharedDir() / "daemon.token";
  REQUIRE(as(victim, "umask 077 && echo s3cret-of-daemon > " + token).status == 0);
  std::string asVictim = "env -u XDG_RUNTIME_DIR -u MQD_PROXY_SERVER MQD_PROXY_CONFIG= ";

  // nobody takes both the old default name and the private directory, with a listener in each.
  std::string received = sharedDir() / "default-received";
  REQUIRE(as(nobody, "mkdir -m 777 " + privateDir).status == 0);
  Background atOld = plantListener(nobody, oldDefault, received + "-old");
  Background inDir = plantListener(nobody, privateDir + "/mqd-proxy.sock", received);
  Command ping = as(victim, asVictim + "MQD_PROXY_TOKEN_FILE=" + token + " timeout -s KILL 60 " +
                                bin.cli + " ping");
  INFO(ping.output);
  CHECK(ping.status == 1);
  CHECK(contains(ping.output, privateDir + ": the private socket directory belongs to nobody"));
  CHECK(contains(ping.output, "XDG_RUNTIME_DIR"));
  std::this_thread::sleep_for(200ms);
  CHECK(fileText(received).empty());
  CHECK(fileText(received + "-old").empty());
  // The server refuses that directory too, saying whose it is.
  Command serve = as(victim, asVictim + "timeout -s KILL 60 " + bin.server + " --dll " + bin.dll +
                                 " --state-dir none");
  INFO(serve.output);
  CHECK(serve.status == 1);
  CHECK(contains(serve.output, "belongs to nobody"));

  // Without a squatter, the first of client and server makes the directory, 0700, and both
  // use it.
  cleanUp();
  Command nothing = as(victim, asVictim + "timeout -s KILL 60 " + bin.cli + " ping");
  INFO(nothing.output);
  CHECK(nothing.status == 1);
  CHECK(contains(nothing.output, "cannot reach"));
  struct stat st = lstatOf(privateDir);
  CHECK(S_ISDIR(st.st_mode));
  CHECK(st.st_uid == victim.uid);
  CHECK((st.st_mode & 07777) == 0700);
  Background server{sharedDir() / "daemon-server.pid"};
  std::string ready = sharedDir() / "daemon-server.ready";
  REQUIRE(as(victim, asVictim + bin.server + " --dll " + bin.dll + " --state-dir none " +
                         "--ready-file " + ready + " >/dev/null 2>&1 & echo $! > " +
                         server.pidFile)
              .status == 0);
  auto deadline = std::chrono::steady_clock::now() + kLoadedMachineSlack;
  while (fileText(ready).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(fileText(ready) == "unix:" + privateDir + "/mqd-proxy.sock\n");
  Command works = as(victim, asVictim + "timeout -s KILL 60 " + bin.cli + " ping");
  INFO(works.output);
  CHECK(works.status == 0);
  kill(std::stoi(fileText(server.pidFile)), SIGTERM);
  std::this_thread::sleep_for(300ms);
  cleanUp();
}

TEST_CASE("no sanitizer report from the processes of another user") {
  // (Only a sanitized build writes any; one line every fiber-using process prints once is not
  // a finding, as in tests/sanitize/run-sanitized.sh.)
  Command reports = run("cat " + otherUsersReports().path() + "/* 2>/dev/null | grep -Ev " +
                        shellWord("ASan is ignoring requested __asan_handle_no_return|"
                               "^False positive error reports may follow$|"
                               "^For details see https://github.com/google/sanitizers/issues/189$|"
                               "^[[:space:]]*$"));
  INFO(reports.output);
  CHECK(reports.output.empty());
}
