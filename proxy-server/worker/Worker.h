// Worker: the process that serves one connection.
//
// Forked by the Supervisor for each accepted connection (no exec: a qemu-user emulated server
// cannot exec itself). It runs the kj event loop and Cap'n Proto RPC on the connection, and
// loads at most one vendor DLL, for at most one session. When the peer disconnects, the worker
// ends (killed by its DisconnectWatchdog if a DLL call keeps it busy past the grace period); a
// DLL crash ends only this worker.
#pragma once

#include <capnp/message.h>
#include <kj/async-io.h>
#include <kj/common.h>

#include <cstdint>
#include <optional>
#include <string>

#include "Admission.h"
#include "DllAllowList.h"
#include "SessionBoard.h"

namespace mqd::server {

class DllOutput;

struct WorkerConfig {
  const DllAllowList* dlls;
  std::string stateDir;       // learned look-ups (empty: not kept)
  uint32_t blockSize;         // target memory block size
  // The board is shared with the supervisor and the other workers; none without a supervisor
  // (the fuzzer). The slot is this worker's entry on it; none when the board was full (the
  // session goes on, unlisted). Not settings but the places the worker writes what it does,
  // so written through a const WorkerConfig too (mutable).
  mutable kj::Maybe<SessionBoard&> board;
  mutable kj::Maybe<SessionBoard::Slot&> slot;
  const AdmissionPolicy* admission;  // TLS and token, checked before any RPC
  uint64_t traversalLimitWords;      // the largest message read (--max-message-mib)
  int idleTimeoutS;                  // end the session after this long silent (0: never)
  int dllCpuLimitS;                  // CPU seconds per DLL call (CpuWatchdog; 0: no limit)
  int disconnectGraceMs;             // --shutdown-grace-ms: a worker still busy in the DLL
                                     // this long after its debugger hung up is killed
                                     // (DisconnectWatchdog)
  bool nodeMemory;                   // --node-memory (RemoteDebugger::fromNode)
  std::optional<uint64_t> readAround;  // --read-around (RemoteDebugger::aroundBudget)
  bool lookupDiscovery;                // not --no-lookup-discovery (LookupDiscovery)
};

// What a session offers for the other processes' memory of one update (openSession's
// refreshAheadBytes): as much as a message of `traversalLimitWords` holds beside the process's
// own blocks, with room to spare, from wire::MAX_REFRESH_AHEAD_BYTES to
// wire::REFRESH_AHEAD_BYTES_CEILING.
uint32_t refreshAheadBytesFor(uint64_t traversalLimitWords);

// Limits on every message a client sends on a connection (the ReaderOptions of the RPC
// network; clients are untrusted: these are what a hostile peer can make a worker do).
//
// WorkerConfig::traversalLimitWords (--max-message-mib, default 128 MiB) bounds the size of
// one message AND the words a worker traverses in it: Cap'n Proto 0.9 refuses a message whose
// segment table announces more words than the traversal limit, before allocating room for it,
// and the connection then ends. The largest legitimate client message is a memory reply
// (fetch_data, fetchBlocks): at most 64 MiB of target memory (CallbackTables,
// RemoteDebugger::kMaxPrefetchBytes).
// How deeply structs and lists may nest in a message. The deepest legitimate client message
// is a memory reply: Message > Return > Payload > results > blocks > MemoryBlock > Bulk > Data,
// 8 levels; 32 leaves room and bounds the recursion of Cap'n Proto's own traversals (capnp's
// default is 64).
constexpr int kMaxMessageNesting = 32;

// The ReaderOptions above, for `config`.
capnp::ReaderOptions connectionReaderOptions(const WorkerConfig& config);

// Serves one connection: Cap'n Proto RPC on `stream`, with a fresh ProxyService (so at most
// one session and one loaded DLL) as its bootstrap capability. The promise resolves when the
// peer disconnects (an orderly close, end of stream, or a protocol error that made the RPC
// system drop the connection, an oversized message included, which is logged). Destroying the
// promise tears down the connection: the RPC system, every capability and session on it, and
// the DLL it loaded. `stream`, `config`, `output` (none: DLL output is not captured), `timer`
// (paces Proxy.postMortem) and `metrics` (the session's counters) must outlive the promise.
// Must run on a thread with a kj event loop.
kj::Promise<void> serveConnection(kj::AsyncIoStream& stream, const WorkerConfig& config,
                                  kj::Maybe<DllOutput&> output, kj::Timer& timer,
                                  Metrics& metrics);

// Admits the connection on `fd` (taking ownership; see Admission.h), then serves it
// (serveConnection) until the peer disconnects, a message exceeds the traversal limit, or the
// session stays idle for `idleTimeoutS`. Returns the process exit status: 0 after a normal
// disconnect, a refusal or an idle timeout, 1 on an internal failure (an oversized message
// included).
int runWorker(int fd, const WorkerConfig& config);

}  // namespace mqd::server
