// RemoteDebugger: the debugger as the server sees it, across the network, with the caches
// that make a dump cost tens of round trips instead of tens of thousands.
//
// The callback trampolines (CallbackTables) call in here; each answer comes from a cache when
// the session's cache policy allows and the answer is known, and from a Debugger RPC awaited
// on the DLL call's fiber otherwise:
//
//   policy off    every callback is a round trip (the naive baseline);
//   policy call   symbol and type look-ups are kept for the session, a process's image and type
//                 sizes while it stays set up, its rank, job and identity and the debugger's
//                 error texts for one mqs_* call; target memory is read in blocks and kept for
//                 one mqs_* call;
//   policy epoch  target memory is kept for the epoch (SessionService decides when one ends),
//                 the blocks of the previous epoch are fetched ahead in one round trip, and
//                 the look-ups of earlier sessions with the same DLL, and of the images set up
//                 earlier in this session, are fetched ahead at image set-up, in one round
//                 trip.
//
// Notifications the DLL causes (dprints, put_*_info, its output) are sent without waiting, in
// order, or recorded into the DllCall's recorder when the call is being recorded for a walk.
// What the DLL printed is relayed (DllHost::relayDllOutput) right before anything else leaves
// for the debugger, a request or a notification, and never for an answer from a cache.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ConsumedLookups.h"
#include "DebuggerObjects.h"
#include "DllCall.h"
#include "StringPool.h"
#include "LookupKey.h"
#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::server {

class RemoteDebugger {
 public:
  struct Options {
    wire::CachePolicy policy = wire::CachePolicy::EPOCH;
    bool compress = false;
    uint32_t blockSize = 64 * 1024;
    bool nodeMemory = false;  // --node-memory: read a proved target on this host (fromNode)
    // The bound on the blocks read around a miss (aroundBudget), fixed (--read-around: a
    // debugger whose timings mislead, and tests, whose verdicts must not depend on the
    // machine's speed). nullopt: from the callbacks' timings.
    std::optional<uint64_t> aroundBytes;
    // Whether an image's look-ups may be found before its set-up (LookupDiscovery; the
    // server's --no-lookup-discovery turns it off).
    bool lookupDiscovery = true;
    // The most memory of other processes one update may carry to be refreshed ahead
    // (openSession's refreshAheadBytes: refreshAheadBytesFor).
    uint32_t refreshAheadBytes = wire::MAX_REFRESH_AHEAD_BYTES;
    // With nodeMemory: the processes of this host listed as the session opened (openSession's
    // nodeProcesses), by pid, each with its stack pointer then (0: not known): whose stack a
    // window the shim read with a set-up is (proveAheadOnNode).
    std::map<pid_t, uint64_t> listedStacks;
  };

  RemoteDebugger(wire::Debugger::Client client, Options options);

  wire::Debugger::Client& client() { return client_; }
  const Options& options() const { return options_; }
  bool caches() const { return options_.policy != wire::CachePolicy::OFF; }

  // ---- image callbacks ----
  int findSymbol(DllCall& call, RemoteImage& image, const char* name, mqs_taddr_t* addr);
  int findFunction(DllCall& call, RemoteImage& image, const char* name, int lang,
                   mqs_taddr_t* addr);
  uint64_t findType(DllCall& call, RemoteImage& image, const char* name, int lang);
  int fieldOffset(DllCall& call, uint64_t type, const char* field);
  int sizeOf(DllCall& call, uint64_t type);
  void getTypeSizes(DllCall& call, RemoteProcess& process, mqs_target_type_sizes* sizes);

  // ---- process and job callbacks ----
  int fetchData(DllCall& call, RemoteProcess& process, uint64_t address, int size, void* buf);
  int globalRank(DllCall& call, RemoteProcess& process);
  uint64_t image(DllCall& call, RemoteProcess& process);
  uint64_t job(DllCall& call, RemoteProcess& process);
  int identity(DllCall& call, RemoteProcess& process);
  uint64_t process(DllCall& call, RemoteJob& job, int index);

  // ---- basic ----
  char* errorString(DllCall& call, int code);
  // dprints, put_*_info, DLL output: recorded (walks) or sent without waiting.
  void notify(DllCall& call, Effect effect);

