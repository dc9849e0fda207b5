// mqd-proxy: the command-line client of mqd-proxy-server.
//
//   mqd-proxy [--server ENDPOINT] [--timeout SECONDS] stats [--json]
//   mqd-proxy [--server ENDPOINT] [--timeout SECONDS] replay FILE [--dll PATH] [--json] [--stats]
//
// ENDPOINT defaults to $MQD_PROXY_SERVER, else the default unix socket. See usage() for the
// whole command line.
#include <kj/async-io.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ClientConfig.h"
#include "Connection.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "Replay.h"

using namespace mqd;
using namespace mqd::client;

namespace {

std::string usage() {
  return std::string(R"(Usage: mqd-proxy [--server ENDPOINT] [--timeout SECONDS] COMMAND [ARGS] [--json]

Talks to an mqd-proxy-server.

Commands:
  stats     Every session open on the server and the most recent ended ones: round trips
            (calls the debugger's shim made, callbacks the server made), messages, bytes on
            the wire, bulk bytes before and after compression, cache hits and misses by kind,
            and what the shim reported (calls answered from recorded walks, error texts).
)") + replayUsage() + R"(
Options:
  --server ENDPOINT   unix:PATH or tcp:HOST:PORT (default: $MQD_PROXY_SERVER, else the default
                      unix socket)
  --timeout SECONDS   give up after this long without an answer (default: $MQD_PROXY_TIMEOUT,
                      else 30)
  --json              machine-readable output
  -h, --help          this text
)" +
         "\nEnvironment of a debugger that loads libmqdproxy.so (MQD_PROXY_SERVER and\n"
         "MQD_PROXY_TIMEOUT are also read by this command):\n" +
         ClientConfig::help();
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

int stats(Connection& connection, kj::WaitScope& waitScope, bool json) {
  auto response = connection.proxy().statsRequest().send().wait(waitScope);
  auto sessions = response.getSessions();
  if (json) {
    std::printf("[");
    for (unsigned i = 0; i < sessions.size(); ++i) {
      auto s = sessions[i];
      std::printf("%s\n {\"connection\": %llu, \"worker\": %d, \"state\": %s, \"dll\": %s, "
                  "\"client\": %s, \"started_ms\": %lld, \"ended_ms\": %lld, \"last_call\": %s, "
                  "\"exit\": %s, \"counters\": {",
                  i ? "," : "", static_cast<unsigned long long>(s.getConnection()), s.getWorker(),
                  jsonString(s.getState()).c_str(), jsonString(s.getDll()).c_str(),
                  jsonString(s.getClient()).c_str(), static_cast<long long>(s.getStartedMs()),
                  static_cast<long long>(s.getEndedMs()), jsonString(s.getLastCall()).c_str(),
                  jsonString(s.getExit()).c_str());
      auto counters = s.getCounters();
      for (unsigned k = 0; k < counters.size(); ++k) {
        std::printf("%s%s: %llu", k ? ", " : "", jsonString(counters[k].getName()).c_str(),
                    static_cast<unsigned long long>(counters[k].getValue()));
      }
      std::printf("}}");
    }
    std::printf("\n]\n");
    return 0;
  }
  std::printf("%u session(s) on %s\n", sessions.size(), connection.endpoint().c_str());
  for (auto s : sessions) {
    auto get = [&s](const char* name) -> uint64_t {
      for (auto c : s.getCounters()) {
        if (c.getName() == name) return c.getValue();
      }
      return 0;
    };
    std::string dll = s.getDll();
    size_t slash = dll.rfind('/');
    std::printf("\nconnection %llu: %s, worker %d, %s, %s debugger%s%s\n",
                static_cast<unsigned long long>(s.getConnection()), s.getState().cStr(),
                s.getWorker(), dll.empty() ? "no DLL" : dll.substr(slash + 1).c_str(),
                s.getClient().size() ? s.getClient().cStr() : "unknown",
                s.getExit().size() ? ", ended: " : "", s.getExit().cStr());
    std::printf("  round trips %llu: %llu calls from the shim, %llu callbacks from the server; "
                "%llu notifications\n",
                static_cast<unsigned long long>(get("rt.calls") + get("rt.callbacks")),
                static_cast<unsigned long long>(get("rt.calls")),
                static_cast<unsigned long long>(get("rt.callbacks")),
                static_cast<unsigned long long>(get("msg.notifications")));
    std::printf("  wire: %s in, %s out; bulk: %s before compression, %s sent\n",
                formatBytes(get("wire.bytes_in")).c_str(), formatBytes(get("wire.bytes_out")).c_str(),
                formatBytes(get("bulk.raw_bytes")).c_str(), formatBytes(get("bulk.wire_bytes")).c_str());
    std::printf("  cache: memory %llu hits / %llu misses (%llu blocks, %llu fetched ahead); "
                "look-ups %llu hits / %llu misses (%llu fetched ahead); process %llu / %llu; "
                "%llu walks\n",
                static_cast<unsigned long long>(get("cache.memory_hits")),
                static_cast<unsigned long long>(get("cache.memory_misses")),
                static_cast<unsigned long long>(get("memory.blocks")),
                static_cast<unsigned long long>(get("memory.blocks_prefetched")),
                static_cast<unsigned long long>(get("cache.lookup_hits")),
                static_cast<unsigned long long>(get("cache.lookup_misses")),
                static_cast<unsigned long long>(get("cache.lookups_prefetched")),
                static_cast<unsigned long long>(get("cache.process_hits")),
                static_cast<unsigned long long>(get("cache.process_misses")),
                static_cast<unsigned long long>(get("walk.recorded")));
    std::printf(
        "  shim (as of its last update_communicator_list): %llu calls forwarded, %llu answered "
        "locally (%llu from walks, %llu error texts), %llu callbacks served\n",
        static_cast<unsigned long long>(get("client.calls_forwarded")),
        static_cast<unsigned long long>(get("client.calls_from_walk") +
                                        get("client.error_texts_local")),
        static_cast<unsigned long long>(get("client.calls_from_walk")),
        static_cast<unsigned long long>(get("client.error_texts_local")),
        static_cast<unsigned long long>(get("client.callbacks_served")));
    std::printf("  last call %s\n", s.getLastCall().size() ? s.getLastCall().cStr() : "none");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> problems;
  ClientConfig config = ClientConfig::fromEnvironment(&problems);
  std::string command;
  std::vector<std::string> commandArgs;  // what the command itself takes (replay)
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    } else if (a == "--server" && i + 1 < argc) {
      config.server = argv[++i];
    } else if (a == "--timeout" && i + 1 < argc) {
      double seconds = std::atof(argv[++i]);
      if (seconds <= 0) {
        std::fprintf(stderr, "mqd-proxy: --timeout needs a positive number of seconds\n");
        return 2;
      }
      config.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    } else if (a == "--json") {
      json = true;
    } else if (command.empty() && a[0] != '-') {
      command = a;
    } else if (command == "replay") {
      commandArgs.push_back(a);
    } else {
      std::fprintf(stderr, "mqd-proxy: unexpected argument \"%s\" (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (command.empty()) {
    std::fputs(usage().c_str(), stderr);
    return 2;
  }
  if (command == "replay") return replayCommand(config, commandArgs, json);
  if (command != "stats") {
    std::fprintf(stderr, "mqd-proxy: unknown command \"%s\" (see --help)\n", command.c_str());
    return 2;
  }
  try {
    auto io = kj::setupAsyncIo();
    auto connection = Connection::connect(io, config).wait(io.waitScope);
    return stats(*connection, io.waitScope, json);
  } catch (const kj::Exception& e) {
    std::string detail;
    int code = fromWireException(e, MQD_PROXY_ERR_UNREACHABLE, &detail);
    std::fprintf(stderr, "mqd-proxy: %s: %s\n", proxyErrorText(code), detail.c_str());
    return 1;
  }
}
