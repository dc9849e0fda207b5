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
  return c;
}

}  // namespace mqd::client
