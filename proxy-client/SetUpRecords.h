// SetUpRecords: first set-ups of images and processes, recorded as set-up records or answered
// from them (docs/round-trips.md, "Set-ups answered from a record"). Active under the epoch
// policy, for a DLL with a build id and a server that takes info tokens; only an object's
// first set-up in this client takes part (the server's caches of it are then empty, as when
// the record was made).
//
// Contract:
// - Answered from a record (recallSetupImage, recallSetupProcess), when the record's inputs are
//   proved the same now (the look-ups answered ahead; the bytes the process's set-up read, read
//   again): the set-up and its has-queues call are sent without waiting (recalled calls), the
//   debugger gets the recorded answers at once with an info token chosen here, and the
//   has-queues answer is held for its own call (HeldAnswers).
// - settleRecalled() serves the recalled calls' replies, in order, and compares each with what
//   the debugger was told. MqsClient calls it before any other request is served, so their
//   callbacks never mix with another call's. A difference is a contradiction: calls on that
//   object fail (refuseContradicted) until it is set up again, the DLL's own effects reach the
//   debugger late, and no record is used again.
// - Recorded: MqsClient marks where a set-up started (mark()) and hands in each reply
//   (record*); a set-up that asked the debugger anything beyond what was sent with it, or put
//   an info on another object, is not recorded.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ClientConfig.h"
#include "ClientCounters.h"
#include "Connection.h"
#include "DebuggerSide.h"
#include "HeldAnswers.h"
#include "ReadAhead.h"
#include "RefreshAhead.h"
#include "SessionLink.h"
#include "SetUpRecall.h"
#include "SetUpRequests.h"

namespace mqd::client {

class SetUpRecords {
 public:
  // What the recalled calls' replies feed besides the comparison: the process's next epoch
  // (refreshAhead), the image's set-up-ahead windows (imageSetUpAhead). All outlive this.
  SetUpRecords(SessionLink& link, DebuggerSide& side, ClientCounters& counters,
               HeldAnswers& held, RefreshAhead& refreshAhead, NamedWindows& imageSetUpAhead)
      : link_(link),
        side_(side),
        counters_(counters),
        held_(held),
        refreshAhead_(refreshAhead),
        imageSetUpAhead_(imageSetUpAhead) {}
  SetUpRecords(const SetUpRecords&) = delete;
  SetUpRecords& operator=(const SetUpRecords&) = delete;

  // A session opened with this DLL: records are kept (in `config.stateDir`, or in memory only)
  // when the policy allows, else none is.
  void open(const ClientConfig& config, const DllInfo& dll, bool takesInfoTokens);
  bool active() const { return recall_ != nullptr; }
  // Writes the records to disk (at each update, and when the client goes).
  void save() {
    if (recall_) recall_->save();
  }

  // Every entry point, as it starts: what the set-ups being recorded deliver is logged from
  // here (mark(), answeredOnly).
  void callStarts() { effectLog_.clear(); }
  // Every entry point, before its body: a call other than a set-up's serves the recalled calls
  // first, and a call other than mqs_process_has_queues ends the process set-up being recorded
  // (the debugger left the set-up's order).
  void settleFor(EntryPoint entryPoint);
  // The session was lost: the recalled calls failed with it (the set-up replay sends them
  // again), and nothing recorded with its DLL holds.
  void sessionLost();
  // Only on the loop thread (SessionLink::onLoop): the recalled calls' RPC objects go.
  void dropInFlight() { recalled_.clear(); }

  // See the contract; `behindAnother`: a request is already sent behind them, whose own round
  // trip the wait overlaps (not counted as a wait of its own).
  void settleRecalled(bool behindAnother = false);
  // Throws ProxyError(NOT_SET_UP) for a call on a contradicted object.
  void refuseContradicted(wire::InfoKind kind, uint64_t token, EntryPoint entryPoint) const;
  // The debugger sets up the object (again): it is no longer contradicted; true when this is
  // its first set-up in this client.
  bool firstSetUp(wire::InfoKind kind, uint64_t token);

  // Where a call being recorded started: the callbacks answered and effects delivered so far.
  struct Mark {
    DebuggerSide::Answered answered;
    size_t effects = 0;
  };
  Mark mark() const { return {side_.answered, effectLog_.size()}; }

  // True when the image's set-up was answered from a record (the debugger got its answer and
  // its info); `ahead`: the look-ups answered ahead with it, which prove a record.
  bool recallSetupImage(uint64_t image, const LookupsAhead& ahead);
  // The image's set-up answered `rc` since `from`, with `ahead` sent with it: kept for its
  // record, which its mqs_image_has_queues' reply completes.
  void recordImageSetUp(uint64_t image, const Mark& from, int rc, const LookupsAhead& ahead);
  void recordImageHasQueues(uint64_t image, const Mark& from,
                            wire::Session::ImageHasQueuesResults::Reader reply);