  // ---- lifetimes of what is kept ----
  // A new mqs_* call begins: answers kept for one call are dropped (process ranks, jobs and
  // identities, error texts, and in policy call target memory).
  void startCall(DebuggerObjects& objects);
  // The process is (re)set up: every answer kept about it is dropped.
  void processSetUp(RemoteProcess& process);

  // ---- epochs and prefetch ----
  // Starts a fresh memory for the process (at set-up and, in policy epoch, at every
  // mqs_update_communicator_list); in policy epoch asks again, at once, for what the previous
  // epoch read, or, at the process's first epoch in this session, for `learned` (what an
  // earlier session's last epoch of this same process read).
  // `ahead`: windows the shim read at this call's start, with their blocks (wire
  // updateCommunicatorList), kept as this epoch's and not asked for again.
  struct BlockAhead {
    TargetMemory::Window window;
    wire::MemoryBlock::Reader block;
  };
  // `kind`: the epoch is the process's set-up (see TargetMemory::previousSetUpWindows), an
  // update, or an update made ahead of the process's own (SessionService::refreshAhead), which
  // keeps only `ahead` and asks for nothing: a refresh ahead that asks the debugger anything is
  // dropped anyway (but its memory's blocks, when the shim proves by them too). A refresh
  // ahead of a process never updated, nothing learned of it, is unguided (see
  // kMaxAroundBytes): its misses read the whole bound.
  enum class EpochKind { SetUp, Update, RefreshAhead };
  void newEpoch(DllCall& call, RemoteProcess& process,
                const std::vector<TargetMemory::Window>& learned = {},
                const std::vector<BlockAhead>& ahead = {}, EpochKind kind = EpochKind::Update);
  // The windows this epoch read, for the shim to read ahead at the next update (at most
  // maxBlocksAheadBytes; for a process read on its node, only the range its epoch check
  // compared; none when memory is not kept between calls).
  std::vector<TargetMemory::Window> nextEpochWindows(const RemoteProcess& process) const;
  // This epoch's check made late, by the shim (updateCommunicatorList's checkLate), for a
  // proved process whose epoch just started: `windows` read on the node, kept as this epoch's
  // memory (the DLL is served them) and returned for the shim to compare with what its
  // debugger read meanwhile; the epoch counts as checked. Empty, and nothing kept, when the
  // process is not proved, runs (then it is refused, as by any check) or a window cannot be
  // read here. Throws ProxyError(PROTOCOL) for more than maxBlocksAheadBytes.
  std::vector<kj::Array<kj::byte>> readForLateCheck(DllCall& call, RemoteProcess& process,
                                                    const std::vector<TargetMemory::Window>& windows);

  // A set-up's proof made late (setupProcess' proveLate), for a process whose set-up epoch just
  // started, untried, with its rank given: `windows` must be the AT_RANDOM window and the
  // listed stack window of this host's one process of that rank, which must be stopped. Then
  // that process is taken as proved, its stack window is this epoch's check (held in the
  // epoch's memory) and its bytes of `windows` are returned, in order, for the shim to compare
  // with its debugger's; the set-up's effects must be held back until it has. Empty, with
  // nothing changed, otherwise: the proof is then made as without it (proveOnNode).
  std::vector<kj::Array<kj::byte>> proveLateOnNode(DllCall& call, RemoteProcess& process,
                                                   const std::vector<TargetMemory::Window>& windows);

  // The windows the process's next update will ask for: while its set-up epoch runs, what the
  // first update's newEpoch will (`learned` as it will get it, else the set-up's blocks whole)
  // with what the set-up read, bounded as nextEpochWindows; in any other epoch,
  // nextEpochWindows.
  std::vector<TargetMemory::Window> firstEpochWindows(
      const RemoteProcess& process, const std::vector<TargetMemory::Window>& learned) const;
  // In the epoch policy, while the process's set-up epoch runs: of `learnedSetUp` (what an
  // earlier session's set-up read), the windows not held yet, bounded as nextEpochWindows; for
  // the rest of the set-up to take with it (keepAhead). None for a process that may be read on
  // its node (--node-memory, not refused): its proof needs a read that misses.
  std::vector<TargetMemory::Window> setUpAheadWindows(
      const RemoteProcess& process, const std::vector<TargetMemory::Window>& learnedSetUp) const;
  // For an image's reply: of `learnedSetUp` (what an earlier session's set-up of a process of
  // it read), what a set-up of one may take with it, bounded as nextEpochWindows; none unless
  // in the epoch policy. None with --node-memory: a process proved on its node is read there,
  // and the set-up epoch's check is its stack's window, read with its proof (proveAheadOnNode).
  std::vector<TargetMemory::Window> imageSetUpAheadWindows(
      const std::vector<TargetMemory::Window>& learnedSetUp) const;
  // Nothing learned of `image`'s set-ups and no other process set up to be moved from (a job
  // never seen, its first process): the blocks holding the symbols the image resolved, in
  // address order, each once. A process's set-up reads the globals its DLL looked up (Open
  // MPI's reads MPIR_debug_typedefs_sizeof), so the shim reads these with it, for
  // imageSetUpAheadWindows, instead of the set-up missing there.
  std::vector<TargetMemory::Window> symbolBlocks(const RemoteImage& image) const;
  // Keeps what the shim read ahead for the process in its current epoch, each window once.
  // Returns the windows it was sent.
  std::set<std::pair<uint64_t, uint32_t>> keepAhead(DllCall& call, RemoteProcess& process,
                                                    const std::vector<BlockAhead>& ahead);

