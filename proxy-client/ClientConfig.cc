#include "ClientConfig.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "Endpoint.h"

namespace mqd::client {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

}  // namespace

const char* ClientConfig::help() {
  return R"(  MQD_PROXY_SERVER    the server: unix:PATH, tcp:HOST:PORT (IPv6: tcp:[ADDR]:PORT;
                      tcp:PORT is 127.0.0.1), or tls:HOST:PORT for a server listening with
                      TLS. Default unix:$XDG_RUNTIME_DIR/mqd-proxy.sock, else
                      unix:/tmp/mqd-proxy-$UID.sock
  MQD_PROXY_TOKEN_FILE  a file holding the token the server was given (--token-file); it
                      must be private to its owner (chmod 600). Default: no token
  MQD_PROXY_TLS_CA    PEM file of the CA certificate(s) that signed a tls: server's
                      certificate. Default: the system's trust store
  MQD_PROXY_TLS_NAME  the host name the tls: server's certificate must name. Default: the
                      HOST of MQD_PROXY_SERVER
  MQD_PROXY_DLL       the vendor DLL to use on the server: a path or base name on its
                      allow-list. Default: the server's first --dll
  MQD_PROXY_TIMEOUT   seconds (fractions allowed) without any sign of progress from the server
                      before a call fails with MQD_PROXY_ERR_TIMEOUT. Default 30
  MQD_PROXY_CACHE     off: forward every call and callback; call: look-ups for the session,
                      target memory within one mqs_* call; epoch: memory for the epoch (from
                      one mqs_update_communicator_list to the next), recorded walks, learned
                      look-ups and memory. Default epoch
  MQD_PROXY_COMPRESS  zstd for bulk data: auto (on for TCP, off for unix sockets), on, off.
                      Default auto
  MQD_PROXY_LOG       error, warn, info, debug or trace. Default warn
  MQD_PROXY_LOG_FILE  append the shim's log to this file instead of the debugger's stderr
  MQD_PROXY_RECORD    record the session into this file (replaced; mode 600: it holds target
                      memory): calls, results and every answer the debugger gave, for
                      `mqd-proxy replay FILE`. MQD_PROXY_RECORD_LABEL, when set at each
                      mqs_setup_process, labels that process in the recording. Default: off
)";
}

ClientConfig ClientConfig::fromEnvironment(std::vector<std::string>* problems) {
  ClientConfig c;
  c.server = "unix:" + defaultSocketPath();
  if (const char* v = env("MQD_PROXY_SERVER")) {
    try {
      Endpoint::parse(v);
      c.server = v;
    } catch (const std::invalid_argument& e) {
      problems->push_back(std::string("MQD_PROXY_SERVER: ") + e.what());
      c.server = v;  // keep it: connecting reports the same problem to the debugger
    }
  }
  if (const char* v = env("MQD_PROXY_DLL")) c.dll = v;
  if (const char* v = env("MQD_PROXY_TIMEOUT")) {
    char* end = nullptr;
    double seconds = std::strtod(v, &end);
    if (*end != '\0' || !(seconds > 0) || seconds > 86400 || std::isnan(seconds)) {
      problems->push_back(std::string("MQD_PROXY_TIMEOUT: \"") + v +
                          "\" is not a number of seconds between 0 and 86400; using 30");
    } else {
      c.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
    }
  }
  if (const char* v = env("MQD_PROXY_LOG")) {
    try {
      c.logLevel = parseLogLevel(v);
    } catch (const std::invalid_argument& e) {
      problems->push_back(std::string("MQD_PROXY_LOG: ") + e.what());
    }
  }
  if (const char* v = env("MQD_PROXY_LOG_FILE")) c.logFile = v;
  if (const char* v = env("MQD_PROXY_RECORD")) c.record = v;
  if (const char* v = env("MQD_PROXY_TOKEN_FILE")) c.tokenFile = v;
  if (const char* v = env("MQD_PROXY_TLS_CA")) c.tlsCa = v;
  if (const char* v = env("MQD_PROXY_TLS_NAME")) c.tlsName = v;
  if (const char* v = env("MQD_PROXY_CACHE")) {
    std::string p = v;
    if (p == "off") {
      c.cache = wire::CachePolicy::OFF;
    } else if (p == "call") {
      c.cache = wire::CachePolicy::CALL;
    } else if (p == "epoch") {
      c.cache = wire::CachePolicy::EPOCH;
    } else {
      problems->push_back("MQD_PROXY_CACHE: \"" + p + "\" is not off, call or epoch; using epoch");
    }
  }
  if (const char* v = env("MQD_PROXY_COMPRESS")) {
    std::string p = v;
    if (p == "auto") {
      c.compress = Compress::Auto;
    } else if (p == "on") {
      c.compress = Compress::On;
    } else if (p == "off") {
      c.compress = Compress::Off;
    } else {
      problems->push_back("MQD_PROXY_COMPRESS: \"" + p + "\" is not auto, on or off; using auto");
    }
  }
  return c;
}

}  // namespace mqd::client
