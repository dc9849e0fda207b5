// ServerUnderTest: which mqd-proxy-server a proxied test talks to, and with which test DLLs.
//
// By default this build's server and test DLLs. Cross-architecture tests point at another
// build through the environment:
//   MQD_TEST_SERVER           the server binary (a foreign build's, or the host's for an i686 shim)
//   MQD_TEST_SERVER_EMULATOR  command prefix that runs it, space-separated
//                             (qemu-s390x -L /path/to/sysroot); empty for a native binary
//   MQD_TEST_SERVER_DLL3      that build's level-3 test DLL (what the shim asks the server for)
//   MQD_TEST_SERVER_DLL2      that build's level-2 test DLL
// A foreign server listens on TCP loopback, as it would on another machine.
#pragma once

#include <string>
#include <vector>

namespace mqd::harness {

struct ServerUnderTest {
  std::string binary;
  std::vector<std::string> emulator;
  std::string dll3;
  std::string dll2;

  // Reads the environment; the defaults are this build's artefacts.
  static ServerUnderTest fromEnvironment(const std::string& defaultBinary,
                                         const std::string& defaultDll3,
                                         const std::string& defaultDll2);
  // True when the environment named another build's server.
  bool other = false;
  const std::string& dll(int level) const { return level == 3 ? dll3 : dll2; }
  // Where it should listen: "tcp:127.0.0.1:0" for another build's server, else unix:DIR/NAME.
  std::string listenAddress(const std::string& dir) const;
};

}  // namespace mqd::harness
