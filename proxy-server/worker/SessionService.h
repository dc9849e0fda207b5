// SessionService: one debugger's session with one vendor DLL (the wire Session capability).
//
// Each method runs the corresponding vendor entry point on a kj fiber (see DllCall), strictly
// one at a time in arrival order, with output buffers marked so the reply carries exactly what
// the DLL wrote (OutputCapture). Everything the DLL can be answered locally stays local:
// malloc/free, put/get of infos, target_to_host. The rest goes to the Debugger capability the
// shim passed in.
#pragma once

#include <kj/async.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "DebuggerObjects.h"
#include "DllCall.h"
#include "LearnedLookups.h"
#include "LearnedMemory.h"
#include "PeerLayout.h"
#include "RemoteDebugger.h"
#include "SessionBoard.h"
#include "VendorDll.h"
#include "mqd.capnp.h"

namespace mqd::server {

class DllCall;
class DllOutput;

struct SessionConfig {
  RemoteDebugger::Options debugger;  // cache policy, compression, block size
  std::string stateDir;              // where learned look-ups live; empty: not kept
  // Info tokens the debugger already holds from a lost session (SessionOptions.resumeInfos).
  std::vector<DebuggerObjects::Reservation> resumeInfos;
};

class SessionService final : public wire::Session::Server, public DllHost {
 public:
  // `output`, if any, captures what the DLL writes to stdout/stderr; it is relayed to the
  // debugger after every callback and at the end of every call. `output` and `metrics` (the
  // worker's) must outlive the session.
  SessionService(std::unique_ptr<VendorDll> dll, wire::Debugger::Client debugger,
                 kj::Maybe<DllOutput&> output, const SessionConfig& config, Metrics& metrics);
  ~SessionService() noexcept(false);

  // DllHost, for the callback trampolines (only valid inside a DllCall).
  RemoteDebugger& remote() override { return remote_; }
  DebuggerObjects& objects() override { return objects_; }
  Metrics& metrics() override { return metrics_; }
  void relayDllOutput(DllCall& call) override;

 protected:
  kj::Promise<void> setupBasicCallbacks(SetupBasicCallbacksContext context) override;
  kj::Promise<void> dllErrorString(DllErrorStringContext context) override;
  kj::Promise<void> setupImage(SetupImageContext context) override;
  kj::Promise<void> imageHasQueues(ImageHasQueuesContext context) override;
  kj::Promise<void> destroyImageInfo(DestroyImageInfoContext context) override;
  kj::Promise<void> setupProcess(SetupProcessContext context) override;
  kj::Promise<void> processHasQueues(ProcessHasQueuesContext context) override;
  kj::Promise<void> destroyProcessInfo(DestroyProcessInfoContext context) override;
  kj::Promise<void> updateCommunicatorList(UpdateCommunicatorListContext context) override;
  kj::Promise<void> setupCommunicatorIterator(SetupCommunicatorIteratorContext context) override;
  kj::Promise<void> getCommunicator(GetCommunicatorContext context) override;
  kj::Promise<void> getCommGroup(GetCommGroupContext context) override;
  kj::Promise<void> nextCommunicator(NextCommunicatorContext context) override;
  kj::Promise<void> setupOperationIterator(SetupOperationIteratorContext context) override;
  kj::Promise<void> nextOperation(NextOperationContext context) override;
  kj::Promise<void> setupJob(SetupJobContext context) override;
  kj::Promise<void> destroyJobInfo(DestroyJobInfoContext context) override;
  kj::Promise<void> setupNewProcessIterator(SetupNewProcessIteratorContext context) override;
  kj::Promise<void> nextNewProcess(NextNewProcessContext context) override;
  kj::Promise<void> setProcessIdentity(SetProcessIdentityContext context) override;
  kj::Promise<void> getCommCollState(GetCommCollStateContext context) override;
  kj::Promise<void> reposition(RepositionContext context) override;

 private:
  // At the session's end: mqs_destroy_*_info for every info the debugger did not destroy.
  void destroyLeftInfos();
  // Runs `body(DllCall&)` on a fiber after every earlier call has finished. A ProxyError it
  // throws becomes the `failure` of `context`'s results. `counted`: Calls when the shim waits
  // for the answer (a round trip), Notifications when it does not, CallsBehind when it sent the
  // call behind another before that one's answer.
  template <typename Context, typename Body>
  kj::Promise<void> runDll(Context context, EntryPoint entryPoint, Body&& body,
                           Count counted = Count::Calls);

