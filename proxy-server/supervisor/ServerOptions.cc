#include "ServerOptions.h"

#include <cstdlib>

#include "Endpoint.h"
#include "LearnedLookups.h"
#include "SocketActivation.h"

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
        if (!isActivationListen(o.listen)) Endpoint::parse(o.listen);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--listen: ") + e.what());
      }
    } else if (arg == "--stdio") {
      o.stdio = true;
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
    } else if (arg == "--state-dir") {
      o.stateDir = next();
      if (o.stateDir.empty()) throw UsageError("--state-dir needs a directory (or none)");
    } else if (arg == "--block-size") {
      int size = parseInt(arg, next(), 4096, 1 << 20);
      if ((size & (size - 1)) != 0) throw UsageError("--block-size must be a power of two");
      o.blockSize = static_cast<uint32_t>(size);
    } else if (arg == "--read-around") {
      std::string v = next();
      if (v == "measured") {
        o.readAround.reset();
      } else {
        o.readAround = static_cast<uint64_t>(parseInt(arg, v, 0, 1 << 20));
      }
    } else if (arg == "--node-memory") {
      o.nodeMemory = true;
    } else if (arg == "--token-file") {
      o.tokenFile = next();
      if (o.tokenFile.empty()) throw UsageError("--token-file needs a path");
    } else if (arg == "--tls-cert") {
      o.tlsCert = next();
      if (o.tlsCert.empty()) throw UsageError("--tls-cert needs a path");
    } else if (arg == "--tls-key") {
      o.tlsKey = next();
      if (o.tlsKey.empty()) throw UsageError("--tls-key needs a path");
    } else if (arg == "--max-sessions") {
      o.maxSessions = parseInt(arg, next(), 1, 100000);
    } else if (arg == "--max-message-mib") {
      o.maxMessageMiB = static_cast<uint32_t>(parseInt(arg, next(), 1, 4096));
    } else if (arg == "--idle-timeout") {
      o.idleTimeoutS = parseInt(arg, next(), 0, 30 * 86400);
    } else if (arg == "--dll-cpu-limit") {
      o.dllCpuLimitS = parseInt(arg, next(), 0, 86400);
    } else if (arg == "--handshake-timeout-ms") {
      o.handshakeTimeoutMs = parseInt(arg, next(), 100, 600000);
    } else if (arg == "--worker-user") {
      o.workerUser = next();
      if (o.workerUser.empty()) throw UsageError("--worker-user needs a user name");
    } else {
      throw UsageError("unknown option \"" + arg + "\" (see --help)");
    }
  }
  if (o.stdio) {
    if (!o.listen.empty() || !o.readyFile.empty() || !o.tlsCert.empty() || !o.tlsKey.empty()) {
      throw UsageError("--stdio serves the connection on stdin and stdout: it takes no "
                       "--listen, --ready-file, --tls-cert or --tls-key");
    }
    if (!o.workerUser.empty()) {
      throw UsageError("--stdio runs as the user ssh authenticated: it takes no --worker-user");
    }
  }
  if (o.listen.empty()) o.listen = "unix:" + defaultSocketPath();
  bool tls = o.listen == "tls:systemd";
  if (!isActivationListen(o.listen)) {
    Endpoint listening = Endpoint::parse(o.listen);
    if (listening.kind == Endpoint::Kind::Ssh) {
      throw UsageError("--listen " + o.listen + ": ssh:// is for clients (MQD_PROXY_SERVER); "
                       "ssh runs this server with --stdio");
    }
    tls = listening.tls;
  }
  if (tls && (o.tlsCert.empty() || o.tlsKey.empty())) {
    throw UsageError("--listen " + o.listen + " needs --tls-cert and --tls-key");
  }
  if (!tls && (!o.tlsCert.empty() || !o.tlsKey.empty())) {
    throw UsageError("--tls-cert and --tls-key need a tls:HOST:PORT listener (--listen tls:...)");
  }
  if (o.stateDir.empty()) o.stateDir = defaultStateDir();
  if (o.stateDir == "none") o.stateDir.clear();
  return o;
}

