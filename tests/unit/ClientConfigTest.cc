#include <doctest/doctest.h>

#include <unistd.h>

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "ClientConfig.h"
#include "LearnedLookups.h"
#include "Endpoint.h"
#include "ServerProcess.h"

using mqd::client::ClientConfig;

namespace {
// Clears the shim's variables before and after a test.
struct Env {
  static void clear() {
    for (const char* v : {"MQD_PROXY_SERVER", "MQD_PROXY_DLL", "MQD_PROXY_TIMEOUT",
                          "MQD_PROXY_LOG", "MQD_PROXY_LOG_FILE", "MQD_PROXY_TOKEN_FILE",
                          "MQD_PROXY_TLS_CA", "MQD_PROXY_TLS_NAME", "MQD_PROXY_CACHE",
                          "MQD_PROXY_COMPRESS", "MQD_PROXY_SSH", "MQD_PROXY_SSH_OPTIONS",
                          "MQD_PROXY_SERVER_UID", "MQD_PROXY_STATE_DIR",
                          "MQD_PROXY_READ_COST"}) {
      unsetenv(v);
    }
  }
  // No configuration file unless a test asks for one: the machine's own must not leak in.
  Env() {
    if (const char* v = std::getenv("MQD_PROXY_STATE_DIR")) stateDir = v;
    clear();
    setenv("MQD_PROXY_CONFIG", "", 1);
  }
  ~Env() {
    clear();
    unsetenv("MQD_PROXY_CONFIG");
    // The tests after this one in the binary keep the hermetic "off" ctest gave them.
    if (stateDir) setenv("MQD_PROXY_STATE_DIR", stateDir->c_str(), 1);
  }
  std::optional<std::string> stateDir;
};
}  // namespace

TEST_CASE("ClientConfig: defaults") {
  Env env;
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(c.server == "unix:" + mqd::defaultSocketPath());
  CHECK(c.dll.empty());
  CHECK(c.timeout.count() == 30000);
  CHECK(c.logLevel == mqd::LogLevel::Warn);
  CHECK(c.tokenFile.empty());
  CHECK(c.tlsCa.empty());
  CHECK(c.tlsName.empty());
  CHECK(c.stateDir == mqd::defaultStateDir());
}

TEST_CASE("ClientConfig: state_dir is an absolute directory or off") {
  Env env;
  std::vector<std::string> problems;
  setenv("MQD_PROXY_STATE_DIR", "/var/tmp/mqd-state", 1);
  CHECK(ClientConfig::load(&problems).stateDir == "/var/tmp/mqd-state");
  setenv("MQD_PROXY_STATE_DIR", "off", 1);
  ClientConfig off = ClientConfig::load(&problems);
  CHECK(off.stateDir.empty());
  CHECK(problems.empty());
  setenv("MQD_PROXY_STATE_DIR", "relative/dir", 1);
  ClientConfig bad = ClientConfig::load(&problems);
  CHECK(bad.stateDir == mqd::defaultStateDir());  // the default is kept
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("absolute") != std::string::npos);
}

