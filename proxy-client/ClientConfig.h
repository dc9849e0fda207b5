// ClientConfig: every setting of the shim, read from the environment of the debugger process
// when a session is opened (so a debugger can change them before loading the shim). help()
// describes each one; `mqd-proxy --help` prints it and README.md mirrors it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "Log.h"
#include "mqd.capnp.h"

namespace mqd::client {

struct ClientConfig {
  enum class Compress { Auto, On, Off };

  std::string server;
  std::string dll;
  std::chrono::milliseconds timeout{30000};
  LogLevel logLevel = LogLevel::Warn;
  std::string logFile;
  wire::CachePolicy cache = wire::CachePolicy::EPOCH;
  Compress compress = Compress::Auto;
  std::string tokenFile;  // MQD_PROXY_TOKEN_FILE: the token to present (read at connect time)
  std::string tlsCa;      // MQD_PROXY_TLS_CA: PEM CA certificate(s) for tls: servers
  std::string tlsName;    // MQD_PROXY_TLS_NAME: name the certificate must carry (default: HOST)
  std::string record;     // MQD_PROXY_RECORD: record the session into this file (SessionRecorder)

  // From the environment. Malformed values are reported in `problems` (and the default kept)
  // rather than thrown: the shim must keep working inside the debugger.
  static ClientConfig fromEnvironment(std::vector<std::string>* problems);

  // Every variable, its values and its default, as help text.
  static const char* help();
};

}  // namespace mqd::client