  // The same for a process, whose image's set-up was recorded or recalled.
  bool recallSetupProcess(uint64_t process, bool bigEndian);
  // Starts recording the process's set-up (what the shim reads of it from now on).
  void startProcessRecording(uint64_t process, bool bigEndian);
  void recordProcessSetUp(uint64_t process, const Mark& from, int rc,
                          const std::string& warning);
  void recordProcessHasQueues(uint64_t process, const Mark& from,
                              wire::Session::ProcessHasQueuesResults::Reader reply);

 private:
  // A call sent with its answer already given to the debugger.
  struct Recalled {
    EntryPoint entryPoint;
    uint64_t token;  // of the image or process
    std::shared_ptr<PendingCall> pending;
    SetUpRecall::Call told;  // what the debugger was told
    uint64_t infoToken = 0;  // the token of the info it was told of (a PutInfo effect)
    std::string warning;     // setup_process: the byte-order warning it was told
  };
  // A process part its image's look-ups prove, for the process's set-up to try: at the
  // record's own addresses (shift 0) or moved (SetUpRecall::shiftTo). Points into recall_,
  // unchanged until the next keep().
  struct ProcessCandidate {
    const SetUpRecall::ProcessOutcome* outcome;
    uint64_t shift = 0;
  };
  // Per image whose set-up was recorded or recalled in this client: its record (without a
  // process part); `recalled` when the image's set-up was answered from it, and then the
  // process parts of records found with its answers serve its process's set-up.
  struct ImageRecord {
    SetUpRecall::Record record;
    SetUpRecall::Answers answers;  // answered ahead with the image's set-up: what proves it
    bool complete = false;  // its mqs_image_has_queues' outcome is in
    bool recalled = false;
  };
  std::vector<ProcessCandidate> candidatesFor(const ImageRecord& image) const;
  // Process parts moved from another process tried per set-up, at most: the newest records
  // (a job's first rank's, in a job never seen). Each costs a digest, and its reads if its
  // look-ups prove it.
  static constexpr size_t kMaxMovedCandidates = 4;
  // The process set-up being recorded: its facts, and what the shim read of the process
  // (ahead or asked), of which the server names what the DLL read (setUpRead).
  struct ProcessRecording {
    uint64_t process;
    uint64_t image;
    bool bigEndian;
    DebuggerSide::TypeSizes sizes;
    std::map<uint64_t, std::vector<unsigned char>> read;  // start -> bytes
    uint64_t bytes = 0;  // read in all (past 2 x maxBlocksAheadBytes: not recorded)
    SetUpRecall::ProcessOutcome outcome;
  };

  // A token for the info a recorded set-up puts (*info 0 when it puts none); false when the
  // shim's tokens are used up.
  bool chooseInfoToken(const SetUpRecall::Call& setUp, uint64_t* info);
  // Answers a set-up from its record: `setUp` (sent) and its has-queues call (sent here) wait in
  // recalled_; the debugger gets the set-up's effects and `warning` now, the has-queues
  // call's answer at its own call (held).
  void answerFromRecord(EntryPoint setUpEntry, uint64_t token,
                        std::shared_ptr<PendingCall> setUp, const SetUpRecall::Call& told,
                        uint64_t info, const std::string& warning,
                        const SetUpRecall::Call& hasQueues);
  // The DLL answered a recalled call otherwise (see the contract).
  void contradict(const Recalled& call, const std::string& how,
                  std::vector<kj::Own<wire::Effect::Reader>> unexpected);
  // Whether what the shim answered since `from` is what a recorded set-up may consume: no
  // callback but block reads (none for an image) and at most one put_*_info, on the object
  // itself. Its effects, in order, go to *effects.
  bool answeredOnly(const Mark& from, wire::InfoKind kind, uint64_t token, bool allowReads,
                    std::vector<SetUpRecall::Effect>* effects) const;
  // A record's part keyed by what a set-up consumed (a has-queues reply's, nullopt when
  // unknown) and the answers given ahead: false, nothing set, when one was not answered.
  bool keyBy(std::optional<ConsumedLookups::Lookups> consumed,
             const SetUpRecall::Answers& answers, SetUpRecall::LookupList* lookups,
             SetUpRecall::Digest* digest) const;
  void stopProcessRecording();

  SessionLink& link_;
  DebuggerSide& side_;
  ClientCounters& counters_;
  HeldAnswers& held_;
  RefreshAhead& refreshAhead_;
  NamedWindows& imageSetUpAhead_;

  std::unique_ptr<SetUpRecall> recall_;  // null: nothing recorded or recalled
  std::deque<Recalled> recalled_;
  std::set<std::pair<int, uint64_t>> contradicted_;  // (wire::InfoKind, token)
  uint64_t nextChosenInfoToken_ = wire::FIRST_CHOSEN_INFO_TOKEN;
  std::set<uint64_t> imagesSetUp_;
  std::set<uint64_t> processesSetUp_;
  std::unordered_map<uint64_t, ImageRecord> imageRecords_;
  std::optional<ProcessRecording> processRecording_;
  // The effects delivered since the entry point started (kept while records are: open()).
  std::vector<kj::Own<wire::Effect::Reader>> effectLog_;
};

}  // namespace mqd::client
