// ServerOptions: mqd-proxy-server's command line. Every tunable of the server has exactly one
// home here, with its default and its --help text.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "Log.h"

namespace mqd::server {

struct ServerOptions {
  std::string listen;              // --listen, endpoint syntax; default unix:<defaultSocketPath>
  bool stdio = false;              // --stdio: serve one connection on stdin/stdout (over ssh)
  std::vector<std::string> dlls;   // --dll, repeatable: the allow-list, first is the default
  LogLevel logLevel = LogLevel::Info;  // --log-level
  std::string logFile;             // --log-file; default stderr
  std::string readyFile;           // --ready-file: write the bound address here once listening
  int shutdownGraceMs = 3000;      // --shutdown-grace-ms: SIGTERM to SIGKILL for workers, and
                                   // hang-up to SIGKILL for a worker busy in the DLL
  std::string stateDir;            // --state-dir: learned look-ups; default defaultStateDir()
  uint32_t blockSize = 64 * 1024;  // --block-size: target memory read granularity
  bool nodeMemory = false;         // --node-memory: read a proved target on this host
  // --read-around: the bound on what a miss reads around its block (RemoteDebugger::
  // aroundBudget), fixed; nullopt ("measured"): from the callbacks' timings.
  std::optional<uint64_t> readAround;
  // --no-lookup-discovery: never run an image's set-up in a child to find its look-ups
  // (LookupDiscovery).
  bool lookupDiscovery = true;
  // Security (docs/security.md, "Security model").
  std::string tokenFile;           // --token-file: clients must present this token
  std::string tlsCert;             // --tls-cert: PEM certificate chain (tls: listeners)
  std::string tlsKey;              // --tls-key: PEM private key (tls: listeners)
  int maxSessions = 64;            // --max-sessions: live workers; more are refused
  uint32_t maxMessageMiB = 128;    // --max-message-mib: largest message a worker will read
  int idleTimeoutS = 0;            // --idle-timeout: end a silent session (0: never)
  int dllCpuLimitS = 60;           // --dll-cpu-limit: CPU seconds per DLL call (0: no limit)
  int handshakeTimeoutMs = 5000;   // --handshake-timeout-ms: TLS + token before RPC
  std::string workerUser;          // --worker-user: run workers as this user (root only)
  bool help = false;
  bool version = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses argv; throws UsageError with a one-line reason. Does not touch the file system.
ServerOptions parseServerOptions(int argc, char** argv);

// The complete --help text.
std::string serverHelp();

}  // namespace mqd::server
