// MqsClient: the MQD entry points, implemented by a session with an mqd-proxy-server.
//
// One method per mqs_* entry point, with the C ABI's types and results; libmqdproxy.so is a
// thin veneer over one instance, and tests drive it directly. A call:
//   1. takes the call lock (calls are serialised; a call from inside a debugger callback is
//      refused with MQD_PROXY_ERR_REENTRANT);
//   2. opens the session on first need (connect, openSession, the deferred
//      setup_basic_callbacks), or re-establishes it when the last one was lost (SessionSetUp);
//   3. answers from the process's RecordedWalk when the call is part of a refresh the server
//      recorded at mqs_update_communicator_list (replaying the effects recorded with it);
//   4. otherwise sends one Session request and serves the server's callbacks on this thread
//      until the reply arrives (PendingCall);
//   5. applies the captured outputs and returns the DLL's result.
// Failures of the proxy itself return the codes of mqd_proxy.h; mqs_dll_error_string() then
// explains them. Nothing here throws to the caller.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "ClientConfig.h"
#include "Connection.h"
#include "ClientCounters.h"
#include "DebuggerSide.h"
#include "EntryPoints.h"
#include "LearnedLookups.h"
#include "ReadAhead.h"
#include "RecordedWalk.h"
#include "RefreshAhead.h"
#include "SessionRecorder.h"
#include "SessionSetUp.h"
#include "SetUpRecall.h"
#include "StringPool.h"
#include "mqs_entry_points.h"
#include "mqs_interface.h"

namespace mqd::client {

class EventLoopThread;

class MqsClient {
 public:
  MqsClient();
  ~MqsClient();
  MqsClient(const MqsClient&) = delete;
  MqsClient& operator=(const MqsClient&) = delete;

  // One method per entry point of schema/mqs_entry_points.h, named by its `method` column
  // (nextOperation for mqs_next_operation), with the C signature.
#define MQD_DECLARE_ENTRY_POINT(result, name, method, parameters, arguments, absent) \
  result method parameters;
  MQS_ENTRY_POINTS(MQD_DECLARE_ENTRY_POINT)
#undef MQD_DECLARE_ENTRY_POINT

 private:
  template <typename Results>
  class Reply;

  // Runs `body` as entry point `entryPoint`: lock, reentrancy guard, error mapping.
  template <typename Body>
  int call(EntryPoint entryPoint, Body&& body);