  // Refuses calls that need mqs_setup_basic_callbacks first.
  void requireBasicCallbacks(const char* entryPoint) const;
  // Whether the vendor DLL exports the entry point of `call`. When it does not, the entry-point
  // list's `absent` column (schema/mqs_entry_points.h) decides the answer: NO_ENTRY_POINT throws
  // MQD_PROXY_ERR_NO_ENTRY_POINT naming the entry point; NO_INFORMATION answers `results` with
  // mqs_no_information, its outputs never written (so `untouched`), and returns false.
  template <typename Results>
  bool dllExports(const DllCall& call, Results results) const;

  // What the process's first update will read again (RemoteDebugger::firstEpochWindows), for
  // the set-up replies' nextEpoch; *learned: they include an earlier session's windows.
  std::vector<TargetMemory::Window> firstEpochWindows(RemoteProcess& process, bool* learned);
  // What an earlier session kept of the process (LearnedMemory), while its first update has
  // not asked for it yet; empty after.
  const LearnedMemory::Record& earlierSession(RemoteProcess& process);
  static void writeWindows(const std::vector<TargetMemory::Window>& windows,
                           capnp::List<wire::MemoryWindow>::Builder out);
  static std::vector<TargetMemory::Window> windowsOf(
      capnp::List<wire::MemoryWindow>::Reader list);
  // The node's bytes of `windows` (`node`, one each, in order) as wire nodeBytes.
  void writeNodeBytes(const std::vector<TargetMemory::Window>& windows,
                      const std::vector<kj::Array<kj::byte>>& node,
                      capnp::List<wire::MemoryBlock>::Builder out) const;
  // The addresses of the symbols both images resolved: the peer's and its own.
  static std::vector<PeerLayout::SymbolPair> symbolPairs(const RemoteImage& peer,
                                                         const RemoteImage& own);
  // Nothing learned of `image`'s set-ups: what a process set up with it is likely to read,
  // from what another process's set-up read, moved as the symbols both images resolved show
  // (PeerLayout::Guess::movedBySymbols): its image's has-queues reply's setUpAhead.
  std::vector<TargetMemory::Window> peerSetUp(const RemoteImage& image);
  // Whether nothing named what the process's set-up reads (TargetMemory::unguided): nothing
  // learned of it, and no other process set up to be moved from (peerSetUp; the blocks of its
  // image's symbols, sent instead, are no more than a guess of where).
  bool setUpUnguided(RemoteProcess& process);
  // Nothing known of the DLL's look-ups: those `image`'s set-up and has-queues call make, found
  // by running them in a child with stand-in answers (LookupDiscovery), twice: symbols asked
  // only whether they exist found, then missing (a DLL may stop at either answer).
  std::vector<LookupKey> discoverLookups(DllCall& call, RemoteImage& image);
  // What an update's reply names for other processes' next updates (wire PeerEpoch).
  struct NamedEpoch {
    uint64_t process;
    std::vector<TargetMemory::Window> windows;
    uint64_t callbacks;
  };
  // At `peer`'s first update that walked: for every other process set up, never updated and
  // of which nothing was learned, what its first update is likely to read (PeerLayout), each
  // guessed once per session (the bytes it needs of them read in one round trip);
  // `callbacks`: the round trips that update waited for.
  std::vector<NamedEpoch> guessPeers(DllCall& call, const RemoteProcess& peer,
                                    uint64_t callbacks);
  // After a process's first update walked: how the guesses made for it (guessesToMeasure_)
  // covered what it read, in the debug log.
  void logGuessCoverage(const RemoteProcess& process);