std::string serverHelp() {
  return R"(Usage: mqd-proxy-server --dll PATH [--dll PATH ...] [options]
       mqd-proxy-server --stdio [--dll PATH ...] [options]

Runs MPI message-queue (MQD) DLLs on this machine for debuggers elsewhere. A debugger loads
libmqdproxy.so, which forwards every mqs_* call here. Each connection gets its own worker
process, which loads the chosen vendor DLL and relays the DLL's callbacks to the debugger.

Options:
  --dll PATH              Allow this vendor DLL (repeatable). The first is the default for
                          clients that do not name one (MQD_PROXY_DLL on the debugger side).
                          A client may name a DLL by the exact PATH given here, by its
                          canonical path, or by its base name when that is unambiguous. No
                          other DLL is ever loaded: PATH is resolved and the file opened at
                          start-up (a name without a slash is a file in the working
                          directory, never searched for), and sessions load that file even
                          if PATH is later pointed elsewhere.
  --listen ENDPOINT       Where to accept debuggers, one of:
                          * unix:PATH, a unix-domain socket created with mode 0600;
                          * tcp:HOST:PORT, TCP (PORT 0 picks a free port);
                          * tcp:PORT or tcp::PORT, TCP on the loopback address 127.0.0.1
                          (every interface only as tcp:0.0.0.0:PORT or tcp:[::]:PORT);
                          * tls:HOST:PORT, TCP with TLS (needs --tls-cert and --tls-key);
                          * systemd, the one socket systemd passes (socket activation,
                          mqd-proxy-server.socket, Accept=no), under the same rules;
                          * tls:systemd, that socket (TCP) with TLS.
                          Default: unix:$XDG_RUNTIME_DIR/mqd-proxy.sock, or without
                          XDG_RUNTIME_DIR unix:/tmp/mqd-proxy-$UID/mqd-proxy.sock, in a
                          directory private to the user (made 0700; refused when it is not
                          the user's own, mode 0700, as clients refuse it).
  --stdio                 Serve one debugger on stdin/stdout instead of listening, and exit
                          when it hangs up: what a client's MQD_PROXY_SERVER=ssh://HOST runs
                          through ssh (`ssh HOST mqd-proxy-server --stdio`). The log goes to
                          stderr, which ssh carries back to the debugger's log. Without --dll,
                          the DLL the debugger names by absolute path is loaded (ssh has
                          authenticated the user, and the server runs with their rights).
  --log-level LEVEL       error, warn, info (default), debug or trace.
  --log-file PATH         Append the log to PATH instead of stderr (created with mode 0600; a
                          symbolic link, a FIFO or a file of another user is refused).
  --ready-file PATH       Once listening, write the bound endpoint (with the real port) to PATH:
                          a new file (mode 0644) that replaces whatever file or link was there.
  --shutdown-grace-ms N   On SIGINT/SIGTERM, how long workers get to finish before SIGKILL;
                          also how long a worker may stay busy in the vendor DLL after its
                          debugger hung up (a call the debugger abandoned with
                          MQD_PROXY_ERR_TIMEOUT, e.g. a DLL looping on corrupt target data)
                          before it is killed (default 3000).
  --block-size BYTES      Granularity of the target-memory cache: a read the cache misses asks
                          the debugger for the aligned block of this many bytes around it (a
                          power of two, 4096 to 1048576; default 65536) instead of the DLL's 4-
                          and 8-byte reads. The next epoch asks only for the bytes read.
  --read-around BYTES     From an epoch's second miss on, how much target memory a miss may
                          read around the block it needs, in the same round trip (0 to
                          1048576, or "measured"; default measured: what the debugger
                          reads in half a round trip, by the callbacks' own timings). A
                          fixed bound for a debugger whose timings mislead, and for tests.
  --node-memory           Read the target's memory on this host when the debugger's process is
                          proved to be one of this user's processes here, instead of asking
                          the debugger for every block (for a server beside gdbserver or the
                          debugger's back end on the node). Proof: the process carries the
                          debugger's MPI rank in its environment, the 16 AT_RANDOM bytes
                          the kernel gave it are what the debugger reads at that address,
                          and at each epoch it is stopped and its first read is the
                          debugger's too. Without a proof, and for a recorded session
                          (MQD_PROXY_RECORD), the debugger answers as without this option
                          (default: off;
                          docs/round-trips.md, "Reading the target on its node").
  --state-dir DIR         Where the server keeps what sessions learned: the look-ups made with
                          each DLL build, and the memory each process's last epoch read, so a
                          new session can ask for them in one round trip (default
                          $XDG_STATE_HOME/mqd-proxy or ~/.local/state/mqd-proxy; "none": keep
                          nothing).

Security (docs/security.md):
  --token-file PATH       Clients must present the token in PATH (its first line) before
                          anything else; a wrong or missing token is refused and the
                          connection closed before any session exists. Compared in constant
                          time. The file must be private (mode 600 or 400). REQUIRED for a
                          TCP/TLS listener whose address is not loopback: the server refuses
                          to start without it.
  --tls-cert PATH         PEM certificate (chain) for a tls: listener; clients verify it
                          against MQD_PROXY_TLS_CA and the host name they connect to.
  --tls-key PATH          PEM private key for --tls-cert (unencrypted). Both files are read
                          once at start-up, before --worker-user takes effect.
  --max-sessions N        At most N connections are served at once (default 64); one more is
                          refused with MQD_PROXY_ERR_SESSION_REFUSED and a reason.
  --max-message-mib N     The largest Cap'n Proto message a worker reads, in MiB (default 128,
                          1 to 4096). A bigger message ends that connection only. Keep it
                          above the largest memory a DLL fetches at once (at most 64 MiB)
                          and --block-size, or such replies end the session.
  --idle-timeout SECONDS  End a session that has exchanged nothing with its debugger for
                          SECONDS (default 0: never). The worker logs it and exits; the
                          debugger's next call re-establishes the session.
  --dll-cpu-limit SECONDS  The CPU time one vendor DLL entry point may use (default 60; 0:
                          no limit). A DLL looping on corrupt data is ended with its worker
                          (SIGPROF); the debugger's call gets MQD_PROXY_ERR_WORKER_DIED.
                          Time spent waiting for the debugger does not count.
  --handshake-timeout-ms N  How long a new connection may take for the TLS handshake and the
                          token (default 5000); slower connections are dropped.
  --worker-user NAME      Run each worker (the process that loads the vendor DLL and talks to
                          the client) as user NAME with NAME's primary group only: the
                          privileges are dropped in the forked worker before it reads a byte
                          from the client. Only when the server starts as root; it refuses
                          to start otherwise, and for NAME = root.

  --version               Print the version and exit.
  -h, --help              Print this help and exit.

Signals: SIGINT and SIGTERM stop accepting, end every worker and remove the unix socket.
Exit status: 0 after a clean shutdown, 2 for a usage error, 1 for any other failure.
)";
}

}  // namespace mqd::server
