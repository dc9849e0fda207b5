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
                          "MQD_PROXY_LOG", "MQD_PROXY_LOG_FILE", "MQD_PROXY_TOKEN_FILE",
                          "MQD_PROXY_TLS_CA", "MQD_PROXY_TLS_NAME"}) {
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
  CHECK(c.tokenFile.empty());
  CHECK(c.tlsCa.empty());
  CHECK(c.tlsName.empty());
}

TEST_CASE("ClientConfig: token and TLS settings") {
  Env env;
  setenv("MQD_PROXY_SERVER", "tls:server.example:4443", 1);
  setenv("MQD_PROXY_TOKEN_FILE", "/home/me/.mqd-token", 1);
  setenv("MQD_PROXY_TLS_CA", "/etc/mqd/ca.pem", 1);
  setenv("MQD_PROXY_TLS_NAME", "server.example", 1);
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::fromEnvironment(&problems);
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
  using mqd::client::ClientConfig;
  unsetenv("MQD_PROXY_CACHE");
  unsetenv("MQD_PROXY_COMPRESS");
  std::vector<std::string> problems;
  ClientConfig c = ClientConfig::fromEnvironment(&problems);
  CHECK(c.cache == mqd::wire::CachePolicy::EPOCH);
  CHECK(c.compress == ClientConfig::Compress::Auto);
  setenv("MQD_PROXY_CACHE", "call", 1);
  setenv("MQD_PROXY_COMPRESS", "off", 1);
  c = ClientConfig::fromEnvironment(&problems);
  CHECK(c.cache == mqd::wire::CachePolicy::CALL);
  CHECK(c.compress == ClientConfig::Compress::Off);
  setenv("MQD_PROXY_CACHE", "off", 1);
  setenv("MQD_PROXY_COMPRESS", "on", 1);
  c = ClientConfig::fromEnvironment(&problems);
  CHECK(c.cache == mqd::wire::CachePolicy::OFF);
  CHECK(c.compress == ClientConfig::Compress::On);
  CHECK(problems.empty());
  setenv("MQD_PROXY_CACHE", "sometimes", 1);
  setenv("MQD_PROXY_COMPRESS", "maybe", 1);
  c = ClientConfig::fromEnvironment(&problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].find("sometimes") != std::string::npos);
  CHECK(c.cache == mqd::wire::CachePolicy::EPOCH);
  CHECK(c.compress == ClientConfig::Compress::Auto);
  unsetenv("MQD_PROXY_CACHE");
  unsetenv("MQD_PROXY_COMPRESS");
}
