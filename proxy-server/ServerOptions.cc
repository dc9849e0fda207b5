#include "ServerOptions.h"

#include <cstdlib>

#include "Endpoint.h"

namespace mqd::server {
namespace {

int parseInt(const std::string& option, const std::string& value, int min, int max) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < min || v > max) {
    throw UsageError(option + " needs a number between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", got \"" + value + "\"");
  }
  return static_cast<int>(v);
}

}  // namespace

ServerOptions parseServerOptions(int argc, char** argv) {
  ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasValue = true;
    }
    auto next = [&]() -> std::string {
      if (hasValue) return value;
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--version") {
      o.version = true;
    } else if (arg == "--listen") {
      o.listen = next();
      try {
        Endpoint::parse(o.listen);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--listen: ") + e.what());
      }
    } else if (arg == "--dll") {
      std::string path = next();
      if (path.empty()) throw UsageError("--dll needs a path");
      o.dlls.push_back(path);
    } else if (arg == "--log-level") {
      try {
        o.logLevel = parseLogLevel(next());
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--log-level: ") + e.what());
      }
    } else if (arg == "--log-file") {
      o.logFile = next();
    } else if (arg == "--ready-file") {
      o.readyFile = next();
    } else if (arg == "--shutdown-grace-ms") {
      o.shutdownGraceMs = parseInt(arg, next(), 0, 600000);
    } else {
      throw UsageError("unknown option \"" + arg + "\" (see --help)");
    }
  }
  if (o.listen.empty()) o.listen = "unix:" + defaultSocketPath();
  return o;
}

std::string serverHelp() {
  return R"(Usage: mqd-proxy-server --dll PATH [--dll PATH ...] [options]

Runs MPI message-queue (MQD) DLLs on this machine for debuggers elsewhere. A debugger loads
libmqdproxy.so, which forwards every mqs_* call here. Each connection gets its own worker
process, which loads the chosen vendor DLL and relays the DLL's callbacks to the debugger.

Options:
  --dll PATH              Allow this vendor DLL (repeatable). The first is the default for
                          clients that do not name one (MQD_PROXY_DLL on the debugger side).
                          A client may name a DLL by the exact PATH given here, by its
                          canonical path, or by its base name when that is unambiguous. No
                          other DLL is ever loaded.
  --listen ENDPOINT       Where to accept debuggers:
                            unix:PATH        unix-domain socket, created with mode 0600
                            tcp:HOST:PORT    TCP (PORT 0 picks a free port)
                          Default: unix:$XDG_RUNTIME_DIR/mqd-proxy.sock, or
                          unix:/tmp/mqd-proxy-$UID.sock without XDG_RUNTIME_DIR.
  --log-level LEVEL       error, warn, info (default), debug or trace.
  --log-file PATH         Append the log to PATH instead of stderr.
  --ready-file PATH       Once listening, write the bound endpoint (with the real port) to PATH.
  --shutdown-grace-ms N   On SIGINT/SIGTERM, how long workers get to finish before SIGKILL
                          (default 3000).
  --version               Print the version and exit.
  -h, --help              Print this help and exit.

Signals: SIGINT and SIGTERM stop accepting, end every worker and remove the unix socket.
Exit status: 0 after a clean shutdown, 2 for a usage error, 1 for any other failure.
)";
}

}  // namespace mqd::server