  // Opens the session if needed (or re-establishes a lost one), and sends a deferred
  // mqs_setup_basic_callbacks.
  void ensureSession();
  void openSession();
  // A new connection and session, with the lost one's set-up replayed (see SessionSetUp).
  void reestablish();
  void connect();
  // A failed call's connection error, explained: when the server says the worker died,
  // MQD_PROXY_ERR_WORKER_DIED with the signal, DLL and call. Throws the ProxyError.
  [[noreturn]] void failLost(int code, const std::string& detail, const char* entryPoint);
  // Sends mqs_setup_process for a process whose table the debugger gave; hasQueuesBehind: with
  // mqs_process_has_queues sent behind it (processHasQueuesAhead_). *warning: the reply's.
  int sendSetupProcess(uint64_t token, bool bigEndian, bool hasQueuesBehind = false,
                       std::string* warning = nullptr);
  // The look-ups answered ahead with an image's set-up (under the epoch policy): the learned
  // ones (below), with the debugger's answers for this image, asked now.
  struct LookupsAhead {
    std::vector<LookupKey> keys;
    std::vector<DebuggerSide::LookupResult> answers;
  };
  LookupsAhead lookupsAhead(uint64_t image);
  // One request each, for the entry points themselves and for a set-up replay.
  // With it, `ahead` (lookupsAhead, asked here when null). hasQueuesBehind: with
  // mqs_image_has_queues sent behind it (imageHasQueuesAhead_).
  Reply<wire::Session::SetupImageResults> sendSetupImage(uint64_t image,
                                                         bool hasQueuesBehind = false,
                                                         const LookupsAhead* ahead = nullptr);
  // Sends mqs_setup_image without waiting for its reply; `recalled`: the debugger was answered
  // from a record, with `infoToken` for the image info (0: none).
  std::shared_ptr<PendingCall> startSetupImage(uint64_t image, const LookupsAhead& ahead,
                                               uint64_t infoToken, bool recalled);
  // The same for mqs_setup_process, with the process's facts when `image` and `sizes` are
  // given (and its rank, when `globalRank` is), and what was read ahead for it.
  std::shared_ptr<PendingCall> startSetupProcess(uint64_t process, bool bigEndian,
                                                 const uint64_t* image,
                                                 const DebuggerSide::TypeSizes* sizes,
                                                 const std::vector<ReadAhead>& ahead,
                                                 uint64_t infoToken, bool recalled,
                                                 std::optional<int> globalRank = std::nullopt);
  // mqs_image_has_queues or mqs_process_has_queues, sent behind its object's set-up.
  std::shared_ptr<PendingCall> startHasQueuesBehind(EntryPoint entryPoint, uint64_t token);
  // The set-up reply's byte-order warning, for the debugger (empty: none).
  void warnOfByteOrder(const std::string& warning);
  // The canonical answers of what was asked ahead (SetUpRecall::canonical).
  static SetUpRecall::Answers answersOf(const LookupsAhead& ahead);
  Reply<wire::Session::ImageHasQueuesResults> sendImageHasQueues(uint64_t image);
  Reply<wire::Session::SetupJobResults> sendSetupJob(uint64_t job);
  // `ahead`: memory read for the rest of the process's set-up (setUpAhead_).
  Reply<wire::Session::ProcessHasQueuesResults> sendProcessHasQueues(
      uint64_t process, const std::vector<ReadAhead>& ahead = {});
  // `windows` of the process's memory, read now through the debugger (readWindows: each read
  // a callback into the debugger, a packet exchange through gdbserver).
  std::vector<ReadAhead> readAhead(uint64_t process, const std::vector<Window>& windows);
  // mqs_update_communicator_list, with what the shim read for the process (readAhead) and for
  // `others`, set-up processes the server refreshes in the same request (RefreshAhead::
  // candidates): those the server refreshed without asking the debugger anything are kept in
  // refreshAhead_.
  Reply<wire::Session::UpdateCommunicatorListResults> sendUpdate(
      uint64_t process, std::vector<ReadAhead> ahead, const std::vector<uint64_t>& others = {});
  // mqs_update_communicator_list of a process the server reads on its node, its epoch check
  // made late (wire updateCommunicatorList, `checkLate`): `windows` are read from the
  // debugger while the request travels, and the reply is served only if the node's bytes it
  // carries are the same; else the update goes again as sendUpdate's, with the debugger's.
  // One round trip overlapped with the debugger's read, instead of one after it.
  Reply<wire::Session::UpdateCommunicatorListResults> sendUpdateCheckedLate(
      uint64_t process, const std::vector<Window>& windows);

  // Sends one request (built by `send` on the loop thread) and serves callbacks until its
  // reply arrives. Throws ProxyError on failure.
  template <typename Results, typename Send>
  Reply<Results> roundTrip(EntryPoint entryPoint, Send&& send);
  // roundTrip in two steps, for requests sent behind another before its reply: start() sends,
  // finish() serves the callbacks until the reply arrives (calls are finished in the order
  // started: the server answers them in that order).
  template <typename Send>
  std::shared_ptr<PendingCall> start(EntryPoint entryPoint, Send&& send);
  template <typename Results>
  Reply<Results> finish(std::shared_ptr<PendingCall> pending, EntryPoint entryPoint);
  // finish() for a call whose outcome no longer matters.
  void drain(std::shared_ptr<PendingCall> pending);
  // finish() for a set-up with `behind` (may be null) sent behind it: `behind` is drained (and
  // null) when the set-up fails or answers with a callback's error.
  template <typename Results>
  Reply<Results> finishSetUp(std::shared_ptr<PendingCall> setUp, EntryPoint entryPoint,
                             std::shared_ptr<PendingCall>& behind);