TEST_CASE("ClientConfig: token and TLS settings") {
  Env env;
  setenv("MQD_PROXY_SERVER", "tls:server.example:4443", 1);
  setenv("MQD_PROXY_TOKEN_FILE", "/home/me/.mqd-token", 1);
  setenv("MQD_PROXY_TLS_CA", "/etc/mqd/ca.pem", 1);
  setenv("MQD_PROXY_TLS_NAME", "server.example", 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(c.server == "tls:server.example:4443");
  CHECK(c.tokenFile == "/home/me/.mqd-token");
  CHECK(c.tlsCa == "/etc/mqd/ca.pem");
  CHECK(c.tlsName == "server.example");
}

TEST_CASE("ClientConfig: values and malformed values") {
  Env env;
  setenv("MQD_PROXY_SERVER", "tcp:host:7", 1);
  setenv("MQD_PROXY_DLL", "libompi_dbg_msgq.so", 1);
  setenv("MQD_PROXY_TIMEOUT", "2.5", 1);
  setenv("MQD_PROXY_LOG", "debug", 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(c.server == "tcp:host:7");
  CHECK(c.dll == "libompi_dbg_msgq.so");
  CHECK(c.timeout.count() == 2500);
  CHECK(c.logLevel == mqd::LogLevel::Debug);

  setenv("MQD_PROXY_TIMEOUT", "soon", 1);
  setenv("MQD_PROXY_LOG", "chatty", 1);
  setenv("MQD_PROXY_SERVER", "host:7", 1);
  problems.clear();
  c = ClientConfig::load(&problems);
  CHECK(problems.size() == 3);
  CHECK(c.timeout.count() == 30000);
  CHECK(c.logLevel == mqd::LogLevel::Warn);
}

TEST_CASE("ClientConfig: a server on every node: several servers, separated by spaces") {
  Env env;
  setenv("MQD_PROXY_SERVER", "tcp:10.0.0.11:7000  tls:node2:7000\tssh://node3", 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(c.servers() == std::vector<std::string>{"tcp:10.0.0.11:7000", "tls:node2:7000",
                                                "ssh://node3"});
  // One server: the whole setting, a unix: path with a space in it too.
  for (const char* one : {"tcp:node1:7000", "unix:/run/my server/s.sock"}) {
    setenv("MQD_PROXY_SERVER", one, 1);
    c = ClientConfig::load(&problems);
    CHECK(problems.empty());
    CHECK(c.servers() == std::vector<std::string>{one});
  }
  // A malformed one among several is reported, naming it.
  setenv("MQD_PROXY_SERVER", "tcp:node1:7000 tcp:node2", 1);
  c = ClientConfig::load(&problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("tcp:node2") != std::string::npos);
}

TEST_CASE("ClientConfig: a timeout under a millisecond is refused, not taken as 0 ms") {
  Env env;
  for (const char* tiny : {"1e-9", "0.0004", "0", "-1", "nan", "inf", "86401"}) {
    INFO(tiny);
    setenv("MQD_PROXY_TIMEOUT", tiny, 1);
    std::vector<std::string> problems;
    ClientConfig c = ClientConfig::load(&problems);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].find("from 0.001 to 86400") != std::string::npos);
    CHECK(c.timeout.count() == 30000);
  }
  setenv("MQD_PROXY_TIMEOUT", "0.001", 1);
  std::vector<std::string> problems;
  CHECK(ClientConfig::load(&problems).timeout.count() == 1);
  CHECK(problems.empty());
  // The command line's --timeout takes the same rule.
  ClientConfig c;
  CHECK(c.set("timeout", "1e-9").find("from 0.001 to 86400") != std::string::npos);
  CHECK(c.timeout.count() == 30000);
  CHECK(c.set("timeout", "4").empty());
  CHECK(c.timeout.count() == 4000);
}

TEST_CASE("ClientConfig: read_cost is measured or pinned in seconds per MiB") {
  Env env;
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK_FALSE(c.readCost.has_value());  // measured
  CHECK(c.set("read_cost", "2").empty());
  REQUIRE(c.readCost.has_value());
  CHECK(*c.readCost == doctest::Approx(2.0 / (1024 * 1024)));
  CHECK(c.set("read_cost", "0").empty());
  CHECK(*c.readCost == 0);
  for (const char* bad : {"-1", "nan", "inf", "1e7", "fast", ""}) {
    INFO(bad);
    CHECK(c.set("read_cost", bad).find("seconds per MiB") != std::string::npos);
    CHECK(*c.readCost == 0);  // the previous value stays
  }
  CHECK(c.set("read_cost", "measured").empty());
  CHECK_FALSE(c.readCost.has_value());
  setenv("MQD_PROXY_READ_COST", "0.5", 1);
  c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(*c.readCost * 1024 * 1024 == doctest::Approx(0.5));
  CHECK(c.sources["read_cost"] == "MQD_PROXY_READ_COST");
}

TEST_CASE("ClientConfig: the server's user a unix socket may belong to, by name or number") {
  Env env;
  std::vector<std::string> problems;
  CHECK(ClientConfig::load(&problems).serverUid == -1);
  setenv("MQD_PROXY_SERVER_UID", "root", 1);
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(c.serverUid == 0);
  CHECK(c.serverUser == "root");
  setenv("MQD_PROXY_SERVER_UID", "4242", 1);
  CHECK(ClientConfig::load(&problems).serverUid == 4242);
  setenv("MQD_PROXY_SERVER_UID", "no-such-user-mqd", 1);
  c = ClientConfig::load(&problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("is no user name or uid on this machine") != std::string::npos);
  CHECK(c.serverUid == -1);
  unsetenv("MQD_PROXY_SERVER_UID");
}

TEST_CASE("ClientConfig: help describes every variable the shim reads") {
  std::string help = mqd::client::ClientConfig::help();
  for (const char* name : {"MQD_PROXY_SERVER", "MQD_PROXY_DLL", "MQD_PROXY_TIMEOUT",
                           "MQD_PROXY_CACHE", "MQD_PROXY_COMPRESS", "MQD_PROXY_LOG ",
                           "MQD_PROXY_LOG_FILE", "MQD_PROXY_TOKEN_FILE", "MQD_PROXY_TLS_CA",
                           "MQD_PROXY_TLS_NAME", "tls:HOST:PORT"}) {
    CHECK_MESSAGE(help.find(name) != std::string::npos, name);
  }
}

TEST_CASE("ClientConfig: cache policy and compression") {
  Env env;
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(c.cache == mqd::wire::CachePolicy::EPOCH);
  CHECK(c.compress == ClientConfig::Compress::Auto);
  setenv("MQD_PROXY_CACHE", "call", 1);
  setenv("MQD_PROXY_COMPRESS", "off", 1);
  c = ClientConfig::load(&problems);
  CHECK(c.cache == mqd::wire::CachePolicy::CALL);
  CHECK(c.compress == ClientConfig::Compress::Off);
  setenv("MQD_PROXY_CACHE", "off", 1);
  setenv("MQD_PROXY_COMPRESS", "on", 1);
  c = ClientConfig::load(&problems);
  CHECK(c.cache == mqd::wire::CachePolicy::OFF);
  CHECK(c.compress == ClientConfig::Compress::On);
  CHECK(problems.empty());
  setenv("MQD_PROXY_CACHE", "sometimes", 1);
  setenv("MQD_PROXY_COMPRESS", "maybe", 1);
  c = ClientConfig::load(&problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].find("sometimes") != std::string::npos);
  CHECK(c.cache == mqd::wire::CachePolicy::EPOCH);
  CHECK(c.compress == ClientConfig::Compress::Auto);
}

