#include "ServerUnderTest.h"

#include <cstdlib>
#include <sstream>

namespace mqd::harness {
namespace {

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::string(v) : fallback;
}

}  // namespace

ServerUnderTest ServerUnderTest::fromEnvironment(const std::string& defaultBinary,
                                                 const std::string& defaultDll3,
                                                 const std::string& defaultDll2) {
  ServerUnderTest s;
  s.binary = envOr("MQD_TEST_SERVER", defaultBinary);
  s.dll3 = envOr("MQD_TEST_SERVER_DLL3", defaultDll3);
  s.dll2 = envOr("MQD_TEST_SERVER_DLL2", defaultDll2);
  std::istringstream words(envOr("MQD_TEST_SERVER_EMULATOR", ""));
  for (std::string w; words >> w;) s.emulator.push_back(w);
  s.other = s.binary != defaultBinary;
  return s;
}

std::string ServerUnderTest::listenAddress(const std::string& dir) const {
  return other ? std::string("tcp:127.0.0.1:0") : "unix:" + dir + "/server.sock";
}

}  // namespace mqd::harness
