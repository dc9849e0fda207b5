#include <doctest/doctest.h>

#include <cstdlib>

#include "ClientConfig.h"
#include "Endpoint.h"

using mqd::client::ClientConfig;

namespace {
// Clears the shim's variables before and after a test.
struct Env {
  static void clear() {
    for (const char* v : {"MQD_PROXY_SERVER", "MQD_PROXY_DLL", "MQD_PROXY_TIMEOUT",
                          "MQD_PROXY_LOG", "MQD_PROXY_LOG_FILE"}) {
      unsetenv(v);
    }
  }
  Env() { clear(); }
  ~Env() { clear(); }
};
}  // namespace

TEST_CASE("ClientConfig: defaults") {
  Env env;
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::fromEnvironment(&problems);
  CHECK(problems.empty());
  CHECK(c.server == "unix:" + mqd::defaultSocketPath());
  CHECK(c.dll.empty());
  CHECK(c.timeout.count() == 30000);
  CHECK(c.logLevel == mqd::LogLevel::Warn);
}

TEST_CASE("ClientConfig: values and malformed values") {
  Env env;
  setenv("MQD_PROXY_SERVER", "tcp:host:7", 1);
  setenv("MQD_PROXY_DLL", "libompi_dbg_msgq.so", 1);
  setenv("MQD_PROXY_TIMEOUT", "2.5", 1);
  setenv("MQD_PROXY_LOG", "debug", 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::fromEnvironment(&problems);
  CHECK(problems.empty());
  CHECK(c.server == "tcp:host:7");
  CHECK(c.dll == "libompi_dbg_msgq.so");
  CHECK(c.timeout.count() == 2500);
  CHECK(c.logLevel == mqd::LogLevel::Debug);

  setenv("MQD_PROXY_TIMEOUT", "soon", 1);
  setenv("MQD_PROXY_LOG", "chatty", 1);
  setenv("MQD_PROXY_SERVER", "host:7", 1);
  problems.clear();
  c = ClientConfig::fromEnvironment(&problems);
  CHECK(problems.size() == 3);
  CHECK(c.timeout.count() == 30000);
  CHECK(c.logLevel == mqd::LogLevel::Warn);
}
