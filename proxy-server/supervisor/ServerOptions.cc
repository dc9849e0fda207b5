#include "ServerOptions.h"

#include "CommandLine.h"
#include "Endpoint.h"
#include "LearnedLookups.h"
#include "RemoteDebugger.h"
#include "SocketActivation.h"

namespace mqd::server {
namespace {

const char* const kDescription =
    R"(Usage: mqd-proxy-server --dll PATH [--dll PATH ...] [options]
       mqd-proxy-server --stdio [--dll PATH ...] [options]

Runs MPI message-queue (MQD) DLLs on this machine for debuggers elsewhere. A debugger loads
libmqdproxy.so, which forwards every mqs_* call here. Each connection gets its own worker
process, which loads the chosen vendor DLL and relays the DLL's callbacks to the debugger.
)";

const char* const kFooter =
    R"(Signals: SIGINT and SIGTERM stop accepting, end every worker and remove the unix socket.
Exit status: 0 after a clean shutdown, 2 for a usage error, 1 for any other failure.
)";

// Declares every option of the server on `app`, bound to the fields of `o`: each option's
// text, value name, check and default (from `o`'s initial value) in one place.
void declare(CLI::App& app, ServerOptions& o) {
  cmdline::prepare(app, 26);
  app.description(kDescription);
  app.footer(kFooter);
  app.add_option("--dll", o.dlls,
                 "Allow this vendor DLL (repeatable). The first is the default for clients "
                 "that do not name one (MQD_PROXY_DLL on the debugger side). A client may name "
                 "a DLL by the exact PATH given here, by its canonical path, or by its base "
                 "name when that is unambiguous. No other DLL is ever loaded: PATH is resolved "
                 "and the file opened at start-up (a name without a slash is a file in the "
                 "working directory, never searched for), and sessions load that file even if "
                 "PATH is later pointed elsewhere.")
      ->type_name("PATH")
      ->check(cmdline::nonEmpty("a path"));
  app.add_option("--listen", o.listen,
                 "Where to accept debuggers, one of:\n"
                 "* unix:PATH, a unix-domain socket created with mode 0600;\n"
                 "* tcp:HOST:PORT, TCP (PORT 0 picks a free port);\n"
                 "* tcp:PORT or tcp::PORT, TCP on the loopback address 127.0.0.1 (every "
                 "interface only as tcp:0.0.0.0:PORT or tcp:[::]:PORT);\n"
                 "* tls:HOST:PORT, TCP with TLS (needs --tls-cert and --tls-key);\n"
                 "* systemd, the one socket systemd passes (socket activation, "
                 "mqd-proxy-server.socket, Accept=no), under the same rules;\n"
                 "* tls:systemd, that socket (TCP) with TLS.\n"
                 "Default: unix:$XDG_RUNTIME_DIR/mqd-proxy.sock, or without XDG_RUNTIME_DIR "
                 "unix:/tmp/mqd-proxy-$UID/mqd-proxy.sock, in a directory private to the user "
                 "(made 0700; refused when it is not the user's own, mode 0700, as clients "
                 "refuse it).")
      ->type_name("ENDPOINT")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              if (!isActivationListen(value)) Endpoint::parse(value);
              return "";
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
          },
          ""));
  app.add_flag("--stdio", o.stdio,
               "Serve one debugger on stdin/stdout instead of listening, and exit when it hangs "
               "up: what a client's MQD_PROXY_SERVER=ssh://HOST runs through ssh (`ssh HOST "
               "mqd-proxy-server --stdio`). The log goes to stderr, which ssh carries back to "
               "the debugger's log. Without --dll, the DLL the debugger names by absolute path "
               "is loaded (ssh has authenticated the user, and the server runs with their "
               "rights).");
  app.add_option_function<std::string>(
         "--log-level", [&o](const std::string& v) { o.logLevel = parseLogLevel(v); },
         "error, warn, info, debug or trace.")
      ->type_name("LEVEL")
      ->default_str(logLevelName(o.logLevel))
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            try {
              parseLogLevel(value);
              return "";
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
          },
          ""));
  app.add_option("--log-file", o.logFile,
                 "Append the log to PATH instead of stderr (created with mode 0600; a symbolic "
                 "link, a FIFO or a file of another user is refused).")
      ->type_name("PATH");
  app.add_option("--ready-file", o.readyFile,
                 "Once listening, write the bound endpoint (with the real port) to PATH: a new "
                 "file (mode 0644) that replaces whatever file or link was there.")
      ->type_name("PATH");
  app.add_option("--shutdown-grace-ms", o.shutdownGraceMs,
                 "On SIGINT/SIGTERM, how long workers get to finish before SIGKILL; also how "
                 "long a worker may stay busy in the vendor DLL after its debugger hung up (a "
                 "call the debugger abandoned with MQD_PROXY_ERR_TIMEOUT, e.g. a DLL looping on "
                 "corrupt target data) before it is killed.")
      ->type_name("N")
      ->capture_default_str()
      ->check(cmdline::numberBetween(0, 600000));
  app.add_option("--block-size", o.blockSize,
                 "Granularity of the target-memory cache: a read the cache misses asks the "
                 "debugger for the aligned block of this many bytes around it (a power of two, "
                 "4096 to 1048576) instead of the DLL's 4- and 8-byte reads. The next epoch "
                 "asks only for the bytes read.")
      ->type_name("BYTES")
      ->capture_default_str()
      ->check(cmdline::numberBetween(4096, 1 << 20))
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            long size = std::stol(value);  // numberBetween has checked it
            return (size & (size - 1)) == 0 ? "" : "must be a power of two, got " + value;
          },
          ""));
  app.add_option_function<std::string>(
         "--read-around",
         [&o](const std::string& v) {
           if (v == "measured") {
             o.readAround.reset();
           } else {
             o.readAround = std::stoull(v);
           }
         },
         "From an epoch's second miss on (its first, in an epoch nothing guided: a job never "
         "seen), how much target memory a miss may read around the block it needs, in the "
         "same round trip (0 to 4194304, or \"measured\": what the debugger reads in half a "
         "round trip, by the callbacks' own timings). A fixed bound for a debugger whose "
         "timings mislead, and for tests.")
      ->type_name("BYTES")
      ->default_str("measured")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            return value == "measured" ? "" : cmdline::numberBetween(
                                             0, RemoteDebugger::kMaxAroundBytes)(value);
          },
          ""));
  app.add_flag_function(
         "--no-lookup-discovery", [&o](int64_t) { o.lookupDiscovery = false; },
         "Never run an image's set-up in a forked child, with stand-in answers, to find the "
         "look-ups it makes (in a first session with a DLL, when nothing of its look-ups was "
         "learned; the child reaches nothing and its names are asked of the debugger in one "
         "round trip). For a vendor DLL whose set-up must not run twice.");
  app.add_flag("--node-memory", o.nodeMemory,
               "Read the target's memory on this host when the debugger's process is proved to "
               "be one of this user's processes here, instead of asking the debugger for every "
               "block (for a server beside gdbserver or the debugger's back end on the node). "
               "Proof: the process carries the debugger's MPI rank in its environment, the 16 "
               "AT_RANDOM bytes the kernel gave it are what the debugger reads at that address, "
               "and at each epoch it is stopped and its first read is the debugger's too. "
               "Without a proof, and for a recorded session (MQD_PROXY_RECORD), the debugger "
               "answers as without this option (docs/round-trips.md, \"Reading the target on "
               "its node\").");
  app.add_option("--state-dir", o.stateDir,
                 "Where the server keeps what sessions learned: the look-ups made with each DLL "
                 "build, and the memory each process's last epoch read, so a new session can ask "
                 "for them in one round trip (default $XDG_STATE_HOME/mqd-proxy or "
                 "~/.local/state/mqd-proxy; \"none\": keep nothing).")
      ->type_name("DIR")
      ->check(cmdline::nonEmpty("a directory (or none)"));

  const char* security = "Security (docs/security.md)";
  app.add_option("--token-file", o.tokenFile,
                 "Clients must present the token in PATH (its first line) before anything "
                 "else; a wrong or missing token is refused and the connection closed before "
                 "any session exists. Compared in constant time. The file must be private (mode "
                 "600 or 400). REQUIRED for a TCP/TLS listener whose address is not loopback: "
                 "the server refuses to start without it.")
      ->type_name("PATH")
      ->group(security)
      ->check(cmdline::nonEmpty("a path"));
  app.add_option("--tls-cert", o.tlsCert,
                 "PEM certificate (chain) for a tls: listener; clients verify it against "
                 "MQD_PROXY_TLS_CA and the host name they connect to.")
      ->type_name("PATH")
      ->group(security)
      ->check(cmdline::nonEmpty("a path"));
  app.add_option("--tls-key", o.tlsKey,
                 "PEM private key for --tls-cert (unencrypted). Both files are read once at "
                 "start-up, before --worker-user takes effect.")
      ->type_name("PATH")
      ->group(security)
      ->check(cmdline::nonEmpty("a path"));
  app.add_option("--max-sessions", o.maxSessions,
                 "At most N connections are served at once; one more is refused with "
                 "MQD_PROXY_ERR_SESSION_REFUSED and a reason.")
      ->type_name("N")
      ->group(security)
      ->capture_default_str()
      ->check(cmdline::numberBetween(1, 100000));
  app.add_option("--max-message-mib", o.maxMessageMiB,
                 "The largest Cap'n Proto message a worker reads, in MiB (1 to 4096). A bigger "
                 "message ends that connection only. Keep it above the largest memory a DLL "
                 "fetches at once (at most 64 MiB) and --block-size, or such replies end the "
                 "session. What it holds beside 24 MiB, from 32 to 96 MiB, bounds the other "
                 "ranks' memory one update carries to be refreshed ahead.")
      ->type_name("N")
      ->group(security)
      ->capture_default_str()
      ->check(cmdline::numberBetween(1, 4096));
  app.add_option("--idle-timeout", o.idleTimeoutS,
                 "End a session that has exchanged nothing with its debugger for SECONDS (0: "
                 "never). The worker logs it and exits; the debugger's next call re-establishes "
                 "the session.")
      ->type_name("SECONDS")
      ->group(security)
      ->capture_default_str()
      ->check(cmdline::numberBetween(0, 30 * 86400));
  app.add_option("--dll-cpu-limit", o.dllCpuLimitS,
                 "The CPU time one vendor DLL entry point may use (0: no limit). A DLL looping "
                 "on corrupt data is ended with its worker (SIGPROF); the debugger's call gets "
                 "MQD_PROXY_ERR_WORKER_DIED. Time spent waiting for the debugger does not "
                 "count.")
      ->type_name("SECONDS")
      ->group(security)
      ->capture_default_str()
      ->check(cmdline::numberBetween(0, 86400));
  app.add_option("--handshake-timeout-ms", o.handshakeTimeoutMs,
                 "How long a new connection may take for the TLS handshake and the token; "
                 "slower connections are dropped.")
      ->type_name("N")
      ->group(security)
      ->capture_default_str()
      ->check(cmdline::numberBetween(100, 600000));
  app.add_option("--worker-user", o.workerUser,
                 "Run each worker (the process that loads the vendor DLL and talks to the "
                 "client) as user NAME with NAME's primary group only: the privileges are "
                 "dropped in the forked worker before it reads a byte from the client. Only "
                 "when the server starts as root; it refuses to start otherwise, and for NAME = "
                 "root.")
      ->type_name("NAME")
      ->group(security)
      ->check(cmdline::nonEmpty("a user name"));

  app.add_flag("--version", o.version, "Print the version and exit.");
  app.add_flag("-h,--help", o.help, "Print this help and exit.");
}

// The rules between options, once each has been read.
void checkTogether(ServerOptions& o) {
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
    if (listening.isLaunched()) {
      throw UsageError("--listen " + o.listen + ": ssh:// and slurm: are for clients "
                       "(MQD_PROXY_SERVER); ssh or srun runs this server with --stdio");
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
}

}  // namespace

ServerOptions parseServerOptions(int argc, char** argv) {
  ServerOptions o;
  CLI::App app;
  declare(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  if (!app.remaining().empty()) {
    throw UsageError("unknown option \"" + app.remaining().front() + "\" (see --help)");
  }
  if (o.help || o.version) return o;
  checkTogether(o);
  return o;
}

std::string serverHelp() {
  ServerOptions defaults;
  CLI::App app;
  declare(app, defaults);
  return app.help();
}

}  // namespace mqd::server
