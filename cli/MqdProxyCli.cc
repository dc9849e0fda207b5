// mqd-proxy: the command-line client of mqd-proxy-server. See usage() for the command line;
// each command is in its own file (Cli.h).
#include <kj/async-io.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "Cli.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "Replay.h"

using namespace mqd;
using namespace mqd::client;

namespace {

std::string usage() {
  return std::string(R"(Usage: mqd-proxy [OPTIONS] COMMAND [--json]

Talks to an mqd-proxy-server, shows the configuration a debugger's libmqdproxy.so uses, and
analyses a hung MPI job's saved snapshot for deadlocks.

Commands:
  config    The effective configuration: every setting, its value, and where the value
            came from (default, configuration file and line, or environment variable).
  ping      Connects (timing the connection and admission) and measures --count round
            trips to the server.
  info      The server's version, architecture, byte order and pointer size, and each vendor
            DLL it offers, loaded in a session of its own: version string, compatibility
            level, address width, build id. Exit 1 when a DLL does not load.
  stats     Every session open on the server and the most recent ended ones: round trips
            (calls the debugger's shim made, callbacks the server made), messages, bytes on
            the wire, bulk bytes before and after compression, cache hits and misses by kind,
            and what the shim reported (calls answered from recorded walks, error texts).
  doctor    A checklist: configuration, server reachable, authentication, version,
            architecture, latency, and the vendor DLL loads; each failure says what to fix.
            Exit 1 when any check fails.
)") + replay::replayUsage() + cli::graphUsage() + R"(
Options:
  --server ENDPOINT   unix:PATH, tcp:HOST:PORT, tls:HOST:PORT or ssh://[USER@]HOST[:PORT][/PATH]
                      (default: the server setting below)
  --dll PATH          the vendor DLL for info and doctor (default: the dll setting)
  --timeout SECONDS   give up after this long without an answer (default: the timeout
                      setting, 30)
  --count N           round trips for ping and doctor (default 5)
  --json              machine-readable output (config, ping, info, stats)
  -h, --help          this text
  --version           the version of this client

Exit status: 0 success, 1 failure (explained on stderr or in the output), 2 usage error.

Settings, shared with the debugger's libmqdproxy.so: each can be set in the environment or
in the configuration file (environment wins; `mqd-proxy config` shows the result):
)" + ClientConfig::help();
}

// replay parses its own operands (Replay.h); a --dll given before the command goes with them.
int replayEntry(cli::Context& c) {
  if (c.config.sources["dll"] == "--dll") {
    c.args.push_back("--dll");
    c.args.push_back(c.config.dll);
  }
  return replay::replayCommand(c.config, c.args, c.json);
}

int usageError(const std::string& why) {
  std::fprintf(stderr, "mqd-proxy: %s (see --help)\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Context c;
  c.config = ClientConfig::load(&c.problems);
  logSetComponent("mqd-proxy");
  logSetLevel(c.config.logLevel);
  std::string command;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (command == "graph") {
      c.args.push_back(a);  // every operand and option is the analysis's (GraphCommand.cc)
    } else if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("mqd-proxy %s\n", MQD_VERSION);
      return 0;
    } else if (command == "replay" && a != "--server" && a != "--timeout" && a != "--json") {
      c.args.push_back(a);  // replay's own FILE, --dll and --stats (Replay.h)
    } else if (a == "--server") {
      const char* v = value();
      if (v == nullptr) return usageError("--server needs an endpoint");
      c.config.server = v;
      c.config.sources["server"] = "--server";
    } else if (a == "--dll") {
      const char* v = value();
      if (v == nullptr) return usageError("--dll needs a path");
      c.config.dll = v;
      c.config.sources["dll"] = "--dll";
    } else if (a == "--timeout") {
      const char* v = value();
      if (v == nullptr) return usageError("--timeout needs a number of seconds");
      std::string problem = c.config.set("timeout", v);
      if (!problem.empty()) return usageError("--timeout: " + problem);
      c.config.sources["timeout"] = "--timeout";
    } else if (a == "--count") {
      const char* v = value();
      int n = v != nullptr ? std::atoi(v) : 0;
      if (n < 1 || n > 100000) return usageError("--count needs a number from 1 to 100000");
      c.count = n;
    } else if (a == "--json") {
      c.json = true;
    } else if (command.empty() && !a.empty() && a[0] != '-') {
      command = a;
    } else if (!command.empty() && !a.empty() && a[0] != '-') {
      c.args.push_back(a);
    } else {
      return usageError("unexpected argument \"" + a + "\"");
    }
  }
  if (command.empty()) {
    std::fputs(usage().c_str(), stderr);
    return 2;
  }
  struct Entry {
    const char* name;
    int (*run)(cli::Context&);
    bool operands;  // takes operands after the command
  };
  static const Entry commands[] = {
      {"config", cli::configCommand, false}, {"ping", cli::pingCommand, false},
      {"info", cli::infoCommand, false},     {"stats", cli::statsCommand, false},
      {"doctor", cli::doctorCommand, false}, {"replay", replayEntry, true},
      {"graph", cli::graphCommand, true},
  };
  const Entry* chosen = nullptr;
  for (const Entry& e : commands) {
    if (command == e.name) chosen = &e;
  }
  if (chosen == nullptr) return usageError("unknown command \"" + command + "\"");
  if (!chosen->operands && !c.args.empty()) {
    return usageError(command + " takes no operand \"" + c.args[0] + "\"");
  }
  // Configuration problems are the subject of config and doctor; the others say them first,
  // but graph, which uses no setting.
  if (command != "config" && command != "doctor" && command != "graph") {
    for (const std::string& p : c.problems) std::fprintf(stderr, "mqd-proxy: %s\n", p.c_str());
  }
  try {
    return chosen->run(c);
  } catch (const ProxyError& e) {
    std::fprintf(stderr, "mqd-proxy: %s\n", cli::describeFailure(e).c_str());
    return 1;
  } catch (const kj::Exception& e) {
    std::fprintf(stderr, "mqd-proxy: %s\n", cli::describeFailure(rpcFailure(e)).c_str());
    return 1;
  } catch (const std::exception& e) {
    // Each command reports its own failures; one that escapes is a bug, but it is still said
    // in a sentence and an exit status, never an abort and a core file.
    std::fprintf(stderr, "mqd-proxy: %s failed: %s\n", command.c_str(), e.what());
    return 1;
  }
}
