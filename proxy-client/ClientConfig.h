// ClientConfig: every setting of the shim, read from the environment of the debugger process.
//
//   MQD_PROXY_SERVER    endpoint of the server (unix:PATH | tcp:HOST:PORT);
//                       default unix:$XDG_RUNTIME_DIR/mqd-proxy.sock or /tmp/mqd-proxy-$UID.sock
//   MQD_PROXY_DLL       vendor DLL to use on the server (path or base name); default: the
//                       server's first --dll
//   MQD_PROXY_TIMEOUT   seconds (fractions allowed) without any sign of progress from the
//                       server before a call fails with MQD_PROXY_ERR_TIMEOUT; default 30
//   MQD_PROXY_LOG       error | warn | info | debug | trace; default warn
//   MQD_PROXY_LOG_FILE  append the shim's log there instead of the debugger's stderr
//   MQD_PROXY_CACHE     off | call | epoch; default epoch (see mqd.capnp, CachePolicy)
//   MQD_PROXY_COMPRESS  auto | on | off; default auto: zstd for TCP, not for unix sockets
//
// Read when a session is opened, so a debugger can change them before loading the shim.
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

  // From the environment. Malformed values are reported in `problems` (and the default kept)
  // rather than thrown: the shim must keep working inside the debugger.
  static ClientConfig fromEnvironment(std::vector<std::string>* problems);
};

}  // namespace mqd::client