  // An epoch that misses again and again is a walk through memory the server was never told
  // of (a job's first update: lists of heap objects): its n-th miss reads 2^(n-1) - 1 blocks
  // around the one it needs, half below and half above, in the same round trip (0, 1, 3, 7,
  // ... blocks; the heap's objects lie on both sides of one another), at most
  // kMaxAroundBytes and what the debugger reads in half a round trip (aroundBudget). An
  // epoch nothing guided (TargetMemory::unguided: a job never seen, its first rank's set-up
  // and first update, and the refresh ahead of another rank's guess) is such a walk from its
  // first miss, which reads the whole bound; and
  // the first update after such a set-up is sent the blocks around the set-up's ahead
  // (firstEpochWindows). Open MPI's first update reads heap objects up to 1.7 MiB apart:
  // 4 MiB cover them in one miss.
  static constexpr uint64_t kMaxAroundBytes = 4u << 20;
  // That bound, from the callbacks' own timings: the quickest one is the link's round trip;
  // what a miss's fetch of kBulkFetch bytes or more took past it, the debugger's reading.
  // Before such a fetch, the shim's timings (takeShimTimings), else none; none either from a
  // debugger behind a slow link of its own (gdbserver over a network reads 64 KiB in several
  // of its round trips).
  // A fetch's time past the quickest is the reading's, at kFastestRead at least (seconds per
  // byte: gdb reads no faster than 500 MB/s; a fetch that took no longer than the quickest
  // callback says nothing more): a server on a unix socket beside the debugger (round trips
  // of 0.1 ms) reads nothing around, one behind a network link up to kMaxAroundBytes.
  uint64_t aroundBudget() const;
  // The callbacks so far that asked the debugger for blocks of a process's memory a DLL read
  // is served from (fetchBlocks, not aside): a call whose callbacks were all such asked the
  // debugger nothing else (SessionService: an update's `provable`).
  uint64_t blockCallbacks() const { return blockCallbacks_; }
  // The shim's own measures of the links (mqd.capnp LinkTimings, with each set-up and update
  // of a process): aroundBudget takes its quickest round trip until a callback was timed, and
  // the debugger's read cost until such a fetch (a session's first miss has neither). The
  // shim's read cost leaves out the server link's transfer, which the server's own measure
  // includes: on a link of little bandwidth a first miss may read more around than the later
  // ones (compressed, as every block sent). Values that are no timings are ignored.
  void takeShimTimings(wire::LinkTimings::Reader timings);
  // The same from those two timings (seconds; 0 or nullopt: none yet): the rule alone, which
  // reads no clock.
  static uint64_t aroundBudgetFor(double fastestCallback, std::optional<double> bulkSecondsPerByte);
  static constexpr uint64_t kBulkFetch = 16 * 1024;
  static constexpr double kFastestRead = 2e-9;

  // Prefetch bounds: bytes per fetchBlocks round trip, and in all at the start of an epoch.
  static constexpr uint64_t kPrefetchBatchBytes = wire::MAX_BLOCKS_AHEAD_BYTES;
  static constexpr uint64_t kMaxPrefetchBytes = 64u << 20;
  // Answers `lookups` for `image` in one round trip, into the caches.
  void prefetchLookups(DllCall& call, RemoteImage& image, const std::vector<LookupKey>& lookups);
  // Keeps `answers` (the debugger's, one per look-up, in order) for `image`, as if the DLL had
  // asked for them: what prefetchLookups received, or what the shim answered ahead.
  void keepLookups(DllCall& call, RemoteImage& image, const std::vector<LookupKey>& lookups,
                   capnp::List<wire::LookupAnswer>::Reader answers);

