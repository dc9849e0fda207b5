// mqd-proxy: the command-line client of mqd-proxy-server. The command line is declared in
// declare() (and shown by --help); each command is in its own file (Cli.h).
#include <kj/async-io.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "Cli.h"
#include "CommandLine.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "SlurmJob.h"
#include "Replay.h"

using namespace mqd;
using namespace mqd::client;

namespace {

const char* const kDescription = R"(Usage: mqd-proxy [OPTIONS] COMMAND [--json]

Talks to an mqd-proxy-server, shows the configuration a debugger's libmqdproxy.so uses, and
analyses a hung MPI job's saved snapshot for deadlocks.
)";

const char* const kFooter =
    R"(Exit status: 0 success, 1 failure (explained on stderr or in the output), 2 usage error.

Settings, shared with the debugger's libmqdproxy.so: each can be set in the environment or
in the configuration file (environment wins; `mqd-proxy config` shows the result):
)";

// replay parses its own operands (Replay.h); a --dll given before the command goes with them.
int replayEntry(cli::Context& c) {
  if (c.config.sources["dll"] == "--dll") {
    c.args.push_back("--dll");
    c.args.push_back(c.config.dll);
  }
  return replay::replayCommand(c.config, c.args, c.json);
}

struct Command {
  const char* name;
  int (*run)(cli::Context&);
  bool operands;             // takes operands after the command
  const char* description;   // "OPERANDS\nWHAT IT DOES" (common/CommandLine.h)
};

const Command kCommands[] = {
    {"config", cli::configCommand, false,
     "\nThe effective configuration: every setting, its value, and where the value came from "
     "(default, configuration file and line, or environment variable)."},
    {"ping", cli::pingCommand, false,
     "\nConnects (timing the connection and admission) and measures --count round trips to "
     "the server."},
    {"info", cli::infoCommand, false,
     "\nThe server's version, architecture, byte order and pointer size, and each vendor DLL "
     "it offers, loaded in a session of its own: version string, compatibility level, address "
     "width, build id. Exit 1 when a DLL does not load."},
    {"stats", cli::statsCommand, false,
     "\nEvery session open on the server and the most recent ended ones: round trips (calls "
     "the debugger's shim made, callbacks the server made), messages, bytes on the wire, bulk "
     "bytes before and after compression, cache hits and misses by kind, and what the shim "
     "reported (calls answered from recorded walks, error texts)."},
    {"doctor", cli::doctorCommand, false,
     "\nA checklist: configuration, server reachable, authentication, version, architecture, "
     "latency, and the vendor DLL loads; each failure says what to fix. Exit 1 when any check "
     "fails."},
    {"replay", replayEntry, true, replay::replayUsage()},
    {"graph", cli::graphCommand, true, cli::graphUsage()},
};

struct Parsed {
  bool help = false;
  bool version = false;
  std::string timeoutProblem;  // --timeout's value is not a setting's value
};

// Declares the command line on `app`, bound to `c` (whose configuration is already loaded:
// an option overrides the setting and becomes its source) and `p`.
void declare(CLI::App& app, cli::Context& c, Parsed& p) {
  cmdline::prepare(app, 22);
  app.description(kDescription);
  app.footer(std::string(kFooter) + ClientConfig::help());
  app.fallthrough();  // the options below may come after the command too
  for (const Command& command : kCommands) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    sub->set_help_flag();
    if (std::string(command.name) == "graph") {
      // Every operand and option after "graph" is the analysis's (GraphCommand.cc), even one
      // this program has too.
      sub->prefix_command();
      sub->fallthrough(false);
    }
  }
  app.require_subcommand(0, 1);
  app.add_option_function<std::string>(
         "--server",
         [&c](const std::string& v) {
           c.config.server = v;
           c.config.sources["server"] = "--server";
         },
         "unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, ssh://[USER@]HOST[:PORT][/PATH] or "
         "slurm:JOB[@NODE][/PATH]; several, separated by spaces, or slurm:JOB (one on every node "
         "of the job) for a server on every node: ping, info, stats and doctor ask each in turn "
         "(default: the server setting below).")
      ->type_name("ENDPOINT")
      ->check(cmdline::nonEmpty("an endpoint"));
  app.add_option_function<std::string>(
         "--dll",
         [&c](const std::string& v) {
           c.config.dll = v;
           c.config.sources["dll"] = "--dll";
         },
         "The vendor DLL for info, doctor and replay (default: the dll setting).")
      ->type_name("PATH")
      ->check(cmdline::nonEmpty("a path"));
  app.add_option_function<std::string>(
         "--timeout",
         [&c, &p](const std::string& v) {
           p.timeoutProblem = c.config.set("timeout", v);
           c.config.sources["timeout"] = "--timeout";
         },
         "Give up after this long without an answer (default: the timeout setting).")
      ->type_name("SECONDS");
  app.add_option("--count", c.count, "Round trips for ping and doctor.")
      ->type_name("N")
      ->capture_default_str()
      ->check(cmdline::numberBetween(1, 100000));
  app.add_flag("--json", c.json,
               "Machine-readable output (config, ping, info, stats, replay, graph).");
  app.add_flag("--version", p.version, "Print the version of this client and exit.");
  app.add_flag("-h,--help", p.help, "Print this help and exit.");
}