  // mqs_image_has_queues and mqs_process_has_queues are sent behind the set-up of their image
  // or process, which the spec has the debugger call next (policy epoch; docs/round-trips.md,
  // "Set-up"). The call stays in behind_ until the debugger's next call, which serves its
  // callbacks (settleBehind, first thing in every entry point) and moves its answer to the held
  // answers; the debugger's own has-queues call on the object is served from there. Any other
  // call on a process drops the process's held answer: the debugger's call then goes to the
  // DLL.
  struct Behind {
    EntryPoint entryPoint;  // image_has_queues or process_has_queues
    uint64_t token;         // of the image or process
    std::shared_ptr<PendingCall> pending;
  };
  std::optional<Behind> behind_;
  void settleBehind();
  struct HeldAnswer {
    int rc = 0;
    kj::Own<wire::OutString::Reader> message;
    int errorCode = 0;  // a callback's proxy error, returned instead of rc (resultOf)
    std::string errorDetail;
    // An answer from a record: the call's effects, delivered as it is served.
    std::vector<SetUpRecall::Effect> effects;
  };
  std::unordered_map<uint64_t, HeldAnswer> imageHasQueuesAhead_;
  std::unordered_map<uint64_t, HeldAnswer> processHasQueuesAhead_;
  // Serves `behind`, the has-queues call sent behind the set-up of `token`, and keeps its
  // answer in held[token]; `keep` takes the rest of its reply. Keeps nothing when the server
  // skipped it (the set-up failed) or it failed.
  template <typename Results, typename Keep>
  void holdAnswer(std::shared_ptr<PendingCall> behind, EntryPoint entryPoint, uint64_t token,
                  std::unordered_map<uint64_t, HeldAnswer>& held, Keep&& keep);
  // The debugger's own has-queues call, served from held[token] if there: delivers its
  // recorded effects, applies the message and returns the rc (throws ProxyError for a held
  // error).
  kj::Maybe<int> serveHeld(std::unordered_map<uint64_t, HeldAnswer>& held, wire::InfoKind kind,
                           uint64_t token, char** message);

  // The DLL's rc, unless a callback hit an error the debugger must see instead.
  template <typename Results>
  int resultOf(const Reply<Results>& reply, int dllRc);

  // Process / image tokens of objects the debugger set up; ProxyError(BAD_HANDLE) otherwise.
  uint64_t setUpProcess(mqs_process* process, EntryPoint entryPoint);
  uint64_t setUpImage(mqs_image* image, EntryPoint entryPoint);

  // Opens the session if needed (ensureSession), then, for an entry point the vendor DLL does
  // not export, gives the answer mqs_entry_points.h decides: throws ProxyError(NO_ENTRY_POINT)
  // naming it and the DLL, or returns mqs_no_information. Null when the call goes on. Every
  // answer for a missing entry point is decided here.
  kj::Maybe<int> openFor(EntryPoint entryPoint);

  // The debugger starts the process's communicator iteration afresh (mqs_update_communicator_
  // list, mqs_setup_communicator_iterator): where the last one stood no longer matters, so a
  // session re-established by this very call does not bring a fresh DLL there (its list may be
  // shorter now). Called before the session is ensured.
  void restartIteration(mqs_process* process);
  // Serves the process's update from its refresh ahead, if the debugger reads every window it
  // was made from as it was then: the DLL read nothing else, so it would answer the same now.
  // Otherwise returns false, with `fresh` holding what was read now, for the update to send.
  bool serveRefreshedAhead(uint64_t process, std::vector<ReadAhead>* fresh);
  // The walk the debugger is being served from for this process, or nullptr.
  RecordedWalk* walkOf(uint64_t process);
  // Stops serving the process from its walk: the server brings the DLL to where the debugger
  // believes it is (sent without waiting, ahead of the next call).
  void leaveWalk(uint64_t process);
  // Replays the debugger-visible effects recorded with a call served from a walk.
  void replay(RecordedWalk::Effects effects);
  // The one path of the seven entry points a walk answers (the iteration, and its
  // communicators' groups and collective states): from the process's walk while the debugger
  // follows it, else forwarded.
  // docs/round-trips.md, "When the debugger leaves the recorded path"
  // `ask(walk, &recorded)` asks the walk, `request(session, token)` sends the call,
  // `step(cursor)` moves the debugger's position the same way either time, and
  // `deliver(answer, token)` writes the out-parameters from either answer: a `Recorded` reader
  // or the server's `Results`, which name their fields alike.
  template <typename Recorded, typename Results, typename Ask, typename Request, typename Step,
            typename Deliver>
  int walkOrForward(EntryPoint entryPoint, mqs_process* process, Ask&& ask, Request&& request,
                    Step&& step, Deliver&& deliver);

