// mqd-proxy stats: every session on the server with its counters (Cli.h).
#include <cstdio>

#include "Cli.h"
#include "Json.h"
#include "Log.h"

namespace mqd::client::cli {
namespace {

int printStats(Connection& connection, kj::WaitScope& waitScope, bool json) {
  auto response = connection.proxy().statsRequest().send().wait(waitScope);
  auto sessions = response.getSessions();
  if (json) {
    Json out = Json::array();
    for (auto s : sessions) {
      Json counters = Json::object();
      for (auto counter : s.getCounters()) counters.set(counter.getName(), counter.getValue());
      out.push(Json::object()
                   .set("connection", s.getConnection())
                   .set("worker", s.getWorker())
                   .set("state", s.getState().cStr())
                   .set("dll", s.getDll().cStr())
                   .set("client", s.getClient().cStr())
                   .set("started_ms", s.getStartedMs())
                   .set("ended_ms", s.getEndedMs())
                   .set("last_call", s.getLastCall().cStr())
                   .set("exit", s.getExit().cStr())
                   .set("counters", std::move(counters)));
    }
    std::fputs(out.encode().c_str(), stdout);
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
  auto connection = Connection::connectNow(io, c.config);
  return printStats(*connection, io.waitScope, c.json);
}

}  // namespace mqd::client::cli