// Runs `command` with `c`: its exit status, or 1 with a sentence for a failure that escapes
// it.
int runCommand(const Command& command, cli::Context& c) {
  try {
    return command.run(c);
  } catch (const ProxyError& e) {
    std::fprintf(stderr, "mqd-proxy: %s\n", cli::describeFailure(e).c_str());
    return 1;
  } catch (const kj::Exception& e) {
    std::fprintf(stderr, "mqd-proxy: %s\n", cli::describeFailure(rpcFailure(e)).c_str());
    return 1;
  } catch (const std::exception& e) {
    // Each command reports its own failures; one that escapes is a bug, but it is still said
    // in a sentence and an exit status, never an abort and a core file.
    std::fprintf(stderr, "mqd-proxy: %s failed: %s\n", command.name, e.what());
    return 1;
  }
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
  CLI::App app;
  Parsed p;
  declare(app, c, p);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return usageError(e.what());
  }
  const Command* chosen = nullptr;
  for (const Command& command : kCommands) {
    if (app.got_subcommand(command.name)) chosen = &command;
  }
  bool graph = chosen != nullptr && chosen->run == cli::graphCommand;
  if (p.help) {  // (not after graph: its --help is the analysis's)
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  if (p.version) {
    std::printf("mqd-proxy %s\n", MQD_VERSION);
    return 0;
  }
  if (!p.timeoutProblem.empty()) return usageError("--timeout: " + p.timeoutProblem);
  // What no option claimed: the command's operands, or a mistake said in our words.
  std::vector<std::string> extra = app.remaining();
  for (const std::string& a : extra) {
    if (chosen != nullptr && chosen->operands) break;  // replay's options are its own
    if (!a.empty() && a[0] == '-') return usageError("unexpected argument \"" + a + "\"");
  }
  if (chosen == nullptr) {
    if (!extra.empty()) return usageError("unknown command \"" + extra.front() + "\"");
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  if (!chosen->operands && !extra.empty()) {
    return usageError(std::string(chosen->name) + " takes no operand \"" + extra.front() + "\"");
  }
  c.args = graph ? app.get_subcommand("graph")->remaining() : extra;
  // Configuration problems are the subject of config and doctor; the others say them first,
  // but graph, which uses no setting.
  std::string command = chosen->name;
  if (command != "config" && command != "doctor" && !graph) {
    for (const std::string& problem : c.problems) {
      std::fprintf(stderr, "mqd-proxy: %s\n", problem.c_str());
    }
  }
  // A server on every node (several in the server setting, or slurm:JOB: one on each node of
  // the job, SlurmJob.h): ping, info, stats and doctor ask each in turn; the other commands
  // take one.
  if (command == "config" || graph) return runCommand(*chosen, c);
  std::vector<std::string> servers = client::expandSlurmJobs(c.config.servers(), c.config.timeout);
  if (servers.size() == 1) c.config.server = servers[0];
  if (servers.size() > 1) {
    bool eachInTurn = command == "ping" || command == "info" || command == "stats" ||
                      command == "doctor";
    if (!eachInTurn || c.json) {
      return usageError("the server setting names " + std::to_string(servers.size()) +
                        " servers: pick one with --server for " + command +
                        (c.json ? " --json" : ""));
    }
    int worst = 0;
    for (size_t i = 0; i < servers.size(); ++i) {
      std::printf("%s== %s ==\n", i == 0 ? "" : "\n", servers[i].c_str());
      std::fflush(stdout);
      cli::Context one = c;
      one.config.server = servers[i];
      worst = std::max(worst, runCommand(*chosen, one));
    }
    return worst;
  }
  return runCommand(*chosen, c);
}
