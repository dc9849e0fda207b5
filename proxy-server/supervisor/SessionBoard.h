// SessionBoard: what every session of this server is doing, in memory the supervisor and its
// workers share.
//
// The supervisor maps the board before it forks anything and claims a slot for each worker it
// forks; the worker fills in its DLL, the entry point it is running and its counters as it
// goes, with no locks and no system calls. Any worker can read the whole board (that is how
// Proxy.stats answers), and when a worker ends the supervisor reads its slot to log the
// session's one-line summary, and records how it ended. Ended slots are reused, oldest first.
#pragma once

#include <kj/common.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace mqd::server {

// Everything a session counts. Round trips = Calls + Callbacks.
enum class Count : int {
  Calls,            // Session calls answered: round trips the shim started
  Callbacks,        // Debugger calls the server waited for: round trips the server started
  Notifications,    // Debugger calls not waited for (dprints, put_info, DLL output, reposition)
  WireBytesIn,      // bytes received on the connection
  WireBytesOut,     // bytes sent on the connection
  BulkRawBytes,     // bulk payloads (memory, walks) before compression, both directions
  BulkWireBytes,    // the same as they travelled
  LookupHits,       // symbol/type look-ups answered from the session's cache
  LookupMisses,
  ProcessHits,      // process attributes (image, rank, type sizes, job, identity) from cache
  ProcessMisses,
  MemoryHits,       // fetch_data answered from the memory cache
  MemoryMisses,
  BlocksFetched,    // memory blocks read from the debugger
  BlockBytes,       // their bytes
  BlocksPrefetched, // of which requested ahead of need (learned from the previous epoch)
  NodeBlocks,       // memory blocks read on this host from the proved process (--node-memory)
  LookupsPrefetched,// look-ups answered ahead of need (learned from earlier sessions)
  Walks,            // communicator walks recorded
  RefreshedAhead,   // of which for another process than the update's, and kept (refreshAhead)
  DllCalls,         // vendor DLL entry points run (including for walks and repositioning)
  CallsBehind,      // Session calls the shim sent behind another, before its reply: no round
                    // trip of their own (a set-up's has-queues call), not among Calls
  PeerGuesses,      // first updates' reads guessed from a peer's and named to the shim
                    // (SessionService::guessPeers)
  LookupsDiscovered,// look-ups an image's set-up makes, found before it ran (LookupDiscovery)
  kCount
};

const char* countName(Count c);

class SessionBoard {
 public:
  static constexpr int kCounters = static_cast<int>(Count::kCount);

  struct Slot {
    std::atomic<int> state;  // 0 free, 1 open, 2 ended
    int32_t worker;
    uint64_t connection;
    uint64_t key;            // the session ticket's secret (0: no session opened yet)
    int64_t startedMs;
    int64_t endedMs;
    char dll[256];
    char client[32];
    char lastCall[48];
    char exit[48];
    std::atomic<uint64_t> counters[kCounters];
    std::atomic<uint64_t> clientCounters[16];  // reported by the shim, see clientCounterName
    char clientCounterNames[16][32];
  };

  // Maps `slots` slots of shared anonymous memory. Throws std::runtime_error.
  explicit SessionBoard(size_t slots = 128);
  ~SessionBoard();
  SessionBoard(const SessionBoard&) = delete;
  SessionBoard& operator=(const SessionBoard&) = delete;

  // Supervisor: a slot for a new worker (a free one, else the oldest ended one); nullptr if
  // every slot is open.
  Slot* claim(uint64_t connection);
  // Supervisor: the worker ended; `how` is "exit 0", "SIGSEGV", ...
  void end(Slot* slot, const std::string& how);

  // The slot of the session with this ticket (open or ended), if any. A zero key never
  // matches.
  kj::Maybe<const Slot&> find(uint64_t connection, uint64_t key) const;
  void forEach(const std::function<void(const Slot&)>& fn) const;

  // "connection 3 (worker 1234, libompi_dbg_msgq.so): 12 round trips (10 calls, 2 callbacks),
  //  5.1 KiB in, 340 KiB out, ... last call mqs_next_operation, exit 0"
  static std::string summary(const Slot& slot);

 private:
  Slot* slots_;
  size_t count_;
  size_t bytes_;
};

// Copies `text` into a NUL-terminated field of a slot, cut to fit.
void copyField(char* field, size_t size, const std::string& text);

// The counters of the session one worker serves: its slot of the board, or a private slot that
// nobody reads when it has none (a worker without a board, a unit test). The worker owns one
// (runWorker) and hands it to everything that counts; no lock and no system call.
class Metrics {
 public:
  explicit Metrics(kj::Maybe<SessionBoard::Slot&> slot) : slot_(&slot.orDefault(sink_)) {}
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void add(Count c, uint64_t n = 1) {
    slot_->counters[static_cast<int>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t get(Count c) const {
    return slot_->counters[static_cast<int>(c)].load(std::memory_order_relaxed);
  }
  void setLastCall(const char* entryPoint);
  SessionBoard::Slot& slot() { return *slot_; }
  // From now on nothing is counted on the board (a forked child's copy, whose board is the
  // parent's shared memory: LookupDiscovery).
  void detach() { slot_ = &sink_; }

 private:
  SessionBoard::Slot sink_{};
  SessionBoard::Slot* slot_;
};

}  // namespace mqd::server
