// mqd-proxy-server: runs vendor MQD DLLs on the target platform for remote debuggers.
// See ServerOptions.cc (or --help) for the command line.
#include <cstdio>
#include <exception>

#include "DllAllowList.h"
#include "Log.h"
#include "ServerOptions.h"
#include "Supervisor.h"

#ifndef MQD_VERSION
#define MQD_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace mqd;
  using namespace mqd::server;
  ServerOptions options;
  try {
    options = parseServerOptions(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "mqd-proxy-server: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(serverHelp().c_str(), stdout);
    return 0;
  }
  if (options.version) {
    std::printf("mqd-proxy-server %s\n", MQD_VERSION);
    return 0;
  }
  logSetComponent("mqd-proxy-server");
  logSetLevel(options.logLevel);
  try {
    if (!options.logFile.empty()) logSetFile(options.logFile);
    DllAllowList dlls(options.dlls, options.stdio);
    if (options.dlls.empty() && !options.stdio) {
      MQD_LOG(Warn, "no --dll given: every session will be refused");
    }
    Supervisor supervisor(options, dlls);
    return supervisor.run();
  } catch (const std::exception& e) {
    MQD_LOG(Error, "%s", e.what());
    return 1;
  }
}