namespace {
std::string writeFile(const std::string& text) {
  char path[] = "/tmp/mqd-config-test-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}
}  // namespace

TEST_CASE("ClientConfig: the configuration file, overridden by the environment") {
  Env env;
  std::string path = writeFile(
      "# a comment\n"
      "server = ssh://me@node7:2222/opt/mqd/bin/mqd-proxy-server\n"
      "\n"
      "  timeout=12.5  \n"
      "dll = \"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/libompi_dbg_msgq.so\"\n"
      "ssh_options = -i /home/me/.ssh/cluster -J login\n"
      "cache = epoch\n");
  setenv("MQD_PROXY_CONFIG", path.c_str(), 1);
  setenv("MQD_PROXY_TIMEOUT", "3", 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  CHECK(problems.empty());
  CHECK(c.fileRead);
  CHECK(c.file == path);
  CHECK(c.server == "ssh://me@node7:2222/opt/mqd/bin/mqd-proxy-server");
  CHECK(c.sources["server"] == path + ":2");
  CHECK(c.timeout.count() == 3000);  // the environment wins
  CHECK(c.sources["timeout"] == "MQD_PROXY_TIMEOUT");
  CHECK(c.dll == "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/libompi_dbg_msgq.so");
  CHECK(c.sshOptions == "-i /home/me/.ssh/cluster -J login");
  CHECK(c.sources["ssh_options"] == path + ":6");
  CHECK(c.sources["log"] == "default");
  unlink(path.c_str());
}

TEST_CASE("ClientConfig: a bad line in the file is reported and loses nothing else") {
  Env env;
  std::string path = writeFile(
      "timeout = forever\n"
      "colour = blue\n"
      "just words\n"
      "log = debug\n");
  setenv("MQD_PROXY_CONFIG", path.c_str(), 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::load(&problems);
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].find(path + ":1: timeout") != std::string::npos);
  CHECK(problems[1].find("unknown setting \"colour\"") != std::string::npos);
  CHECK(problems[2].find(path + ":3: expected `key = value`") != std::string::npos);
  CHECK(c.timeout.count() == 30000);
  CHECK(c.logLevel == mqd::LogLevel::Debug);
  CHECK(c.sources["timeout"] == "default");
  unlink(path.c_str());
}

TEST_CASE("ClientConfig: a configuration file that is no regular file, or too large, is a "
          "problem, read no further") {
  Env env;
  mqd::harness::TempDir dir;
  std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::string big = dir / "big";
  {
    std::ofstream out(big);
    out << "timeout = 7\n" << std::string(ClientConfig::kMaxFileBytes, '#') << "\n";
  }
  for (const std::string& file : {fifo, std::string("/dev/zero"), dir.path(), big}) {
    INFO(file);
    setenv("MQD_PROXY_CONFIG", file.c_str(), 1);
    std::vector<std::string> problems;
    ClientConfig c = ClientConfig::load(&problems);  // returns at once: a FIFO is not waited on
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].rfind(file + ": ", 0) == 0);
    CHECK(problems[0].find("the configuration file was not read") != std::string::npos);
    CHECK(!c.fileRead);
    CHECK(c.timeout.count() == 30000);
  }
}

TEST_CASE("ClientConfig: where the file is looked for") {
  Env env;
  unsetenv("MQD_PROXY_CONFIG");
  std::string savedXdg = getenv("XDG_CONFIG_HOME") ? getenv("XDG_CONFIG_HOME") : "";
  std::string savedHome = getenv("HOME") ? getenv("HOME") : "";
  setenv("XDG_CONFIG_HOME", "/xdg", 1);
  CHECK(ClientConfig::configFilePath() == "/xdg/mqd-proxy/config");
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", "/home/someone", 1);
  CHECK(ClientConfig::configFilePath() == "/home/someone/.config/mqd-proxy/config");
  setenv("MQD_PROXY_CONFIG", "", 1);
  CHECK(ClientConfig::configFilePath().empty());
  if (!savedXdg.empty()) setenv("XDG_CONFIG_HOME", savedXdg.c_str(), 1);
  if (!savedHome.empty()) setenv("HOME", savedHome.c_str(), 1);
}

TEST_CASE("ClientConfig: every setting has a variable, help and a shown value") {
  std::string help = ClientConfig::help();
  for (const mqd::client::Setting& s : mqd::client::settings()) {
    CHECK_MESSAGE(help.find(s.variable) != std::string::npos, s.variable);
    CHECK(std::string(s.variable) == "MQD_PROXY_" + [&] {
      std::string upper = s.key;
      for (char& ch : upper) ch = static_cast<char>(toupper(ch));
      return upper;
    }());
  }
}