  // Keeps the image and type sizes the shim sent with mqs_setup_process, as if the DLL had
  // asked (they are kept while the process stays set up).
  void keepProcessFacts(RemoteProcess& process, wire::ProcessFacts::Reader facts);

  // Every look-up asked for in this session (what LearnedLookups keeps for the DLL).
  const std::set<LookupKey>& lookupsSeen() const { return seen_; }
  // Only in a LookupDiscovery child: from now on every look-up not cached goes to `sink` and
  // is answered by a stand-in (found: an address, a type token of its own, offset 0, size 8;
  // a symbol or function asked only whether it exists, with no out-pointer, is found only if
  // `existing`: a DLL may stop at either answer), and nothing reaches the debugger: a request
  // fails (ProxyError CALLBACK_FAILED), a notification is dropped.
  void discoverInto(std::function<void(const LookupKey&)> sink, bool existing) {
    discovery_ = std::move(sink);
    discoveryExisting_ = existing;
  }
  // While `sink` is set (SessionService, for a set-up's calls), every look-up the DLL makes is
  // added to it; nullptr stops. Under the epoch policy only (the caller's to decide).
  void consumeInto(ConsumedLookups* sink) { consumed_ = sink; }

  // Reads windows of several processes in one round trip (the requests travel together), each
  // process's into a memory of the caller's that no DLL read is served from: what PeerLayout
  // needs to guess. Windows that cannot be read are left out; a failed request leaves them
  // all out.
  struct Aside {
    uint64_t process;
    const std::vector<TargetMemory::Window>* windows;
    TargetMemory* into;
  };
  void readAside(DllCall& call, const std::vector<Aside>& wanted);

  // The blocks of `memory` not held yet around [start, end): `bytes` of them (rounded down
  // to blocks), half below and the rest above.
  static std::vector<TargetMemory::Window> blocksAround(const TargetMemory& memory,
                                                       uint64_t start, uint64_t end,
                                                       uint64_t bytes);
  // The first of `windows` that the shim may read ahead in one request (maxBlocksAheadBytes).
  static std::vector<TargetMemory::Window> blocksAheadBound(
      std::vector<TargetMemory::Window> windows);

 private:
  // Reads `windows` ahead of need, in bounded batches (see kPrefetchBatchBytes).
  void prefetch(DllCall& call, RemoteProcess& process,
                const std::vector<TargetMemory::Window>& windows);

  // Keeps one block the debugger answered for `window` (a prefetch's or the shim's).
  void keepBlock(DllCall& call, RemoteProcess& process, const TargetMemory::Window& window,
                 wire::MemoryBlock::Reader block);

  int fetchBlock(DllCall& call, RemoteProcess& process, uint64_t address, uint32_t size,
                 void* buf);