  // A new memory epoch for the process: an update (`kind` other than SetUp) also asks for what
  // an earlier session of this process read, the first time; `ahead` is what the shim read at
  // the update's start (RemoteDebugger::newEpoch).
  void startEpoch(DllCall& call, RemoteProcess& process, RemoteDebugger::EpochKind kind,
                  const std::vector<RemoteDebugger::BlockAhead>& ahead = {});
  // Keeps what this session read of the process for later sessions (LearnedMemory), once it
  // has been updated: after its first update's walk (`updated`), so that a session killed
  // later leaves a record, and again at the session's end.
  void keepLearnedMemory(RemoteProcess& process, bool updated);
  // One refresh of `process` (the body of mqs_update_communicator_list): a new epoch from
  // `ahead`, the DLL's update and, in the epoch policy when it answers mqs_ok, the walk into
  // `walkOut`. Returns the DLL's rc.
  int refresh(DllCall& call, RemoteProcess& process,
              const std::vector<RemoteDebugger::BlockAhead>& ahead, wire::Bulk::Builder walkOut,
              RemoteDebugger::EpochKind kind = RemoteDebugger::EpochKind::Update);
  // refresh's second half, once the epoch has started: the DLL's update and the walk.
  int updateAndWalk(DllCall& call, RemoteProcess& process, wire::Bulk::Builder walkOut);
  // A refresh of a proved process whose epoch check the shim makes late (wire
  // updateCommunicatorList, `checkLate`): the epoch starts from the node's bytes of `windows`
  // (RemoteDebugger::readForLateCheck), which go into the results' nodeBytes with the rc and
  // the walk, the DLL's effects held back. False, for lateCheckDeclined, when the node could
  // not give the windows or the DLL had anything to show the debugger: the shim sends the
  // update again, and the DLL runs again where the debugger sees it all.
  // A set-up whose proof the shim made late (setupProcess' proveLate) and found wrong
  // (redoesLate): the info the DLL put in it, which the debugger never got, is destroyed, its
  // effects held back too. Nothing for a set-up not held back.
  void undoHeldSetUp(DllCall& call, RemoteProcess& process);
  bool refreshCheckedLate(DllCall& call, RemoteProcess& process,
                          const std::vector<TargetMemory::Window>& windows,
                          wire::Session::UpdateCommunicatorListResults::Builder results);
  // A proved process's update with its epoch check made late (wire checkLate): a new epoch
  // from `windows` read on the node, then mqs_update_communicator_list and the walk (into
  // `walkOut`, rc in *rc) with the DLL's effects held back. Returns the node's bytes of
  // `windows`, one each, in order; empty when the check cannot be made so (the process runs,
  // a window is unreadable here) or the update asked the debugger anything, had anything to
  // show it or ended the node's reads: then the caller's debugger sees nothing of it and the
  // update is made again with the debugger's bytes.
  std::vector<kj::Array<kj::byte>> updateCheckedLate(
      DllCall& call, RemoteProcess& process, const std::vector<TargetMemory::Window>& windows,
      wire::Bulk::Builder walkOut, int* rc);
  // An other of an update (refreshAhead) read on its node, sent with its check made late:
  // refreshed by updateCheckedLate into `out`, with the node's bytes the shim proves it by.
  // False: dropped, for its own update.
  bool refreshedOnNode(DllCall& call, RemoteProcess& process,
                       capnp::List<wire::MemoryWindow>::Reader checkLate,
                       wire::RefreshedAhead::Builder out);
  // The other processes of an update (wire updateCommunicatorList, `others`), refreshed with
  // their effects held back; those that asked the debugger nothing (`provedByFetches`: nothing
  // but their memory's blocks) go into `refreshed`, and what each other one read into
  // `dropped`, for its own update to read ahead.
  void refreshAhead(DllCall& call, const RemoteProcess& asked,
                    capnp::List<wire::RefreshAhead>::Reader others, bool provedByFetches,
                    wire::Session::UpdateCommunicatorListResults::Builder results,
                    std::vector<NamedEpoch>* dropped);
  // A set-up's infoToken (mqd.capnp): the token the shim gave the debugger for the info this
  // set-up puts on `handle`; 0: none. Throws ProxyError(PROTOCOL) for a token outside the
  // shim's range.
  void reserveChosenToken(wire::InfoKind kind, uint64_t handle, uint64_t token);
  // The process's fingerprint (see LearnedMemory), 0 when its look-ups resolved no address.
  uint64_t fingerprint(RemoteProcess& process);
  // The same of an image: the fingerprint of a process of it whose set-up looks nothing else up.
  uint64_t fingerprint(const RemoteImage& image) const;

  Metrics& metrics_;
  std::unique_ptr<VendorDll> dll_;
  RemoteDebugger remote_;
  kj::Maybe<DllOutput&> output_;
  DebuggerObjects objects_;
  LearnedLookups learned_;
  std::vector<LookupKey> learnedAtStart_;  // what earlier sessions looked up
  LearnedMemory learnedMemory_;
  std::set<uint64_t> learnedMemoryUsed_;   // processes whose learned memory was asked for
  std::set<uint64_t> updatedOnce_;         // processes whose update was kept (LearnedMemory)
  std::set<uint64_t> peerGuessed_;         // processes a peer's update guessed for (guessPeers)
  // With the debug log: per process guessed for, what was named for its first update, to
  // measure against what that update reads (logGuessCoverage).
  std::map<uint64_t, std::vector<TargetMemory::Window>> guessesToMeasure_;
  size_t lookupsSaved_ = 0;
  kj::FiberPool fibers_;
  // The DLL calls, one after another (runDll); null once the session is ending.
  kj::Maybe<kj::ForkedPromise<void>> queue_;
  bool basicCallbacksSet_ = false;
};

}  // namespace mqd::server