  // ---- set-ups answered from a record (SetUpRecall; docs/round-trips.md) ----
  // Under the epoch policy, with MQD_PROXY_STATE_DIR and a server that takes info tokens, a
  // first set-up of an image or process in this client is either recorded (when it consumed
  // nothing the shim did not send it) or, when a record's inputs are proved the same, answered
  // from the record: the set-up and its has-queues call are sent without waiting (recalled_),
  // the debugger gets the recorded answers and an info token the shim chose, and the replies
  // are compared with them before any other request is served (settleRecalled).
  std::unique_ptr<SetUpRecall> recall_;  // null: nothing recorded or recalled
  void openSetUpRecall(bool takesInfoTokens);
  // True when the set-up was answered from a record (the debugger got its answer and info).
  bool recallSetupImage(uint64_t image, const LookupsAhead& ahead);
  bool recallSetupProcess(uint64_t process, bool bigEndian);
  // A call sent with its answer already given to the debugger.
  struct Recalled {
    EntryPoint entryPoint;
    uint64_t token;  // of the image or process
    std::shared_ptr<PendingCall> pending;
    SetUpRecall::Call told;  // what the debugger was told
    uint64_t infoToken = 0;  // the token of the info it was told of (a PutInfo effect)
    std::string warning;     // setup_process: the byte-order warning it was told
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
  // Gives the debugger a recorded call's effects, in order, a put_*_info with `infoToken`.
  void deliverRecorded(const std::vector<SetUpRecall::Effect>& effects, wire::InfoKind kind,
                       uint64_t token, uint64_t infoToken);
  std::deque<Recalled> recalled_;
  // Serves the recalled calls' replies, in order, and compares each with what the debugger was
  // told: a difference is a contradiction (contradict). Before every other request is served.
  // Counted as a round trip (recalledWaits) unless `behindAnother`: a request already sent
  // behind them, whose own round trip the wait overlaps.
  void settleRecalled(bool behindAnother = false);
  // The DLL answered a recalled call otherwise: calls on its object fail until the debugger
  // sets it up again, the DLL's own effects are delivered, and no record is used again.
  void contradict(const Recalled& call, const std::string& how,
                  std::vector<kj::Own<wire::Effect::Reader>> unexpected);
  std::set<std::pair<int, uint64_t>> contradicted_;  // (wire::InfoKind, token)
  // Throws ProxyError(NOT_SET_UP) for a call on a contradicted object.
  void refuseContradicted(wire::InfoKind kind, uint64_t token, EntryPoint entryPoint);
  uint64_t nextChosenInfoToken_ = wire::FIRST_CHOSEN_INFO_TOKEN;
  // Objects set up at least once by this client: only a first set-up is recorded or recalled
  // (the server's caches of the object are then empty, as when the record was made).
  std::set<uint64_t> imagesSetUp_;
  std::set<uint64_t> processesSetUp_;
  // Per image whose set-up was recorded or recalled in this client: its record (without a
  // process part); `recalled` when the image's set-up was answered from it, and then the
  // process parts recorded with it, newest first, for its process's set-up to try.
  struct ImageRecord {
    SetUpRecall::Record record;
    SetUpRecall::Answers answers;  // answered ahead with the image's set-up: what proves it
    bool complete = false;  // its mqs_image_has_queues' outcome is in
    bool recalled = false;
    std::vector<SetUpRecall::ProcessOutcome> processes;
  };
  std::unordered_map<uint64_t, ImageRecord> imageRecords_;
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
  std::optional<ProcessRecording> processRecording_;
  // Starts recording the process's set-up, if its image's set-up is recorded or recalled.
  void startProcessRecording(uint64_t process, bool bigEndian);
  void stopProcessRecording();
  // Where a call being recorded started: the callbacks answered and effects delivered so far
  // (effectLog_: kept while records are (openSetUpRecall), emptied as each entry point starts).
  struct Mark {
    DebuggerSide::Answered answered;
    size_t effects = 0;
  };
  Mark mark() const { return {side_.answered, effectLog_.size()}; }
  std::vector<kj::Own<wire::Effect::Reader>> effectLog_;
  // Whether what the shim answered since `from` is what a recorded set-up may consume: no
  // callback but block reads (none for an image) and at most one put_*_info, on the object
  // itself. Its effects, in order, go to *effects.
  bool answeredOnly(const Mark& from, wire::InfoKind kind, uint64_t token, bool allowReads,
                    std::vector<SetUpRecall::Effect>* effects) const;
  // The image's mqs_image_has_queues outcome, with the look-ups its set-up consumed, for its
  // record.
  void recordImageHasQueues(uint64_t image, const Mark& from,
                            wire::Session::ImageHasQueuesResults::Reader reply);
  // A record's part keyed by what a set-up consumed (a has-queues reply's, nullopt when
  // unknown) and the answers given ahead: false, nothing set, when one was not answered.
  bool keyBy(std::optional<ConsumedLookups::Lookups> consumed,
             const SetUpRecall::Answers& answers, SetUpRecall::LookupList* lookups,
             SetUpRecall::Digest* digest) const;
  // The process's mqs_process_has_queues outcome, with the look-ups its set-up consumed and
  // what the DLL read in it (setUpRead): its record is complete and kept.
  void recordProcessHasQueues(uint64_t process, const Mark& from,
                              wire::Session::ProcessHasQueuesResults::Reader reply);