  // ---- the target read on its node (--node-memory) ----
  // A missed read answered without the debugger's link, when the process is proved:
  //   * Identity, once per set-up: the debugger's MPI rank for the process names the
  //     candidates (this user's processes on this host with that rank in their environment,
  //     LocalProcess::withRank); the debugger reads each candidate's AT_RANDOM address, and
  //     exactly one candidate's 16 random bytes must be what the debugger read there. The
  //     shim reads them with the set-up's request when the session's opening listed every
  //     candidate (openSession's nodeProcesses; proveAheadOnNode), or while it travels, and
  //     compares them itself, when it listed one (proveLateOnNode), else the set-up's first
  //     missed read asks for them (proveOnNode).
  //   * State, once per epoch: every thread of the process is stopped, and the epoch's first
  //     missed read is asked of the debugger (the DLL gets the debugger's answer) and must
  //     equal the same bytes read on the node. At the set-up, the window at the process's
  //     stack pointer the shim read with it, as listed, is compared instead when it came
  //     (proveAheadOnNode), and then at every later epoch. From the second epoch on, the shim
  //     reads the
  //     range the last check compared at the update's start (nextEpochWindows), and those
  //     bytes, the debugger's at this very update, are compared instead (checkAheadOnNode):
  //     no round trip; or the shim compares them itself with the node's, which this epoch
  //     then starts from (readForLateCheck).
  // Any failure (no candidate, none or two matching, memory refused, bytes that differ) ends
  // node reads for the process until it is set up again: the debugger answers, as without
  // the option. A range the node cannot read is asked of the debugger, so unreadable memory
  // gets the debugger's own error code. nullopt: not answered here, ask the debugger.
  std::optional<int> fromNode(DllCall& call, RemoteProcess& process, uint64_t address,
                              uint32_t size, void* buf);
  // The round trip that proves identity (when untried) and checks the epoch, answering the
  // DLL's read [address, address + size) from the debugger's bytes.
  std::optional<int> proveOnNode(DllCall& call, RemoteProcess& process, uint64_t address,
                                 uint32_t size, void* buf);
  // The set-up's proof of identity from the blocks the shim read ahead with it, when they
  // hold every candidate's AT_RANDOM bytes; returns this epoch's check: the proved process's
  // stack window (listedStacks) first, then the blocks that are no candidate's AT_RANDOM
  // bytes or stack; or all of `ahead` when the proof is left to proveOnNode.
  std::vector<BlockAhead> proveAheadOnNode(DllCall& call, RemoteProcess& process,
                                           const std::vector<BlockAhead>& ahead);
  // Whether the debugger's `block` holds `candidate`'s AT_RANDOM bytes.
  bool showsRandom(DllCall& call, const LocalProcess& candidate, wire::MemoryBlock::Reader block);
  // The one candidate that `shows` the debugger's bytes, stopped, is the process (Proven,
  // logged with `how`); none, several or a running one refuse the node.
  void identifyOnNode(RemoteProcess& process, int rank, std::vector<LocalProcess>& candidates,
                      const std::vector<bool>& shows, const char* how);
  void refuseNode(RemoteProcess& process, const std::string& why);
  // Whether the proved process, stopped, holds `bytes` at `address` (what the debugger `how`:
  // "read", "read ahead"); else refuses the node, saying so.
  bool nodeShows(RemoteProcess& process, uint64_t address, const kj::byte* bytes, size_t size,
                 const char* how);
  // This epoch's check from the blocks the shim read ahead (see fromNode); refuses the node
  // if any differs from the node's bytes or the process runs.
  void checkAheadOnNode(DllCall& call, RemoteProcess& process,
                        const std::vector<BlockAhead>& ahead);

  wire::Debugger::Client client_;
  Options options_;
  StringPool strings_;
  // The debugger's errorstring answers, for one mqs_* call (a debugger may put the detail of
  // its last failure in the text). nullopt: it returned NULL.
  std::map<int, std::optional<std::string>> errorTexts_;
  std::map<std::pair<uint64_t, std::string>, int> fieldOffsets_;
  std::map<uint64_t, int> sizes_;
  std::map<uint64_t, std::pair<std::string, int>> typeNames_;  // token -> (name, lang)
  std::set<LookupKey> seen_;
  ConsumedLookups* consumed_ = nullptr;
  std::function<void(const LookupKey&)> discovery_;  // discoverInto
  bool discoveryExisting_ = true;
  // In a discovery child: `key` named to the parent, true; else false (ask the debugger).
  bool discovered(const LookupKey& key) const;
  // Sends `request` and waits for the debugger's answer on the call's fiber, timing it (see
  // aroundBudget).
  template <typename Request>
  auto awaitAnswer(DllCall& call, Request& request);
  double fastestCallback_ = 0;  // seconds, 0: none yet
  uint64_t blockCallbacks_ = 0;
  double lastCallback_ = 0;
  std::optional<double> bulkSecondsPerByte_;  // the last bulk fetch's
  double shimRoundTrip_ = 0;                  // takeShimTimings; 0: none
  std::optional<double> shimSecondsPerByte_;  // takeShimTimings
  // Adds to consumed_, if set: `key`, or for a field or size of an unnamed type, unknown.
  void consume(const LookupKey* key, bool address = false);
  // The look-up by name of a field (`kind` Field) or size (SizeOf) of the type behind a
  // token, nullopt when no look-up by name found that type.
  std::optional<LookupKey> byTypeName(LookupKey::Kind kind, uint64_t type,
                                      const char* field) const;
};

}  // namespace mqd::server
