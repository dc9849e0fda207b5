// mqd-proxy stats: every session on the server with its counters (Cli.h).
#include <cstdio>

#include "Cli.h"
#include "Log.h"

namespace mqd::client::cli {
namespace {

int printStats(Connection& connection, kj::WaitScope& waitScope, bool json) {
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
                "%llu calls sent behind another, %llu notifications\n",
                static_cast<unsigned long long>(get("rt.calls") + get("rt.callbacks")),
                static_cast<unsigned long long>(get("rt.calls")),
                static_cast<unsigned long long>(get("rt.callbacks")),
                static_cast<unsigned long long>(get("rt.calls_behind")),
                static_cast<unsigned long long>(get("msg.notifications")));
    std::printf("  wire: %s in, %s out; bulk: %s before compression, %s sent\n",
                formatBytes(get("wire.bytes_in")).c_str(), formatBytes(get("wire.bytes_out")).c_str(),
                formatBytes(get("bulk.raw_bytes")).c_str(), formatBytes(get("bulk.wire_bytes")).c_str());
    std::printf("  cache: memory %llu hits / %llu misses (%llu blocks, %llu fetched ahead, %llu read "
                "on the node); "
                "look-ups %llu hits / %llu misses (%llu fetched ahead); process %llu / %llu; "
                "%llu walks (%llu refreshed ahead); %llu first updates guessed from a peer's\n",
                static_cast<unsigned long long>(get("cache.memory_hits")),
                static_cast<unsigned long long>(get("cache.memory_misses")),
                static_cast<unsigned long long>(get("memory.blocks")),
                static_cast<unsigned long long>(get("memory.blocks_prefetched")),
                static_cast<unsigned long long>(get("memory.node_blocks")),
                static_cast<unsigned long long>(get("cache.lookup_hits")),
                static_cast<unsigned long long>(get("cache.lookup_misses")),
                static_cast<unsigned long long>(get("cache.lookups_prefetched")),
                static_cast<unsigned long long>(get("cache.process_hits")),
                static_cast<unsigned long long>(get("cache.process_misses")),
                static_cast<unsigned long long>(get("walk.recorded")),
                static_cast<unsigned long long>(get("walk.refreshed_ahead")),
                static_cast<unsigned long long>(get("memory.peer_guesses")));
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

int statsCommand(Context& c) {
  auto io = kj::setupAsyncIo();
  auto connection = Connection::connect(io, c.config).wait(io.waitScope);
  return printStats(*connection, io.waitScope, c.json);
}

}  // namespace mqd::client::cli