  // Look-ups answered ahead at mqs_setup_image, under the epoch policy: what the server asked
  // for in this session (DebuggerSide::lookedUp) and, with MQD_PROXY_STATE_DIR, what this DLL
  // build looked up in earlier sessions (the file, opened for the DLL the session loaded and
  // saved after every call that added to it).
  void openLearnedLookups();
  void saveLearnedLookups();

  // Records the sentence for a proxy error, logs it as a warning and returns its code. A
  // missing entry point (MQD_PROXY_ERR_NO_ENTRY_POINT) is logged once per entry point for the
  // life of this client: the vendor DLL will not grow it, and a debugger that asks per
  // communicator (mqs_get_comm_group on MPICH's DLL) would flood its own stderr with one line
  // each. The answer and its sentence are the same every time.
  int report(int code, const std::string& detail, EntryPoint entryPoint);

  std::timed_mutex lock_;
  ClientConfig config_;
  // MQD_PROXY_RECORD: records every session (declared before the connection, which it
  // outlives).
  std::unique_ptr<SessionRecorder> recorder_;
  std::unique_ptr<EventLoopThread> loop_;
  kj::Own<Connection> connection_;  // created, used and destroyed on the loop thread
  DebuggerSide side_;
  DllInfo dll_;
  SessionTicket ticket_;
  SessionSetUp setUp_;
  std::unique_ptr<LearnedLookups> learnedLookups_;  // null: not kept
  size_t lookupsSaved_ = 0;  // DebuggerSide::lookedUp().size() when last saved
  bool sessionOpened_ = false;
  bool basicCallbacksPending_ = false;
  std::unordered_map<uint64_t, size_t> communicatorSize_;  // per process: size last reported
  std::unordered_map<uint64_t, std::unique_ptr<RecordedWalk>> walks_;  // per process
  // Under the epoch policy: each process's next epoch and the refreshes made ahead, with the
  // cost rule they are chosen by (its round trips measured by roundTrip, its read cost by side_
  // or pinned by the read_cost setting).
  RefreshAhead refreshAhead_;
  // A reply named what the process's next update reads (RefreshAhead::keepNextEpoch).
  template <typename Reply>
  void keepNextEpoch(uint64_t process, Reply reply, bool learned) {
    refreshAhead_.keepNextEpoch(process, windowsOf(reply.getNextEpoch()), learned,
                                reply.getReadOnNode());
  }
  // Per process set up: the memory the rest of its set-up (mqs_process_has_queues) is likely
  // to read, as its set-up reply named it (setUpAhead); read and sent with that call.
  std::unordered_map<uint64_t, std::vector<Window>> setUpAhead_;
  // Per image: the memory a set-up of a process of it is likely to read, as the image's
  // mqs_image_has_queues reply named it (setUpAhead); read from each process set up with it,
  // and sent with its mqs_setup_process.
  std::unordered_map<uint64_t, std::vector<Window>> imageSetUpAhead_;
  // named[token] = the windows a reply named, or no entry when it named none.
  static void keepNamed(std::unordered_map<uint64_t, std::vector<Window>>& named, uint64_t token,
                        capnp::List<wire::MemoryWindow>::Reader windows);
  bool serverReadsOnNode_ = false;  // the session's server reads targets on its host
  ClientCounters counters_;
  std::unordered_map<int, char*> proxyErrorText_;
  // Missing entry points already logged (report). Touched only for MQD_PROXY_ERR_NO_ENTRY_POINT,
  // which only a call's body throws, under lock_.
  std::set<EntryPoint> absentLogged_;
  // The vendor DLL's mqs_dll_error_string answers, kept for the session under the epoch policy
  // (the text is taken to depend only on the code; nullptr when the DLL returned NULL).
  std::unordered_map<int, char*> dllErrorText_;
  // Keeps an answer of mqs_dll_error_string, when the policy allows.
  char* rememberDllErrorText(int code, wire::OutString::Reader text);
  StringPool strings_;
};

}  // namespace mqd::client
