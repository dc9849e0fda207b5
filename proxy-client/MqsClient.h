// MqsClient: the MQD entry points, implemented by a session with an mqd-proxy-server.
//
// One method per mqs_* entry point, with the C ABI's types and results; libmqdproxy.so is a
// thin veneer over one instance, and tests drive it directly. A call:
//   1. takes the call lock (calls are serialised; a call from inside a debugger callback is
//      refused with MQD_PROXY_ERR_REENTRANT);
//   2. opens the session on first need (connect, openSession, the deferred
//      setup_basic_callbacks), or re-establishes it when the last one was lost (SessionSetUp);
//   3. answers from what the shim already holds where that is the DLL's answer: the process's
//      RecordedWalk (a refresh the server walked at mqs_update_communicator_list), a held
//      has-queues answer (HeldAnswers), a set-up record (SetUpRecords);
//   4. otherwise sends one Session request and serves the server's callbacks on this thread
//      until the reply arrives (SessionLink, the call machinery; CommunicatorUpdates for an
//      update);
//   5. applies the captured outputs and returns the DLL's result.
// Failures of the proxy itself return the codes of mqd_proxy.h; mqs_dll_error_string() then
// explains them. Nothing here throws to the caller.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "ClientConfig.h"
#include "ClientCounters.h"
#include "CommunicatorUpdates.h"
#include "Connection.h"
#include "DebuggerSide.h"
#include "EntryPoints.h"
#include "HeldAnswers.h"
#include "LearnedLookups.h"
#include "ReadAhead.h"
#include "RecordedWalk.h"
#include "RefreshAhead.h"
#include "SessionLink.h"
#include "SessionRecorder.h"
#include "SessionSetUp.h"
#include "SetUpRecords.h"
#include "SetUpRequests.h"
#include "StringPool.h"
#include "mqs_entry_points.h"
#include "mqs_interface.h"

namespace mqd::client {

class MqsClient {
 public:
  // `server`: the server of this client's sessions, instead of the `server` setting (one of
  // several, each on its own node: NodeRouter). Such a client records nothing (the `record`
  // setting is for a session with one server).
  explicit MqsClient(std::string server = {});
  ~MqsClient();
  MqsClient(const MqsClient&) = delete;
  MqsClient& operator=(const MqsClient&) = delete;

  // One method per entry point of schema/mqs_entry_points.h, named by its `method` column
  // (nextOperation for mqs_next_operation), with the C signature.
#define MQD_DECLARE_ENTRY_POINT(result, name, method, parameters, arguments, absent) \
  result method parameters;
  MQS_ENTRY_POINTS(MQD_DECLARE_ENTRY_POINT)
#undef MQD_DECLARE_ENTRY_POINT

  // Opens the session now, as the first call that needs the server would (NodeRouter opens
  // every node's at once); mqs_ok or the proxy error code, explained by dllErrorString.
  int openNow();
  // With a server that reads targets on its host: the MPI ranks that host runs, as the session
  // opened (empty otherwise, and before the session opened).
  const std::vector<int>& nodeRanks() const { return nodeRanks_; }
  // The server this client's sessions go to (the `server` setting, or the one it was given).
  const std::string& server() const { return config_.server; }

 private:
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
  // Sends mqs_setup_process for a process whose table the debugger gave; hasQueuesBehind: with
  // mqs_process_has_queues sent behind it (behind_). *warning: the reply's.
  int sendSetupProcess(uint64_t token, bool bigEndian, bool hasQueuesBehind = false,
                       std::string* warning = nullptr);
  // sendSetupProcess' request and its reply: with has-queues behind it when asked (*behind),
  // and with `late` windows, which it reads from the debugger into *read while the request
  // travels (not when `read` is null).
  Reply<wire::Session::SetupProcessResults> exchangeSetupProcess(
      uint64_t token, bool bigEndian, const ProcessFacts* facts,
      const std::vector<ReadAhead>& ahead, const LateProof& late, bool hasQueuesBehind,
      std::shared_ptr<PendingCall>* behind, std::vector<ReadAhead>* read);
  // The look-ups answered ahead with an image's set-up (under the epoch policy): the learned
  // ones (learnedLookups_), with the debugger's answers for this image, asked now.
  LookupsAhead lookupsAhead(uint64_t image);
  // One request each, for the entry points themselves and for a set-up replay.
  // With it, `ahead` (lookupsAhead, asked here when null). hasQueuesBehind: with
  // mqs_image_has_queues sent behind it (behind_).
  Reply<wire::Session::SetupImageResults> sendSetupImage(uint64_t image,
                                                         bool hasQueuesBehind = false,
                                                         const LookupsAhead* ahead = nullptr);
  Reply<wire::Session::ImageHasQueuesResults> sendImageHasQueues(uint64_t image);
  Reply<wire::Session::SetupJobResults> sendSetupJob(uint64_t job);
  // `ahead`: memory read for the rest of the process's set-up (setUpAhead_).
  Reply<wire::Session::ProcessHasQueuesResults> sendProcessHasQueues(
      uint64_t process, const std::vector<ReadAhead>& ahead = {});

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
  // Process / image tokens of objects the debugger set up; ProxyError(BAD_HANDLE) otherwise.
  uint64_t setUpProcess(mqs_process* process, EntryPoint entryPoint);
  uint64_t setUpImage(mqs_image* image, EntryPoint entryPoint);

  // Opens the session if needed (ensureSession), then, for an entry point the vendor DLL does
  // not export, gives the answer mqs_entry_points.h decides: throws ProxyError(NO_ENTRY_POINT)
  // naming it and the DLL, or returns mqs_no_information. Nothing when the call goes on. Every
  // answer for a missing entry point is decided here.
  std::optional<int> openFor(EntryPoint entryPoint);

  // The debugger starts the process's communicator iteration afresh (mqs_update_communicator_
  // list, mqs_setup_communicator_iterator): where the last one stood no longer matters, so a
  // session re-established by this very call does not bring a fresh DLL there (its list may be
  // shorter now). Called before the session is ensured.
  void restartIteration(mqs_process* process);
  // The walk the debugger is being served from for this process, if any.
  kj::Maybe<RecordedWalk&> walkOf(uint64_t process);
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
  ClientCounters counters_;
  // MQD_PROXY_RECORD: records every session (declared before the link, which it outlives).
  std::unique_ptr<SessionRecorder> recorder_;
  SessionLink link_{config_, counters_};
  DebuggerSide side_;
  DllInfo dll_;
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
  // Per process set up: the memory the rest of its set-up (mqs_process_has_queues) is likely
  // to read, as its set-up reply named it; read and sent with that call.
  NamedWindows setUpAhead_;
  // Per image: the memory a set-up of a process of it is likely to read, as the image's
  // mqs_image_has_queues reply named it; read from each process set up with it, and sent with
  // its mqs_setup_process.
  NamedWindows imageSetUpAhead_;
  // Has-queues answers obtained before the debugger asked (behind_, or from set-up records).
  HeldAnswers held_;
  SetUpRecords records_{link_, side_, counters_, held_, refreshAhead_, imageSetUpAhead_};
  CommunicatorUpdates updates_{link_, side_, refreshAhead_, counters_, config_};
  bool serverReadsOnNode_ = false;  // the session's server reads targets on its host
  std::vector<int> nodeRanks_;      // with it: the ranks its host runs (nodeRanks())
  // with it: by rank, where its processes there are read with their set-up (sendSetupProcess)
  std::map<int, std::vector<NodeProcess>> nodeProcesses_;
  std::string serverGiven_;         // the constructor's `server`
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
