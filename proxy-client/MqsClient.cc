#include "MqsClient.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "Bulk.h"
#include "EventLoopThread.h"
#include "Log.h"
#include "OutputApply.h"
#include "ProxyErrors.h"

#ifndef MQD_VERSION
#define MQD_VERSION "unknown"
#endif

namespace mqd::client {
namespace {

// True on a thread while it executes an mqs_* call of this client, callbacks included.
thread_local bool tInCall = false;

std::mutex gErrorTextMutex;  // guards proxyErrorText_, which report() may touch without lock_

// The set-up calls whose answers may come from a record (SetUpRecall): the others first serve
// the calls sent with their answers already given (MqsClient::settleRecalled).
bool isSetUpCall(EntryPoint e) {
  return e == EntryPoint::setup_image || e == EntryPoint::image_has_queues ||
         e == EntryPoint::setup_process || e == EntryPoint::process_has_queues;
}

// The object a set-up call is about: an image or a process.
wire::InfoKind kindOf(EntryPoint e) {
  return e == EntryPoint::setup_image || e == EntryPoint::image_has_queues
             ? wire::InfoKind::IMAGE
             : wire::InfoKind::PROCESS;
}

const char* objectName(wire::InfoKind kind) {
  return kind == wire::InfoKind::IMAGE ? "image" : "process";
}

// An effect as a record keeps it (a put_*_info without its object and token).
SetUpRecall::Effect effectOf(wire::Effect::Reader e) {
  switch (e.which()) {
    case wire::Effect::PUT_INFO: return {SetUpRecall::Effect::PutInfo, {}};
    case wire::Effect::DPRINTS: return {SetUpRecall::Effect::Dprints, e.getDprints()};
    case wire::Effect::DLL_OUTPUT: break;
  }
  auto bytes = e.getDllOutput();
  return {SetUpRecall::Effect::Output, std::string(bytes.asChars().begin(), bytes.size())};
}

kj::Own<wire::OutString::Reader> outStringOf(const SetUpRecall::Message& m) {
  capnp::MallocMessageBuilder builder;
  auto out = builder.initRoot<wire::OutString>();
  m.writeTo(out);
  return capnp::clone(out.asReader());
}

void applyMessage(wire::OutString::Reader in, char** message, StringPool& strings) {
  if (message == nullptr || in.isUntouched()) return;
  if (in.isNull()) {
    *message = nullptr;
  } else {
    *message = strings.intern(safePrintfFormat(in.getText()));
  }
}

}  // namespace

template <typename Results>
class MqsClient::Reply {
 public:
  Reply(std::shared_ptr<PendingCall> call, EventLoopThread& loop)
      : call_(std::move(call)), loop_(&loop) {}
  Reply(Reply&& other) noexcept : call_(std::move(other.call_)), loop_(other.loop_) {}
  Reply& operator=(Reply&&) = delete;
  // The reply is read in place in the RPC system's message, which goes back to the loop
  // thread to be destroyed.
  ~Reply() {
    if (call_) loop_->destroyOnLoop(call_->takeReplyMessage());
  }
  typename Results::Reader get() const { return call_->reply().as<Results>(); }
  PendingCall& call() const { return *call_; }

 private:
  std::shared_ptr<PendingCall> call_;
  EventLoopThread* loop_;
};

MqsClient::MqsClient() = default;

MqsClient::~MqsClient() {
  if (sessionOpened_) MQD_LOG(Info, "session summary: %s", counters_.summary().c_str());
  if (recall_) recall_->save();
  // The connection belongs to the loop thread: destroy it there, then stop the thread.
  if (loop_) {
    try {
      // A call still behind its set-up holds the RPC system's reply: gone on the loop thread.
      loop_->run([this]() {
        behind_.reset();
        recalled_.clear();
        connection_ = nullptr;
      });
    } catch (...) {
    }
    loop_.reset();
  }
}

// ---- machinery ----

int MqsClient::report(int code, const std::string& detail, EntryPoint entryPoint) {
  std::string sentence = std::string("mqd-proxy: ") +
                         (proxyErrorText(code) != nullptr ? proxyErrorText(code) : "error") +
                         ": " + detail + " (in " + nameOf(entryPoint) + ")";
  if (code != MQD_PROXY_ERR_NO_ENTRY_POINT || absentLogged_.insert(entryPoint).second) {
    MQD_LOG(Warn, "%s", sentence.c_str());
  }
  std::lock_guard<std::mutex> guard(gErrorTextMutex);
  proxyErrorText_[code] = strings_.intern(sentence);
  return code;
}

template <typename Body>
int MqsClient::call(EntryPoint entryPoint, Body&& body) {
  if (tInCall) {
    return report(MQD_PROXY_ERR_REENTRANT, "called from inside a debugger callback", entryPoint);
  }
  std::unique_lock<std::timed_mutex> lock(lock_, std::defer_lock);
  if (!lock.try_lock_for(config_.timeout)) {
    return report(MQD_PROXY_ERR_TIMEOUT, "another thread's mqs_* call did not finish",
                  entryPoint);
  }
  tInCall = true;
  struct Reset {
    ~Reset() { tInCall = false; }
  } reset;
  // MQD_PROXY_LOG=trace: one line per call, with what it cost (measured only when tracing).
  struct Trace {
    uint64_t forwarded, callbacks, notifications;
    std::chrono::steady_clock::time_point started;
  };
  std::optional<Trace> trace;
  if (logEnabled(LogLevel::Trace)) {
    trace = Trace{counters_.callsForwarded.load(), counters_.callbacksServed.load(),
                  counters_.notifications.load(), std::chrono::steady_clock::now()};
  }
  int rc = [&]() -> int {
    try {
      effectLog_.clear();  // what the set-ups being recorded delivered (answeredOnly)
      settleBehind();  // its callbacks belong to this call, the debugger's next
      if (!isSetUpCall(entryPoint)) settleRecalled();
      if (processRecording_ && entryPoint != EntryPoint::process_has_queues) {
        stopProcessRecording();  // the debugger left the set-up's order: nothing recorded
      }
      return body();
    } catch (const ProxyError& e) {
      return report(e.code(), e.what(), entryPoint);
    } catch (const kj::Exception& e) {
      std::string detail;
      int code = proxyCodeOf(e, MQD_PROXY_ERR_PROTOCOL, &detail);
      return report(code, detail, entryPoint);
    } catch (const std::exception& e) {
      return report(MQD_PROXY_ERR_PROTOCOL, e.what(), entryPoint);
    } catch (...) {
      return report(MQD_PROXY_ERR_PROTOCOL, "unknown failure", entryPoint);
    }
  }();
  saveLearnedLookups();
  if (recall_ && entryPoint == EntryPoint::update_communicator_list) recall_->save();
  if (trace) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          trace->started)
                    .count();
    bool sent = counters_.callsForwarded.load() != trace->forwarded;
    logf(LogLevel::Trace, "%s -> %d in %.3f ms: %s, %llu callback(s) to the debugger, %llu "
         "notification(s)",
         nameOf(entryPoint), rc, ms, sent ? "forwarded" : "answered in the shim",
         static_cast<unsigned long long>(counters_.callbacksServed.load() - trace->callbacks),
         static_cast<unsigned long long>(counters_.notifications.load() - trace->notifications));
  }
  if (recorder_) recorder_->apiCall(entryPoint, rc);
  return rc;
}

void MqsClient::openSession() {
  std::vector<std::string> problems;
  config_ = ClientConfig::load(&problems);
  refreshAhead_.setCostRule(CostRule(config_.readCost));
  logSetComponent("libmqdproxy");
  logSetLevel(config_.logLevel);
  if (!config_.logFile.empty()) {
    try {
      logSetFile(config_.logFile);
    } catch (const std::exception& e) {
      problems.push_back(std::string("MQD_PROXY_LOG_FILE: ") + e.what());
    }
  }
  for (const std::string& p : problems) MQD_LOG(Warn, "%s", p.c_str());
  if (!config_.record.empty() && !recorder_) {
    recorder_ = std::make_unique<SessionRecorder>(config_.record);
  }
  if (!loop_) loop_ = std::make_unique<EventLoopThread>();
  connect();
  side_.setLevel3(dll_.compatibility >= MQS_INTERFACE_COMPATIBILITY_MPI2);
  sessionOpened_ = true;
  MQD_LOG(Info, "session open with %s: %s", config_.server.c_str(), dll_.path.c_str());
}

void MqsClient::connect() {
  try {
    loop_->run([this]() {
      connection_ = nullptr;  // the old connection, if any, is done with
      return Connection::open(loop_->io(), config_, side_, counters_, recorder_.get())
          .then([this](kj::Own<Connection> c) { connection_ = kj::mv(c); });
    });
  } catch (const kj::Exception& e) {
    std::string detail;
    int code = proxyCodeOf(e, MQD_PROXY_ERR_UNREACHABLE, &detail);
    throw ProxyError(code, detail);
  }
  bool takesInfoTokens = false;
  loop_->run([this, &takesInfoTokens]() {
    dll_ = connection_->dll();
    ticket_ = connection_->ticket();
    takesInfoTokens = connection_->takesInfoTokens();
    serverReadsOnNode_ = connection_->readsOnNode();
  });
  openLearnedLookups();
  openSetUpRecall(takesInfoTokens);
}

void MqsClient::openSetUpRecall(bool takesInfoTokens) {
  // Without a state directory the records are kept in memory only (SetUpRecall): a job never
  // seen has its later images' set-ups answered from the first one's all the same.
  if (config_.cache != wire::CachePolicy::EPOCH || dll_.buildId.empty() || !takesInfoTokens) {
    recall_ = nullptr;
    side_.effectLog = nullptr;
    return;
  }
  if (!recall_ || recall_->buildId() != dll_.buildId) {
    recall_ = std::make_unique<SetUpRecall>(config_.stateDir, dll_.buildId);
  }
  side_.effectLog = &effectLog_;
}

void MqsClient::openLearnedLookups() {
  if (config_.cache != wire::CachePolicy::EPOCH || config_.stateDir.empty() ||
      dll_.buildId.empty()) {
    learnedLookups_ = nullptr;
    return;
  }
  if (learnedLookups_ && learnedLookups_->buildId() == dll_.buildId) return;
  learnedLookups_ = std::make_unique<LearnedLookups>(config_.stateDir, dll_.path, dll_.buildId);
  lookupsSaved_ = 0;
}

void MqsClient::saveLearnedLookups() {
  if (!learnedLookups_ || side_.lookedUp().size() == lookupsSaved_) return;
  learnedLookups_->save(side_.lookedUp());
  lookupsSaved_ = side_.lookedUp().size();
}

void MqsClient::reestablish() {
  std::string oldBuild = dll_.buildId;
  connect();
  ++counters_.reconnects;
  MQD_LOG(Info, "session re-established with %s: replaying the debugger's set-up",
          config_.server.c_str());
  // Nothing recorded by the lost session's DLL is valid for the new one.
  walks_.clear();
  refreshAhead_.clear();
  setUpAhead_.clear();
  imageSetUpAhead_.clear();
  imageHasQueuesAhead_.clear();  // answers of the lost DLL: the debugger's calls go to the new
  processHasQueuesAhead_.clear();
  // Calls sent with their answers given failed with the lost session; the replay below sends
  // their set-ups again, with the info tokens the debugger holds.
  loop_->run([this]() { recalled_.clear(); });
  stopProcessRecording();
  imageRecords_.clear();
  if (dll_.buildId != oldBuild) {
    dllErrorText_.clear();
    side_.forgetLookedUp();  // another DLL build's look-ups
  }
  side_.replaying = true;
  struct Done {
    DebuggerSide& side;
    ~Done() { side.replaying = false; }
  } done{side_};
  if (side_.basicCallbacks() != nullptr) {
    roundTrip<wire::Session::SetupBasicCallbacksResults>(
        EntryPoint::setup_basic_callbacks,
        [](wire::Session::Client& s) { return s.setupBasicCallbacksRequest().send(); });
    basicCallbacksPending_ = false;
  }
  for (const SessionSetUp::Entry& e : setUp_.entries()) {
    uint64_t token = e.token;
    int rc = mqs_ok;
    EntryPoint what = EntryPoint::setup_image;
    switch (e.kind) {
      case SessionSetUp::Kind::Image:
        what = EntryPoint::setup_image;
        rc = sendSetupImage(token).get().getRc();
        if (rc == mqs_ok && e.queriedQueues) {
          what = EntryPoint::image_has_queues;
          rc = sendImageHasQueues(token).get().getRc();
        }
        break;
      case SessionSetUp::Kind::Job:
        if (!dll_.has(EntryPoint::setup_job)) break;
        what = EntryPoint::setup_job;
        rc = sendSetupJob(token).get().getRc();
        break;
      case SessionSetUp::Kind::Process:
        what = EntryPoint::setup_process;
        rc = sendSetupProcess(token, e.targetBigEndian);
        if (rc == mqs_ok && e.queriedQueues) {
          what = EntryPoint::process_has_queues;
          rc = sendProcessHasQueues(token).get().getRc();
        }
        if (rc == mqs_ok && e.updated) {
          what = EntryPoint::update_communicator_list;
          rc = sendUpdate(token, {}).get().getRc();
        }
        if (rc == mqs_ok && e.updated && setUp_.cursor(token).setUp) {
          // Bring the interrupted iteration back to where the debugger stands.
          IterationCursor cursor = setUp_.cursor(token);
          roundTrip<wire::Session::RepositionResults>(
              EntryPoint::setup_communicator_iterator, [token, cursor](wire::Session::Client& s) {
                auto r = s.repositionRequest();
                r.setProcess(token);
                cursor.writeTo(r.initCursor());
                return r.send();
              });
        }
        if (e.newProcessIteration) {
          if (SessionSetUp::Entry* live = setUp_.find(SessionSetUp::Kind::Process, token)) {
            live->newProcessesLost = true;
          }
        }
        break;
    }
    if (rc != mqs_ok) {
      MQD_LOG(Warn, "replaying the set-up: %s answered %d the second time", nameOf(what), rc);
    }
  }
}

void MqsClient::ensureSession() {
  if (!sessionOpened_) {
    openSession();
  } else if (connection_.get() == nullptr || connection_->broken()) {
    reestablish();
  }
  if (basicCallbacksPending_) {
    auto reply = roundTrip<wire::Session::SetupBasicCallbacksResults>(
        EntryPoint::setup_basic_callbacks,
        [](wire::Session::Client& s) { return s.setupBasicCallbacksRequest().send(); });
    (void)reply;
    basicCallbacksPending_ = false;
  }
}

template <typename Results, typename Send>
MqsClient::Reply<Results> MqsClient::roundTrip(EntryPoint entryPoint, Send&& send) {
  settleRecalled();  // their callbacks come first
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<PendingCall> pending = start(entryPoint, std::forward<Send>(send));
  Reply<Results> reply = finish<Results>(std::move(pending), entryPoint);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  refreshAhead_.costRule().roundTripTook(took);
  return reply;
}

template <typename Send>
std::shared_ptr<PendingCall> MqsClient::start(EntryPoint entryPoint, Send&& send) {
  auto pending = std::make_shared<PendingCall>(nameOf(entryPoint));
  ++counters_.callsForwarded;
  loop_->run([&]() {
    Connection& c = *connection_;
    if (c.broken()) {
      pending->fail(MQD_PROXY_ERR_SESSION_LOST, c.brokenReason());
      return;
    }
    c.addCall(pending);
    c.track(pending, send(c.session()));
  });
  return pending;
}

template <typename Results>
MqsClient::Reply<Results> MqsClient::finish(std::shared_ptr<PendingCall> pending,
                                            EntryPoint entryPoint) {
  if (!pending->serve(config_.timeout)) {
    int code = pending->errorCode();
    std::string detail = pending->errorDetail();
    if (code == MQD_PROXY_ERR_TIMEOUT) {
      // A late reply must never be taken for a later call's: give up the connection.
      loop_->run([&]() {
        connection_->markBroken(MQD_PROXY_ERR_SESSION_LOST,
                                std::string("abandoned after ") + nameOf(entryPoint) +
                                    " timed out");
        connection_->forget(pending);
      });
    }
    if (code == MQD_PROXY_ERR_SESSION_LOST) failLost(code, detail, nameOf(entryPoint));
    throw ProxyError(code, detail);
  }
  return Reply<Results>(std::move(pending), *loop_);
}

template <typename Results>
MqsClient::Reply<Results> MqsClient::finishSetUp(std::shared_ptr<PendingCall> setUp,
                                                 EntryPoint entryPoint,
                                                 std::shared_ptr<PendingCall>& behind) {
  auto reply = [&]() {
    try {
      return finish<Results>(std::move(setUp), entryPoint);
    } catch (...) {
      if (behind) drain(std::move(behind));
      throw;
    }
  }();
  // A set-up that answers with a callback's error: the debugger will not ask the call behind.
  if (behind && reply.call().callbackErrorCode() != 0) drain(std::move(behind));
  return reply;
}

void MqsClient::drain(std::shared_ptr<PendingCall> pending) {
  if (!pending->serve(config_.timeout) && pending->errorCode() == MQD_PROXY_ERR_TIMEOUT) {
    loop_->run([&]() {
      connection_->markBroken(MQD_PROXY_ERR_SESSION_LOST,
                              std::string("abandoned after ") + pending->entryPoint() +
                                  " timed out");
      connection_->forget(pending);
    });
  }
  loop_->destroyOnLoop(pending->takeReplyMessage());
}

template <typename Results, typename Keep>
void MqsClient::holdAnswer(std::shared_ptr<PendingCall> behind, EntryPoint entryPoint,
                           uint64_t token, std::unordered_map<uint64_t, HeldAnswer>& held,
                           Keep&& keep) {
  held.erase(token);
  try {
    Reply<Results> reply = finish<Results>(std::move(behind), entryPoint);
    if (reply.get().getSkipped()) return;
    keep(reply.get());
    HeldAnswer answer;
    answer.rc = reply.get().getRc();
    answer.message = capnp::clone(reply.get().getMessage());
    answer.errorCode = reply.call().callbackErrorCode();
    answer.errorDetail = reply.call().callbackErrorDetail();
    held.emplace(token, std::move(answer));
  } catch (const ProxyError& e) {  // the debugger's own call meets it again, in the DLL
    MQD_LOG(Debug, "%s sent behind its set-up: %s", nameOf(entryPoint), e.what());
  }
}

void MqsClient::settleBehind() {
  if (!behind_) return;
  Behind b = std::move(*behind_);
  behind_.reset();
  uint64_t token = b.token;
  Mark before = mark();
  if (b.entryPoint == EntryPoint::image_has_queues) {
    holdAnswer<wire::Session::ImageHasQueuesResults>(
        std::move(b.pending), b.entryPoint, token, imageHasQueuesAhead_,
        [this, token, before](wire::Session::ImageHasQueuesResults::Reader r) {
          keepNamed(imageSetUpAhead_, token, r.getSetUpAhead());
          recordImageHasQueues(token, before, r);
        });
  } else {
    holdAnswer<wire::Session::ProcessHasQueuesResults>(
        std::move(b.pending), b.entryPoint, token, processHasQueuesAhead_,
        [this, token, before](wire::Session::ProcessHasQueuesResults::Reader r) {
          keepNextEpoch(token, r, r.getLearned());
          setUpAhead_.erase(token);  // what it would have been sent with: read already
          recordProcessHasQueues(token, before, r);
        });
  }
}

kj::Maybe<int> MqsClient::serveHeld(std::unordered_map<uint64_t, HeldAnswer>& held,
                                    wire::InfoKind kind, uint64_t token, char** message) {
  auto it = held.find(token);
  if (it == held.end()) return nullptr;
  HeldAnswer answer = std::move(it->second);
  held.erase(it);
  if (answer.errorCode != 0) throw ProxyError(answer.errorCode, answer.errorDetail);
  deliverRecorded(answer.effects, kind, token, 0);
  applyMessage(*answer.message, message, strings_);
  return answer.rc;
}

void MqsClient::failLost(int code, const std::string& detail, const char* entryPoint) {
  std::string again = "; the next call re-establishes the session";
  if (ticket_.key == 0) throw ProxyError(code, detail + again);
  // A crash of the vendor DLL and a network failure look the same from here: ask the server,
  // on a new connection, how the worker ended. Bounded like every call, by the timeout: the
  // server waits for a worker going away for half of it (Connection::postMortem), however
  // slowly a loaded node reaps it.
  auto wait = config_.timeout;
  PostMortem pm;
  try {
    pm = loop_->run([&]() -> kj::Promise<PostMortem> {
      // Over ssh the --stdio server is gone with the connection: it said how its worker
      // ended on ssh's stderr.
      if (connection_) {
        KJ_IF_MAYBE(said, connection_->transportPostMortem(wait)) { return kj::mv(*said); }
      }
      return Connection::postMortem(loop_->io(), config_, ticket_, wait);
    });
  } catch (const kj::Exception& e) {
    throw ProxyError(code, detail + " (the server cannot be asked why: " +
                               e.getDescription().cStr() + ")" + again);
  }
  if (!pm.known) throw ProxyError(code, detail + again);
  if (!pm.ended) {
    throw ProxyError(code, detail + " (the server's worker " + std::to_string(pm.worker) +
                               " is still running: the network failed)" + again);
  }
  if (pm.how == "exit 0") {
    throw ProxyError(code, detail + " (the server's worker " + std::to_string(pm.worker) +
                               " saw the connection end too)" + again);
  }
  std::string how = pm.how.rfind("SIG", 0) == 0 ? "was killed by " + pm.how : "ended (" + pm.how + ")";
  throw ProxyError(MQD_PROXY_ERR_WORKER_DIED,
                   "the server's worker " + std::to_string(pm.worker) + " " + how +
                       " in vendor DLL " + (pm.dll.empty() ? "(none loaded)" : pm.dll) +
                       " during " + (pm.lastCall.empty() ? entryPoint : pm.lastCall) +
                       "; other sessions are unaffected" + again);
}

template <typename Results>
int MqsClient::resultOf(const Reply<Results>& reply, int dllRc) {
  PendingCall& c = reply.call();
  if (c.callbackErrorCode() != 0) throw ProxyError(c.callbackErrorCode(), c.callbackErrorDetail());
  return dllRc;
}

uint64_t MqsClient::setUpProcess(mqs_process* process, EntryPoint entryPoint) {
  uint64_t token = side_.processes.existingToken(process);
  if (token == 0 || !side_.processSetUp(token)) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(nameOf(entryPoint)) +
                         " on a process that was never given to mqs_setup_process");
  }
  refuseContradicted(wire::InfoKind::PROCESS, token, entryPoint);
  // An answer sent behind the set-up serves only the debugger's next call on the process.
  if (entryPoint != EntryPoint::process_has_queues) processHasQueuesAhead_.erase(token);
  return token;
}

void MqsClient::refuseContradicted(wire::InfoKind kind, uint64_t token, EntryPoint entryPoint) {
  if (contradicted_.count({static_cast<int>(kind), token}) == 0) return;
  throw ProxyError(MQD_PROXY_ERR_NOT_SET_UP,
                   std::string(nameOf(entryPoint)) + " on the " + objectName(kind) +
                       " whose set-up was answered from a record that the vendor DLL then "
                       "contradicted: set it up again");
}

uint64_t MqsClient::setUpImage(mqs_image* image, EntryPoint entryPoint) {
  uint64_t token = side_.images.existingToken(image);
  if (token == 0) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(nameOf(entryPoint)) + " on an image that was never given to "
                                               "mqs_setup_image");
  }
  refuseContradicted(wire::InfoKind::IMAGE, token, entryPoint);
  return token;
}

kj::Maybe<int> MqsClient::openFor(EntryPoint entryPoint) {
  ensureSession();
  const EntryPointInfo& info = entryPointInfo(entryPoint);
  switch (info.absent) {
    case Absent::REQUIRED:
    case Absent::SHIM_ANSWERS:
      return nullptr;
    case Absent::NO_ENTRY_POINT:
      if (dll_.has(entryPoint)) return nullptr;
      throw ProxyError(MQD_PROXY_ERR_NO_ENTRY_POINT,
                       std::string(info.name) + " is not provided by vendor DLL " + dll_.path);
    case Absent::NO_INFORMATION:
      if (dll_.has(entryPoint)) return nullptr;
      return static_cast<int>(mqs_no_information);
  }
  return nullptr;
}

void MqsClient::restartIteration(mqs_process* process) {
  uint64_t token = side_.processes.existingToken(process);
  if (token != 0) setUp_.cursor(token).reset();
}

RecordedWalk* MqsClient::walkOf(uint64_t process) {
  auto it = walks_.find(process);
  return it == walks_.end() ? nullptr : it->second.get();
}

void MqsClient::leaveWalk(uint64_t process) {
  auto it = walks_.find(process);
  if (it == walks_.end()) return;
  std::unique_ptr<RecordedWalk> walk = std::move(it->second);
  walks_.erase(it);
  ++counters_.walksLeft;
  loop_->run([&]() {
    if (connection_->broken()) return;
    auto request = connection_->session().repositionRequest();
    request.setProcess(process);
    walk->cursor().writeTo(request.initCursor());
    request.send().detach([](kj::Exception&&) {});
  });
}

void MqsClient::replay(RecordedWalk::Effects effects) {
  ++counters_.callsFromWalk;
  for (auto e : effects) side_.effect(e);
}

template <typename Recorded, typename Results, typename Ask, typename Request, typename Step,
          typename Deliver>
int MqsClient::walkOrForward(EntryPoint entryPoint, mqs_process* process, Ask&& ask,
                             Request&& request, Step&& step, Deliver&& deliver) {
  return call(entryPoint, [&]() -> int {
    // Where an earlier iteration stood no longer matters, even if this call fails.
    if (entryPoint == EntryPoint::setup_communicator_iterator) restartIteration(process);
    KJ_IF_MAYBE(absent, openFor(entryPoint)) {
      setUpProcess(process, entryPoint);  // a process never set up is refused all the same
      return *absent;
    }
    uint64_t token = setUpProcess(process, entryPoint);
    if (RecordedWalk* walk = walkOf(token)) {
      typename Recorded::Reader recorded;
      if (ask(*walk, &recorded)) {
        step(setUp_.cursor(token));
        replay(recorded.getEffects());
        deliver(recorded, token);
        return recorded.getRc();
      }
      leaveWalk(token);
    }
    auto reply = roundTrip<Results>(
        entryPoint, [&](wire::Session::Client& s) { return request(s, token); });
    step(setUp_.cursor(token));
    auto results = reply.get();
    int rc = resultOf(reply, results.getRc());
    deliver(results, token);
    return rc;
  });
}

// ---- version and errors ----

void MqsClient::setupBasicCallbacks(const mqs_basic_callbacks* callbacks) {
  call(EntryPoint::setup_basic_callbacks, [&]() {
    side_.setBasicCallbacks(callbacks);
    // Sent with the next call that needs the server (the DLL only keeps the pointer).
    basicCallbacksPending_ = true;
    return mqs_ok;
  });
}

char* MqsClient::versionString() {
  char* result = nullptr;
  int rc = call(EntryPoint::version_string, [&]() -> int {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::version_string)) return *absent;
    result = strings_.intern(dll_.versionString);
    return mqs_ok;
  });
  if (rc != mqs_ok) {
    result = strings_.intern(std::string("mqd-proxy ") + MQD_VERSION + " (no vendor DLL: " +
                             dllErrorString(rc) + ")");
  }
  return result;
}

int MqsClient::versionCompatibility() {
  int level = MQS_INTERFACE_COMPATIBILITY_MPI1;
  call(EntryPoint::version_compatibility, [&]() -> int {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::version_compatibility)) return *absent;
    level = dll_.compatibility;
    return mqs_ok;
  });
  return level;
}

// The debugger talks to the shim's ABI, not the vendor DLL's: the shim's own width.
int MqsClient::dllTaddrWidth() { return static_cast<int>(sizeof(mqs_taddr_t)); }

char* MqsClient::dllErrorString(int code) {
  if (MQD_PROXY_IS_PROXY_ERROR(code)) {
    std::lock_guard<std::mutex> guard(gErrorTextMutex);
    auto it = proxyErrorText_.find(code);
    if (it != proxyErrorText_.end()) return it->second;
    return strings_.intern(std::string("mqd-proxy: ") + proxyErrorText(code));
  }
  char* result = nullptr;
  int rc = call(EntryPoint::dll_error_string, [&]() -> int {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::dll_error_string)) return *absent;
    auto known = dllErrorText_.find(code);
    if (known != dllErrorText_.end()) {
      ++counters_.errorTextsLocal;
      result = known->second;
      return mqs_ok;
    }
    auto reply = roundTrip<wire::Session::DllErrorStringResults>(
        EntryPoint::dll_error_string, [code](wire::Session::Client& s) {
          auto r = s.dllErrorStringRequest();
          r.setCode(code);
          return r.send();
        });
    result = rememberDllErrorText(code, reply.get().getText());
    return mqs_ok;
  });
  if (rc != mqs_ok) {
    std::string why;
    {
      std::lock_guard<std::mutex> guard(gErrorTextMutex);
      why = proxyErrorText_.count(rc) ? proxyErrorText_[rc] : "";
    }
    result = strings_.intern("mqd-proxy: cannot ask the vendor DLL for the text of error " +
                             std::to_string(code) + ": " + why);
  }
  return result;
}

char* MqsClient::rememberDllErrorText(int code, wire::OutString::Reader text) {
  char* interned = text.isText() ? strings_.intern(text.getText()) : nullptr;
  if (config_.cache == wire::CachePolicy::EPOCH) dllErrorText_[code] = interned;
  return interned;
}

// ---- images ----

int MqsClient::setupImage(mqs_image* image, const mqs_image_callbacks* callbacks) {
  return call(EntryPoint::setup_image, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::setup_image)) return *absent;
    uint64_t token = side_.images.tokenOf(image);
    if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, "NULL image");
    side_.setImageCallbacks(token, callbacks);
    imageSetUpAhead_.erase(token);  // named again by its mqs_image_has_queues
    contradicted_.erase({static_cast<int>(wire::InfoKind::IMAGE), token});
    imageRecords_.erase(token);
    bool first = imagesSetUp_.insert(token).second;
    if (!first || !recall_ || config_.cache != wire::CachePolicy::EPOCH) {
      auto reply = sendSetupImage(token, config_.cache == wire::CachePolicy::EPOCH);
      setUp_.setUp(SessionSetUp::Kind::Image, token);
      return resultOf(reply, reply.get().getRc());
    }
    LookupsAhead ahead = lookupsAhead(token);
    if (recallSetupImage(token, ahead)) {
      setUp_.setUp(SessionSetUp::Kind::Image, token);
      return int(mqs_ok);
    }
    settleRecalled();  // their callbacks are not this set-up's
    Mark before = mark();
    auto reply = sendSetupImage(token, true, &ahead);
    setUp_.setUp(SessionSetUp::Kind::Image, token);
    int rc = resultOf(reply, reply.get().getRc());
    std::vector<SetUpRecall::Effect> effects;
    if (rc == mqs_ok && !ahead.keys.empty() &&
        answeredOnly(before, wire::InfoKind::IMAGE, token, false, &effects)) {
      // Keyed at its has-queues reply, which names what the two calls consumed.
      SetUpRecall::Record record;
      record.image.setUp = SetUpRecall::Call{rc, {}, std::move(effects)};
      imageRecords_[token] = ImageRecord{std::move(record), answersOf(ahead), false, false, {}};
    }
    return rc;
  });
}

int MqsClient::imageHasQueues(mqs_image* image, char** message) {
  return call(EntryPoint::image_has_queues, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::image_has_queues)) return *absent;
    uint64_t token = setUpImage(image, EntryPoint::image_has_queues);
    KJ_IF_MAYBE(rc, serveHeld(imageHasQueuesAhead_, wire::InfoKind::IMAGE, token, message)) {
      setUp_.queriedQueues(SessionSetUp::Kind::Image, token);
      return *rc;
    }
    settleRecalled();  // their callbacks are not this call's
    Mark before = mark();
    auto reply = sendImageHasQueues(token);
    setUp_.queriedQueues(SessionSetUp::Kind::Image, token);
    int rc = resultOf(reply, reply.get().getRc());
    keepNamed(imageSetUpAhead_, token, reply.get().getSetUpAhead());
    recordImageHasQueues(token, before, reply.get());
    applyMessage(reply.get().getMessage(), message, strings_);
    return rc;
  });
}

void MqsClient::destroyImageInfo(mqs_image_info* info) {
  call(EntryPoint::destroy_image_info, [&]() -> int {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::destroy_image_info)) return *absent;
    uint64_t token = reinterpret_cast<uintptr_t>(info);
    side_.infoDestroyed(wire::InfoKind::IMAGE, token);
    refreshAhead_.forgetRefreshes();  // never refresh ahead a process of an image the debugger let go
    imageHasQueuesAhead_.clear();  // the info's image is not known here: none serves any more
    auto reply = roundTrip<wire::Session::DestroyImageInfoResults>(
        EntryPoint::destroy_image_info, [token](wire::Session::Client& s) {
          auto r = s.destroyImageInfoRequest();
          r.setInfo(token);
          return r.send();
        });
    return mqs_ok;
  });
}

// ---- set-ups answered from a record ----

bool MqsClient::recallSetupImage(uint64_t image, const LookupsAhead& ahead) {
  if (ahead.keys.empty() || side_.replaying) return false;
  std::vector<const SetUpRecall::Record*> found = recall_->find(answersOf(ahead));
  if (found.empty()) return false;
  ImageRecord kept{*found.front(), answersOf(ahead), true, true, {}};
  kept.record.process.reset();
  // Of the processes recorded with it, those whose set-up consumed look-ups answered the same
  // for this image: the same process again (or one that shares its addresses).
  for (const SetUpRecall::Record* r : found) {
    if (r->process && SetUpRecall::lookupsProve(*r->process, kept.answers)) {
      kept.processes.push_back(*r->process);
    }
  }
  const SetUpRecall::ImageOutcome& outcome = kept.record.image;
  uint64_t info = 0;
  if (!chooseInfoToken(outcome.setUp, &info)) return false;
  answerFromRecord(EntryPoint::setup_image, image, startSetupImage(image, ahead, info, true),
                   outcome.setUp, info, {}, outcome.hasQueues);
  imageRecords_[image] = std::move(kept);
  return true;
}

bool MqsClient::chooseInfoToken(const SetUpRecall::Call& setUp, uint64_t* info) {
  *info = 0;
  if (!setUp.putsInfo()) return true;
  if (nextChosenInfoToken_ > UINT32_MAX) return false;
  *info = nextChosenInfoToken_++;
  return true;
}

void MqsClient::answerFromRecord(EntryPoint setUpEntry, uint64_t token,
                                 std::shared_ptr<PendingCall> setUp,
                                 const SetUpRecall::Call& told, uint64_t info,
                                 const std::string& warning,
                                 const SetUpRecall::Call& hasQueues) {
  wire::InfoKind kind = kindOf(setUpEntry);
  EntryPoint hasQueuesEntry = kind == wire::InfoKind::IMAGE ? EntryPoint::image_has_queues
                                                            : EntryPoint::process_has_queues;
  recalled_.push_back({setUpEntry, token, std::move(setUp), told, info, warning});
  recalled_.push_back(
      {hasQueuesEntry, token, startHasQueuesBehind(hasQueuesEntry, token), hasQueues, 0, {}});
  deliverRecorded(told.effects, kind, token, info);
  warnOfByteOrder(warning);
  HeldAnswer held;  // its effects reach the debugger inside its own call (serveHeld)
  held.rc = hasQueues.rc;
  held.message = outStringOf(hasQueues.message);
  held.effects = hasQueues.effects;
  (kind == wire::InfoKind::IMAGE ? imageHasQueuesAhead_ : processHasQueuesAhead_)[token] =
      std::move(held);
  ++counters_.setUpsRecalled;
  MQD_LOG(Debug, "%s %llu: set up from a record", objectName(kind),
          static_cast<unsigned long long>(token));
}

bool MqsClient::recallSetupProcess(uint64_t process, bool bigEndian) {
  if (side_.replaying) return false;
  uint64_t image = side_.getImage(process);
  auto it = imageRecords_.find(image);
  if (it == imageRecords_.end() || !it->second.recalled || it->second.processes.empty()) {
    return false;
  }
  DebuggerSide::TypeSizes sizes = side_.getTypeSizes(process);
  // The proof: the same byte order and type sizes, and every byte a recorded set-up read (its
  // setUpRead), read again now and sent with the set-up, which then asks for none of it. That
  // is what the server learned of the process's set-up, which a set-up without a record reads
  // ahead too (setUpAhead). Reads that several records share are made once.
  std::map<std::tuple<uint64_t, uint32_t, uint64_t, uint32_t>, DebuggerSide::Block> blocks;
  const SetUpRecall::ProcessOutcome* proved = nullptr;
  std::vector<ReadAhead> read;
  for (const SetUpRecall::ProcessOutcome& candidate : it->second.processes) {
    SetUpRecall::ProcessInputs inputs(bigEndian, sizes);
    read.clear();
    bool whole = true;
    for (const SetUpRecall::Read& r : candidate.reads) {
      auto key = std::make_tuple(r.address, r.size, r.neededAddress, r.neededSize);
      auto b = blocks.find(key);
      if (b == blocks.end()) {
        b = blocks.emplace(key, side_.readBlock(process, r.address, r.size, r.neededAddress,
                                                r.neededSize)).first;
      }
      whole = inputs.read(r, b->second);
      if (!whole) break;
      bool again = std::any_of(read.begin(), read.end(), [&](const ReadAhead& a) {
        return a.window.address == r.address && a.window.size == r.size;
      });
      if (!again) read.push_back({Window{r.address, r.size}, b->second});
    }
    if (whole && inputs.finish() == candidate.digest) {
      proved = &candidate;
      break;
    }
  }
  if (proved == nullptr) {
    MQD_LOG(Debug, "process %llu: not set up from a record: its memory or facts changed",
            static_cast<unsigned long long>(process));
    return false;
  }
  uint64_t info = 0;
  if (!chooseInfoToken(proved->setUp, &info)) return false;
  answerFromRecord(EntryPoint::setup_process, process,
                   startSetupProcess(process, bigEndian, &image, &sizes, read, info, true),
                   proved->setUp, info, proved->warning, proved->hasQueues);
  return true;
}

void MqsClient::deliverRecorded(const std::vector<SetUpRecall::Effect>& effects,
                                wire::InfoKind kind, uint64_t token, uint64_t infoToken) {
  for (const SetUpRecall::Effect& e : effects) {
    switch (e.kind) {
      case SetUpRecall::Effect::PutInfo: side_.putInfo(kind, token, infoToken); break;
      case SetUpRecall::Effect::Dprints: side_.dprints(e.bytes.c_str()); break;
      case SetUpRecall::Effect::Output: {
        capnp::MallocMessageBuilder builder;
        auto effect = builder.initRoot<wire::Effect>();
        effect.setDllOutput(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(e.bytes.data()), e.bytes.size()));
        side_.effect(effect.asReader());
        break;
      }
    }
  }
}

void MqsClient::settleRecalled(bool behindAnother) {
  if (!recalled_.empty() && !behindAnother) ++counters_.recalledWaits;
  while (!recalled_.empty()) {
    Recalled call = std::move(recalled_.front());
    recalled_.pop_front();
    // What the DLL does now is compared with what the debugger was told, not delivered again.
    std::vector<kj::Own<wire::Effect::Reader>> effects;
    side_.divertEffects = &effects;
    struct Undivert {
      DebuggerSide& side;
      ~Undivert() { side.divertEffects = nullptr; }
    } undivert{side_};
    std::string how;  // empty: as told
    auto compare = [&](int rc, bool skipped, const SetUpRecall::Message* message,
                       const std::string* warning, PendingCall& pending) {
      if (skipped) {
        how = "the server skipped it: its set-up did not answer mqs_ok";
      } else if (pending.callbackErrorCode() != 0) {
        how = "a callback failed: " + pending.callbackErrorDetail();
      } else if (rc != call.told.rc) {
        how = "it answered " + std::to_string(rc) + ", not " + std::to_string(call.told.rc);
      } else if (message != nullptr && !(*message == call.told.message)) {
        how = "its message differs";
      } else if (warning != nullptr && *warning != call.warning) {
        how = "its byte-order warning differs";
      }
    };
    try {
      switch (call.entryPoint) {
        case EntryPoint::setup_image: {
          auto reply = finish<wire::Session::SetupImageResults>(call.pending, call.entryPoint);
          compare(reply.get().getRc(), false, nullptr, nullptr, reply.call());
          break;
        }
        case EntryPoint::image_has_queues: {
          auto reply =
              finish<wire::Session::ImageHasQueuesResults>(call.pending, call.entryPoint);
          auto r = reply.get();
          auto message = SetUpRecall::Message::from(r.getMessage());
          compare(r.getRc(), r.getSkipped(), &message, nullptr, reply.call());
          keepNamed(imageSetUpAhead_, call.token, r.getSetUpAhead());
          break;
        }
        case EntryPoint::setup_process: {
          auto reply = finish<wire::Session::SetupProcessResults>(call.pending, call.entryPoint);
          auto r = reply.get();
          std::string warning = r.getWarning();
          compare(r.getRc(), false, nullptr, &warning, reply.call());
          keepNextEpoch(call.token, r, r.getLearned());
          break;
        }
        default: {  // process_has_queues
          auto reply =
              finish<wire::Session::ProcessHasQueuesResults>(call.pending, call.entryPoint);
          auto r = reply.get();
          auto message = SetUpRecall::Message::from(r.getMessage());
          compare(r.getRc(), r.getSkipped(), &message, nullptr, reply.call());
          if (!r.getSkipped()) keepNextEpoch(call.token, r, r.getLearned());
          break;
        }
      }
    } catch (const ProxyError& e) {
      if (e.code() != MQD_PROXY_ERR_SESSION_LOST && e.code() != MQD_PROXY_ERR_TIMEOUT &&
          e.code() != MQD_PROXY_ERR_WORKER_DIED) {
        how = std::string("the proxy failed it: ") + e.what();  // this call alone
      } else {
        // The session failed under it: the debugger's calls meet that failure, and the lost
        // session's set-up is replayed on the next one. The calls still in flight failed with
        // the connection: draining them does not wait.
        for (Recalled& rest : recalled_) drain(std::move(rest.pending));
        recalled_.clear();
        throw;
      }
    }
    // The effects: those the debugger was told of, in order, the info with its chosen token.
    bool same = effects.size() == call.told.effects.size();
    for (size_t i = 0; same && i < effects.size(); ++i) {
      wire::Effect::Reader now = *effects[i];
      same = effectOf(now) == call.told.effects[i] &&
             (!now.isPutInfo() || (now.getPutInfo().getKind() == kindOf(call.entryPoint) &&
                                   now.getPutInfo().getHandle() == call.token &&
                                   now.getPutInfo().getInfo() == call.infoToken));
    }
    if (how.empty() && !same) how = "its effects differ (put_*_info, dprints or output)";
    if (!how.empty()) contradict(call, how, same ? decltype(effects)() : kj::mv(effects));
  }
}

void MqsClient::contradict(const Recalled& call, const std::string& how,
                           std::vector<kj::Own<wire::Effect::Reader>> unexpected) {
  ++counters_.setUpsContradicted;
  wire::InfoKind kind = kindOf(call.entryPoint);
  contradicted_.insert({static_cast<int>(kind), call.token});
  if (recall_) recall_->refute();
  std::string text = std::string("mqd-proxy: ") + nameOf(call.entryPoint) +
                     " was answered from a record of an earlier session, and the vendor DLL " +
                     "now answers otherwise (" + how + "); calls on this " + objectName(kind) +
                     " fail until it is set up again, and no set-up is answered from a record " +
                     "again";
  MQD_LOG(Warn, "%s", text.c_str());
  side_.dprints(text.c_str());
  // What the DLL did now is the debugger's to see, late as it is.
  for (auto& e : unexpected) {
    try {
      side_.effect(*e);
    } catch (const ProxyError& error) {
      MQD_LOG(Warn, "an effect of a contradicted set-up: %s", error.what());
    }
  }
}

bool MqsClient::answeredOnly(const Mark& from, wire::InfoKind kind, uint64_t token,
                             bool allowReads, std::vector<SetUpRecall::Effect>* effects) const {
  const DebuggerSide::Answered& now = side_.answered;
  uint64_t reads = allowReads ? now.blockFetches - from.answered.blockFetches : 0;
  const char* why = nullptr;
  if (now.callbacks - from.answered.callbacks != reads) {
    why = "it asked the debugger for more than it was sent";
  }
  effects->clear();
  for (size_t i = from.effects; why == nullptr && i < effectLog_.size(); ++i) {
    wire::Effect::Reader e = *effectLog_[i];
    if (e.isPutInfo()) {
      auto put = e.getPutInfo();
      if (put.getKind() != kind || put.getHandle() != token || put.getInfo() == 0) {
        why = "it put an info on another object, or none";
      } else if (std::any_of(effects->begin(), effects->end(), [](const auto& x) {
                   return x.kind == SetUpRecall::Effect::PutInfo;
                 })) {
        why = "it put two infos";
      }
    }
    effects->push_back(effectOf(e));
  }
  if (why != nullptr) {
    MQD_LOG(Debug, "%s %llu: set-up not recorded: %s", objectName(kind),
            static_cast<unsigned long long>(token), why);
    return false;
  }
  return true;
}

void MqsClient::recordImageHasQueues(uint64_t image, const Mark& from,
                                     wire::Session::ImageHasQueuesResults::Reader reply) {
  auto it = imageRecords_.find(image);
  if (it == imageRecords_.end() || it->second.complete) return;
  SetUpRecall::Call call{reply.getRc(), SetUpRecall::Message::from(reply.getMessage()), {}};
  if (!keyBy(ConsumedLookups::from(reply), it->second.answers, &it->second.record.lookups,
             &it->second.record.lookupDigest) ||
      !answeredOnly(from, wire::InfoKind::IMAGE, image, false, &call.effects) ||
      call.putsInfo()) {
    imageRecords_.erase(it);
    return;
  }
  it->second.record.image.hasQueues = std::move(call);
  it->second.complete = true;
  recall_->keep(it->second.record);  // the image alone answers its set-up, if its process's is not kept
}

bool MqsClient::keyBy(std::optional<ConsumedLookups::Lookups> consumed,
                      const SetUpRecall::Answers& answers, SetUpRecall::LookupList* lookups,
                      SetUpRecall::Digest* digest) const {
  std::optional<SetUpRecall::Digest> d;
  if (consumed) d = SetUpRecall::digestOf(*consumed, answers);
  if (!d) return false;
  *lookups = recall_->share(std::move(*consumed));
  *digest = *d;
  return true;
}

void MqsClient::startProcessRecording(uint64_t process, bool bigEndian) {
  stopProcessRecording();
  uint64_t image = side_.getImage(process);
  auto it = imageRecords_.find(image);
  if (it == imageRecords_.end() || !it->second.complete) return;
  processRecording_ =
      ProcessRecording{process, image, bigEndian, side_.getTypeSizes(process), {}, 0, {}};
  side_.onRead = [this](uint64_t p, uint64_t, uint32_t, uint64_t, uint32_t,
                        const DebuggerSide::Block& block) {
    if (!processRecording_ || p != processRecording_->process || block.rc != mqs_ok) return;
    ProcessRecording& rec = *processRecording_;
    rec.bytes += block.bytes.size();
    // A set-up reading more than a request may carry ahead is not recorded (recordProcessHas-
    // Queues): what it read is no longer kept.
    if (rec.bytes > 2 * uint64_t{wire::MAX_BLOCKS_AHEAD_BYTES}) {
      rec.read.clear();
      return;
    }
    std::vector<unsigned char>& kept = rec.read[block.address];
    if (block.bytes.size() > kept.size()) kept = block.bytes;
  };
}

void MqsClient::stopProcessRecording() {
  processRecording_.reset();
  side_.onRead = nullptr;
}

namespace {

// The bytes [address, address + size) out of `read` (start -> bytes), false when they are not
// all there.
bool sliceOf(const std::map<uint64_t, std::vector<unsigned char>>& read, uint64_t address,
             uint32_t size, std::vector<unsigned char>* out) {
  out->clear();
  uint64_t at = address;
  uint64_t end = address + size;
  while (at < end) {
    auto it = read.upper_bound(at);
    if (it == read.begin()) return false;
    --it;
    uint64_t blockEnd = it->first + it->second.size();
    if (blockEnd <= at) return false;
    uint64_t until = std::min(end, blockEnd);
    auto from = it->second.begin() + static_cast<std::ptrdiff_t>(at - it->first);
    out->insert(out->end(), from, from + static_cast<std::ptrdiff_t>(until - at));
    at = until;
  }
  return true;
}

}  // namespace

void MqsClient::recordProcessHasQueues(uint64_t process, const Mark& from,
                                       wire::Session::ProcessHasQueuesResults::Reader reply) {
  if (!processRecording_ || processRecording_->process != process) return;
  ProcessRecording rec = std::move(*processRecording_);
  stopProcessRecording();
  SetUpRecall::Call call{reply.getRc(), SetUpRecall::Message::from(reply.getMessage()), {}};
  if (rec.bytes > 2 * uint64_t{wire::MAX_BLOCKS_AHEAD_BYTES} ||
      !answeredOnly(from, wire::InfoKind::PROCESS, process, true, &call.effects) ||
      call.putsInfo()) {
    return;
  }
  auto it = imageRecords_.find(rec.image);
  if (it == imageRecords_.end() || !it->second.complete) return;
  if (!keyBy(ConsumedLookups::from(reply), it->second.answers, &rec.outcome.lookups,
             &rec.outcome.lookupDigest)) {
    return;
  }
  capnp::List<wire::MemoryWindow>::Reader setUpRead = reply.getSetUpRead();
  // The proof: the bytes the DLL read, which the shim read for it (ahead or asked).
  SetUpRecall::ProcessInputs inputs(rec.bigEndian, rec.sizes);
  uint64_t bytes = 0;
  for (auto w : setUpRead) {
    DebuggerSide::Block block;
    block.rc = mqs_ok;
    block.address = w.getAddress();
    bytes += w.getSize();
    if (bytes > wire::MAX_BLOCKS_AHEAD_BYTES ||
        !sliceOf(rec.read, w.getAddress(), w.getSize(), &block.bytes)) {
      MQD_LOG(Debug, "process %llu: set-up not recorded: it read what the shim did not send",
              static_cast<unsigned long long>(process));
      return;
    }
    SetUpRecall::Read read{w.getAddress(), w.getSize(), w.getAddress(), w.getSize()};
    inputs.read(read, block);
    rec.outcome.reads.push_back(read);
  }
  rec.outcome.hasQueues = std::move(call);
  rec.outcome.digest = inputs.finish();
  SetUpRecall::Record record = it->second.record;
  record.process = std::move(rec.outcome);
  recall_->keep(std::move(record));
}

// ---- processes ----

int MqsClient::setupProcess(mqs_process* process, const mqs_process_callbacks* callbacks) {
  return call(EntryPoint::setup_process, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::setup_process)) return *absent;
    uint64_t token = side_.processes.tokenOf(process);
    if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, "NULL process");
    walks_.erase(token);  // set-up starts the DLL's view of the process afresh
    // Its place in the refresh order starts over too; the other processes' places stand.
    refreshAhead_.forget(token);
    setUpAhead_.erase(token);
    processHasQueuesAhead_.erase(token);
    contradicted_.erase({static_cast<int>(wire::InfoKind::PROCESS), token});
    if (recorder_) recorder_->labelProcess(token);
    side_.setProcessCallbacks(token, callbacks);
    bool bigEndian = side_.probeTargetBigEndian(process, callbacks);
    bool first = processesSetUp_.insert(token).second;
    // A server that reads the target on its host reads what a set-up needs there, for less
    // than the shim's reading it through the debugger: no process set-up is recorded or
    // answered from a record for it.
    if (!first || !recall_ || config_.cache != wire::CachePolicy::EPOCH || serverReadsOnNode_) {
      int rc = sendSetupProcess(token, bigEndian, config_.cache == wire::CachePolicy::EPOCH);
      setUp_.setUp(SessionSetUp::Kind::Process, token).targetBigEndian = bigEndian;
      return rc;
    }
    if (recallSetupProcess(token, bigEndian)) {
      setUp_.setUp(SessionSetUp::Kind::Process, token).targetBigEndian = bigEndian;
      return int(mqs_ok);
    }
    settleRecalled();  // their callbacks are not this set-up's
    startProcessRecording(token, bigEndian);
    Mark before = mark();
    std::string warning;
    int rc = sendSetupProcess(token, bigEndian, true, &warning);
    setUp_.setUp(SessionSetUp::Kind::Process, token).targetBigEndian = bigEndian;
    std::vector<SetUpRecall::Effect> effects;
    if (processRecording_ &&
        (rc != mqs_ok || !answeredOnly(before, wire::InfoKind::PROCESS, token, true, &effects))) {
      stopProcessRecording();
    }
    if (processRecording_) {
      processRecording_->outcome.setUp = SetUpRecall::Call{rc, {}, std::move(effects)};
      processRecording_->outcome.warning = warning;
    }
    return rc;
  });
}

MqsClient::LookupsAhead MqsClient::lookupsAhead(uint64_t image) {
  // Asked of the debugger here, on its thread, before the request leaves: the server then
  // keeps the answers instead of asking for them (one round trip less per image; a server that
  // never saw this DLL asks nothing it would have asked one by one).
  LookupsAhead ahead;
  if (config_.cache != wire::CachePolicy::EPOCH) return ahead;
  std::set<LookupKey> known = side_.lookedUp();
  if (learnedLookups_) known.insert(learnedLookups_->known().begin(), learnedLookups_->known().end());
  if (known.size() > wire::MAX_LOOKUPS_AHEAD) return ahead;
  ahead.keys.assign(known.begin(), known.end());
  try {
    ahead.answers = side_.lookUp(image, ahead.keys);
  } catch (const ProxyError& e) {  // the server asks for what it needs, and meets it there
    MQD_LOG(Debug, "no look-ups answered ahead: %s", e.what());
    ahead = LookupsAhead{};
  }
  return ahead;
}

SetUpRecall::Answers MqsClient::answersOf(const LookupsAhead& ahead) {
  SetUpRecall::Answers answers;
  for (size_t i = 0; i < ahead.keys.size(); ++i) answers.emplace(ahead.keys[i], ahead.answers[i]);
  return answers;
}

std::shared_ptr<PendingCall> MqsClient::startSetupImage(uint64_t image,
                                                        const LookupsAhead& ahead,
                                                        uint64_t infoToken, bool recalled) {
  return start(EntryPoint::setup_image,
               [image, &ahead, infoToken, recalled](wire::Session::Client& s) {
                 auto r = s.setupImageRequest();
                 r.setImage(image);
                 r.setInfoToken(infoToken);
                 r.setRecalled(recalled);
                 if (!ahead.keys.empty()) {
                   auto lookups = r.initAhead(static_cast<unsigned>(ahead.keys.size()));
                   auto out = r.initAnswers(static_cast<unsigned>(ahead.keys.size()));
                   for (unsigned i = 0; i < ahead.keys.size(); ++i) {
                     ahead.keys[i].writeTo(lookups[i]);
                     ahead.answers[i].writeTo(out[i]);
                   }
                 }
                 return r.send();
               });
}

std::shared_ptr<PendingCall> MqsClient::startHasQueuesBehind(EntryPoint entryPoint,
                                                             uint64_t token) {
  if (entryPoint == EntryPoint::image_has_queues) {
    return start(entryPoint, [token](wire::Session::Client& s) {
      auto r = s.imageHasQueuesRequest();
      r.setImage(token);
      r.setAfterSetUp(true);
      return r.send();
    });
  }
  return start(entryPoint, [token](wire::Session::Client& s) {
    auto r = s.processHasQueuesRequest();
    r.setProcess(token);
    r.setAfterSetUp(true);
    return r.send();
  });
}

MqsClient::Reply<wire::Session::SetupImageResults> MqsClient::sendSetupImage(
    uint64_t image, bool hasQueuesBehind, const LookupsAhead* given) {
  settleRecalled();
  LookupsAhead asked;
  if (given == nullptr) asked = lookupsAhead(image);
  auto setUp = startSetupImage(image, given != nullptr ? *given : asked, 0, false);
  std::shared_ptr<PendingCall> behind;
  if (hasQueuesBehind) behind = startHasQueuesBehind(EntryPoint::image_has_queues, image);
  auto reply = finishSetUp<wire::Session::SetupImageResults>(std::move(setUp),
                                                             EntryPoint::setup_image, behind);
  if (behind) behind_ = Behind{EntryPoint::image_has_queues, image, std::move(behind)};
  return reply;
}

MqsClient::Reply<wire::Session::ImageHasQueuesResults> MqsClient::sendImageHasQueues(
    uint64_t image) {
  return roundTrip<wire::Session::ImageHasQueuesResults>(
      EntryPoint::image_has_queues, [image](wire::Session::Client& s) {
        auto r = s.imageHasQueuesRequest();
        r.setImage(image);
        return r.send();
      });
}

MqsClient::Reply<wire::Session::SetupJobResults> MqsClient::sendSetupJob(uint64_t job) {
  return roundTrip<wire::Session::SetupJobResults>(
      EntryPoint::setup_job, [job](wire::Session::Client& s) {
        auto r = s.setupJobRequest();
        r.setJob(job);
        return r.send();
      });
}

MqsClient::Reply<wire::Session::ProcessHasQueuesResults> MqsClient::sendProcessHasQueues(
    uint64_t process, const std::vector<ReadAhead>& ahead) {
  return roundTrip<wire::Session::ProcessHasQueuesResults>(
      EntryPoint::process_has_queues, [this, process, &ahead](wire::Session::Client& s) {
        auto r = s.processHasQueuesRequest();
        r.setProcess(process);
        writeAhead(ahead, connection_->compress(), r);
        return r.send();
      });
}

void MqsClient::keepNamed(std::unordered_map<uint64_t, std::vector<Window>>& named,
                          uint64_t token, capnp::List<wire::MemoryWindow>::Reader windows) {
  if (windows.size() == 0) {
    named.erase(token);
  } else {
    named[token] = windowsOf(windows);
  }
}

std::vector<ReadAhead> MqsClient::readAhead(uint64_t process, const std::vector<Window>& windows) {
  return readWindows(windows, [this, process](uint64_t start, uint32_t size) {
    return side_.readBlock(process, start, size, start, size);
  });
}

MqsClient::Reply<wire::Session::UpdateCommunicatorListResults> MqsClient::sendUpdate(
    uint64_t process, std::vector<ReadAhead> ahead, const std::vector<uint64_t>& others) {
  // The other processes' windows, read inside this call too: the server refreshes them after
  // this one, and what it made of them is served at their own updates once proved current.
  struct Other {
    uint64_t process;
    std::vector<ReadAhead> read;
    uint64_t bytes;
  };
  std::vector<Other> batch;
  for (uint64_t token : others) {
    const std::vector<Window>& windows = *refreshAhead_.nextEpoch(token);
    std::vector<ReadAhead> read = readAhead(token, windows);
    if (!read.empty()) batch.push_back({token, std::move(read), bytesOf(windows)});
  }
  if (!batch.empty()) {
    MQD_LOG(Debug, "process %llu: %zu other processes refreshed ahead with its update",
            static_cast<unsigned long long>(process), batch.size());
  }
  const ClientCounters* c = &counters_;
  auto reply = roundTrip<wire::Session::UpdateCommunicatorListResults>(
      EntryPoint::update_communicator_list,
      [this, process, c, &ahead, &batch](wire::Session::Client& s) {
        auto r = s.updateCommunicatorListRequest();
        r.setProcess(process);
        c->write(r.initClientCounters(ClientCounters::kCount));
        bool compress = connection_->compress();
        writeAhead(ahead, compress, r);
        if (!batch.empty()) {
          auto out = r.initOthers(static_cast<unsigned>(batch.size()));
          for (unsigned i = 0; i < batch.size(); ++i) {
            out[i].setProcess(batch[i].process);
            writeAhead(batch[i].read, compress, out[i]);
          }
        }
        return r.send();
      });
  keepNextEpoch(process, reply.get(), false);
  if (config_.cache == wire::CachePolicy::EPOCH) {
    auto peers = reply.get().getPeers();
    counters_.peersNamed += peers.size();
    counters_.peersTaken += refreshAhead_.takePeerGuesses(peers, side_.secondsPerByte());
  }
  for (const Other& o : batch) refreshAhead_.offered(o.process);
  for (auto refreshed : reply.get().getRefreshed()) {
    auto it = std::find_if(batch.begin(), batch.end(), [&](const Other& o) {
      return o.process == refreshed.getProcess();
    });
    if (it == batch.end() || it->read.empty()) continue;  // not sent, or named twice
    try {
      refreshAhead_.keep(it->process,
                         {std::make_unique<RecordedWalk>(refreshed.getWalk()),
                          windowsOf(refreshed.getNextEpoch()), std::move(it->read), it->bytes});
    } catch (const ProxyError& e) {  // that process's own update will go to the server
      MQD_LOG(Warn, "a refresh ahead dropped: %s", e.what());
    }
  }
  return reply;
}

MqsClient::Reply<wire::Session::UpdateCommunicatorListResults> MqsClient::sendUpdateCheckedLate(
    uint64_t process, const std::vector<Window>& windows) {
  settleRecalled();  // their callbacks come first
  const ClientCounters* c = &counters_;
  auto pending = start(EntryPoint::update_communicator_list,
                       [process, c, &windows](wire::Session::Client& s) {
                         auto r = s.updateCommunicatorListRequest();
                         r.setProcess(process);
                         c->write(r.initClientCounters(ClientCounters::kCount));
                         auto late = r.initCheckLate(static_cast<unsigned>(windows.size()));
                         for (unsigned i = 0; i < windows.size(); ++i) {
                           late[i].setAddress(windows[i].address);
                           late[i].setSize(windows[i].size);
                         }
                         return r.send();
                       });
  // The debugger reads while the request travels and the server walks; the callbacks the
  // server asks meanwhile wait for finish().
  std::vector<ReadAhead> read;
  try {
    read = readAhead(process, windows);
  } catch (...) {
    drain(std::move(pending));
    throw;
  }
  auto reply = finish<wire::Session::UpdateCommunicatorListResults>(
      std::move(pending), EntryPoint::update_communicator_list);
  auto node = reply.get().getNodeBytes();
  if (reply.get().getLateCheckDeclined() || (node.size() > 0 && !sameAsNode(read, node))) {
    ++counters_.lateChecksRedone;
    MQD_LOG(Debug, "process %llu: %s: its update sent again with the debugger's bytes",
            static_cast<unsigned long long>(process),
            reply.get().getLateCheckDeclined() ? "the server declined the late check"
                                               : "the node's bytes are not the debugger's");
    return sendUpdate(process, std::move(read));
  }
  if (node.size() > 0) ++counters_.lateChecks;
  keepNextEpoch(process, reply.get(), false);
  return reply;
}

int MqsClient::sendSetupProcess(uint64_t token, bool bigEndian, bool hasQueuesBehind,
                                std::string* warning) {
  // The calls answered from records are served before this one, in order. The image's reply
  // among them names what this set-up reads (setUpAhead), so they are served before it is
  // sent; a server that reads on its host names nothing, and this set-up goes right behind.
  if (!serverReadsOnNode_) settleRecalled();
  // Under epoch, the process's image and type sizes travel with the request (asked here, on
  // the debugger's thread, now that it handed over the process's table): every DLL asks for
  // them during its set-up, two round trips a process otherwise.
  // A server that reads on its host gets the rank too, which it needs to find the process
  // there (ProcessFacts.globalRank): one callback round trip less per process.
  struct Facts {
    uint64_t image;
    DebuggerSide::TypeSizes sizes;
    std::optional<int> globalRank;
  };
  std::optional<Facts> facts;
  std::vector<ReadAhead> ahead;  // what earlier set-ups of processes of its image read
  if (config_.cache == wire::CachePolicy::EPOCH) {
    facts = Facts{side_.getImage(token), side_.getTypeSizes(token), std::nullopt};
    if (serverReadsOnNode_) facts->globalRank = side_.getGlobalRank(token);
    auto named = imageSetUpAhead_.find(facts->image);
    if (named != imageSetUpAhead_.end()) ahead = readAhead(token, named->second);
  }
  auto setUp = startSetupProcess(token, bigEndian, facts ? &facts->image : nullptr,
                                 facts ? &facts->sizes : nullptr, ahead, 0, false,
                                 facts ? facts->globalRank : std::nullopt);
  std::shared_ptr<PendingCall> behind;
  if (hasQueuesBehind) behind = startHasQueuesBehind(EntryPoint::process_has_queues, token);
  settleRecalled(true);  // a session lost there fails these two as well
  auto reply = finishSetUp<wire::Session::SetupProcessResults>(std::move(setUp),
                                                               EntryPoint::setup_process, behind);
  int rc = resultOf(reply, reply.get().getRc());
  keepNextEpoch(token, reply.get(), reply.get().getLearned());
  keepNamed(setUpAhead_, token, reply.get().getSetUpAhead());
  if (behind) behind_ = Behind{EntryPoint::process_has_queues, token, std::move(behind)};
  std::string said = reply.get().getWarning();
  warnOfByteOrder(said);
  if (warning != nullptr) *warning = said;
  return rc;
}

void MqsClient::warnOfByteOrder(const std::string& warning) {
  if (warning.empty()) return;
  // The one line the shim adds to what the debugger sees: a native load of the DLL would
  // read the queues wrong just as silently.
  // docs/transparency.md, "What the shim adds"
  std::string text = "mqd-proxy: " + warning;
  MQD_LOG(Warn, "%s", text.c_str());
  side_.dprints(text.c_str());
}

std::shared_ptr<PendingCall> MqsClient::startSetupProcess(
    uint64_t token, bool bigEndian, const uint64_t* image, const DebuggerSide::TypeSizes* sizes,
    const std::vector<ReadAhead>& ahead, uint64_t infoToken, bool recalled,
    std::optional<int> globalRank) {
  return start(EntryPoint::setup_process, [this, token, bigEndian, image, sizes, &ahead,
                                           infoToken, recalled,
                                           globalRank](wire::Session::Client& s) {
    auto r = s.setupProcessRequest();
    r.setProcess(token);
    r.setTargetBigEndian(bigEndian);
    r.setInfoToken(infoToken);
    r.setRecalled(recalled);
    if (image != nullptr && sizes != nullptr) {
      auto out = r.initFacts();
      out.setImage(*image);
      DebuggerSide::writeTypeSizes(*sizes, out.initTypeSizes(static_cast<unsigned>(sizes->size())));
      if (globalRank) out.initGlobalRank().setValue(*globalRank);
    }
    writeAhead(ahead, connection_->compress(), r);
    return r.send();
  });
}

int MqsClient::processHasQueues(mqs_process* process, char** message) {
  return call(EntryPoint::process_has_queues, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::process_has_queues)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::process_has_queues);
    KJ_IF_MAYBE(rc, serveHeld(processHasQueuesAhead_, wire::InfoKind::PROCESS, token, message)) {
      setUp_.queriedQueues(SessionSetUp::Kind::Process, token);
      return *rc;
    }
    leaveWalk(token);
    settleRecalled();  // their callbacks are not this call's
    Mark before = mark();
    std::vector<ReadAhead> ahead;
    auto named = setUpAhead_.find(token);
    if (named != setUpAhead_.end()) {
      ahead = readAhead(token, named->second);
      setUpAhead_.erase(named);
    }
    auto reply = sendProcessHasQueues(token, ahead);
    setUp_.queriedQueues(SessionSetUp::Kind::Process, token);
    int rc = resultOf(reply, reply.get().getRc());
    keepNextEpoch(token, reply.get(), reply.get().getLearned());
    recordProcessHasQueues(token, before, reply.get());
    applyMessage(reply.get().getMessage(), message, strings_);
    return rc;
  });
}

void MqsClient::destroyProcessInfo(mqs_process_info* info) {
  call(EntryPoint::destroy_process_info, [&]() -> int {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::destroy_process_info)) return *absent;
    uint64_t token = reinterpret_cast<uintptr_t>(info);
    side_.infoDestroyed(wire::InfoKind::PROCESS, token);
    refreshAhead_.forgetRefreshes();  // never refresh ahead a process the debugger let go
    processHasQueuesAhead_.clear();  // the info's process is not known here: none serves
    auto reply = roundTrip<wire::Session::DestroyProcessInfoResults>(
        EntryPoint::destroy_process_info, [token](wire::Session::Client& s) {
          auto r = s.destroyProcessInfoRequest();
          r.setInfo(token);
          return r.send();
        });
    return mqs_ok;
  });
}

// ---- communicators ----

int MqsClient::updateCommunicatorList(mqs_process* process) {
  return call(EntryPoint::update_communicator_list, [&]() {
    restartIteration(process);
    KJ_IF_MAYBE(absent, openFor(EntryPoint::update_communicator_list)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::update_communicator_list);
    walks_.erase(token);  // a new epoch: the old record is stale
    bool readOnNode = refreshAhead_.readOnNode(token);
    std::vector<Window> named = refreshAhead_.beginUpdate(token);
    std::vector<ReadAhead> ahead;
    if (serveRefreshedAhead(token, &ahead)) {
      refreshAhead_.visited(token);
      setUp_.updated(token);
      return int(mqs_ok);
    }
    std::vector<Window> checkLate;  // a process read on its node: its check overlaps the trip
    bool epoch = config_.cache == wire::CachePolicy::EPOCH;
    if (ahead.empty() && epoch && !named.empty() &&
        bytesOf(named) <= wire::MAX_BLOCKS_AHEAD_BYTES) {
      if (readOnNode) {
        checkLate = std::move(named);
      } else {
        ahead = readAhead(token, named);
      }
    }
    auto reply = checkLate.empty()
                     ? sendUpdate(token, std::move(ahead),
                                  epoch ? refreshAhead_.candidates(token, side_.secondsPerByte())
                                        : std::vector<uint64_t>())
                     : sendUpdateCheckedLate(token, checkLate);
    refreshAhead_.visited(token);
    setUp_.updated(token);
    int rc = resultOf(reply, reply.get().getRc());
    if (reply.get().getWalk().getSize() > 0) {
      auto walk = std::make_unique<RecordedWalk>(reply.get().getWalk());
      for (auto t : walk->errorTexts()) rememberDllErrorText(t.getCode(), t.getText());
      walks_[token] = std::move(walk);
    }
    return rc;
  });
}

bool MqsClient::serveRefreshedAhead(uint64_t process, std::vector<ReadAhead>* fresh) {
  std::optional<RefreshAhead::Refreshed> made = refreshAhead_.take(process);
  if (!made) return false;
  *fresh = readAhead(process, windowsOf(made->read));
  if (!sameReads(made->read, *fresh)) {
    ++counters_.refreshesStale;
    MQD_LOG(Debug, "process %llu changed since its refresh ahead: refreshed again",
            static_cast<unsigned long long>(process));
    return false;
  }
  ++counters_.refreshesAhead;
  for (auto t : made->walk->errorTexts()) rememberDllErrorText(t.getCode(), t.getText());
  walks_[process] = std::move(made->walk);
  refreshAhead_.setNextEpoch(process, std::move(made->nextEpoch));
  fresh->clear();
  return true;
}

int MqsClient::setupCommunicatorIterator(mqs_process* process) {
  return walkOrForward<wire::RecordedRc, wire::Session::SetupCommunicatorIteratorResults>(
      EntryPoint::setup_communicator_iterator, process,
      [](RecordedWalk& walk, auto* out) { return walk.setupCommunicatorIterator(out); },
      [](wire::Session::Client& s, uint64_t token) {
        auto r = s.setupCommunicatorIteratorRequest();
        r.setProcess(token);
        return r.send();
      },
      [](IterationCursor& at) { at.setupCommunicatorIterator(); }, [](auto, uint64_t) {});
}

int MqsClient::nextCommunicator(mqs_process* process) {
  return walkOrForward<wire::RecordedRc, wire::Session::NextCommunicatorResults>(
      EntryPoint::next_communicator, process,
      [](RecordedWalk& walk, auto* out) { return walk.nextCommunicator(out); },
      [](wire::Session::Client& s, uint64_t token) {
        auto r = s.nextCommunicatorRequest();
        r.setProcess(token);
        return r.send();
      },
      [](IterationCursor& at) { at.nextCommunicator(); }, [](auto, uint64_t) {});
}

int MqsClient::getCommunicator(mqs_process* process, mqs_communicator* communicator) {
  return walkOrForward<wire::RecordedCommunicator, wire::Session::GetCommunicatorResults>(
      EntryPoint::get_communicator, process,
      [](RecordedWalk& walk, auto* out) { return walk.getCommunicator(out); },
      [](wire::Session::Client& s, uint64_t token) {
        auto r = s.getCommunicatorRequest();
        r.setProcess(token);
        return r.send();
      },
      IterationCursor::stay,
      [&](auto answer, uint64_t token) {
        if (communicator == nullptr) return;
        wire::Communicator::Reader out = answer.getCommunicator();
        apply(out, *communicator);
        if (out.getWritten() & wire::Communicator::WRITTEN_SIZE) {
          communicatorSize_[token] =
              communicator->size < 0 ? 0 : static_cast<size_t>(communicator->size);
        }
      });
}

int MqsClient::getCommGroup(mqs_process* process, int* ranks) {
  return walkOrForward<wire::RecordedGroup, wire::Session::GetCommGroupResults>(
      EntryPoint::get_comm_group, process,
      [](RecordedWalk& walk, auto* out) { return walk.getCommGroup(out); },
      [](wire::Session::Client& s, uint64_t token) {
        auto r = s.getCommGroupRequest();
        r.setProcess(token);
        return r.send();
      },
      IterationCursor::stay,
      [&](auto answer, uint64_t token) {
        auto known = communicatorSize_.find(token);
        size_t limit = known == communicatorSize_.end() ? SIZE_MAX : known->second;
        applyGroup(answer.getRanks(), answer.getWritten(), ranks, limit);
      });
}

// ---- operations ----

int MqsClient::setupOperationIterator(mqs_process* process, int opClass) {
  return walkOrForward<wire::RecordedRc, wire::Session::SetupOperationIteratorResults>(
      EntryPoint::setup_operation_iterator, process,
      [opClass](RecordedWalk& walk, auto* out) {
        return walk.setupOperationIterator(opClass, out);
      },
      [opClass](wire::Session::Client& s, uint64_t token) {
        auto r = s.setupOperationIteratorRequest();
        r.setProcess(token);
        r.setOpClass(opClass);
        return r.send();
      },
      [opClass](IterationCursor& at) { at.setupOperationIterator(opClass); },
      [](auto, uint64_t) {});
}

int MqsClient::nextOperation(mqs_process* process, mqs_pending_operation* operation) {
  return walkOrForward<wire::RecordedOperation, wire::Session::NextOperationResults>(
      EntryPoint::next_operation, process,
      [](RecordedWalk& walk, auto* out) { return walk.nextOperation(out); },
      [](wire::Session::Client& s, uint64_t token) {
        auto r = s.nextOperationRequest();
        r.setProcess(token);
        return r.send();
      },
      [](IterationCursor& at) { at.nextOperation(); },
      [operation](auto answer, uint64_t) {
        if (operation != nullptr) apply(answer.getOperation(), *operation);
      });
}

// ---- level 3 and extensions ----

int MqsClient::setupJob(mqs_job* job, const mqs_job_callbacks* callbacks) {
  return call(EntryPoint::setup_job, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::setup_job)) return *absent;
    uint64_t token = side_.jobs.tokenOf(job);
    if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, "NULL job");
    side_.setJobCallbacks(token, callbacks);
    auto reply = sendSetupJob(token);
    setUp_.setUp(SessionSetUp::Kind::Job, token);
    return resultOf(reply, reply.get().getRc());
  });
}

int MqsClient::destroyJobInfo(mqs_job_info* info) {
  return call(EntryPoint::destroy_job_info, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::destroy_job_info)) return *absent;
    uint64_t token = reinterpret_cast<uintptr_t>(info);
    side_.infoDestroyed(wire::InfoKind::JOB, token);
    auto reply = roundTrip<wire::Session::DestroyJobInfoResults>(
        EntryPoint::destroy_job_info, [token](wire::Session::Client& s) {
          auto r = s.destroyJobInfoRequest();
          r.setInfo(token);
          return r.send();
        });
    return resultOf(reply, reply.get().getRc());
  });
}

int MqsClient::setupNewProcessIterator(mqs_process* process) {
  return call(EntryPoint::setup_new_process_iterator, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::setup_new_process_iterator)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::setup_new_process_iterator);
    leaveWalk(token);
    auto reply = roundTrip<wire::Session::SetupNewProcessIteratorResults>(
        EntryPoint::setup_new_process_iterator, [token](wire::Session::Client& s) {
          auto r = s.setupNewProcessIteratorRequest();
          r.setProcess(token);
          return r.send();
        });
    if (SessionSetUp::Entry* e = setUp_.find(SessionSetUp::Kind::Process, token)) {
      e->newProcessIteration = true;
      e->newProcessesLost = false;
    }
    return resultOf(reply, reply.get().getRc());
  });
}

int MqsClient::nextNewProcess(mqs_process* process, mqs_process_location* location) {
  return call(EntryPoint::next_new_process, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::next_new_process)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::next_new_process);
    SessionSetUp::Entry* e = setUp_.find(SessionSetUp::Kind::Process, token);
    if (e != nullptr && e->newProcessesLost) {
      throw ProxyError(MQD_PROXY_ERR_SESSION_LOST,
                       "the new-process iteration was cut when the session was lost; restart "
                       "it with mqs_setup_new_process_iterator");
    }
    leaveWalk(token);
    auto reply = roundTrip<wire::Session::NextNewProcessResults>(
        EntryPoint::next_new_process, [token](wire::Session::Client& s) {
          auto r = s.nextNewProcessRequest();
          r.setProcess(token);
          return r.send();
        });
    auto results = reply.get();
    int rc = resultOf(reply, results.getRc());
    if (location != nullptr) apply(results.getLocation(), *location);
    return rc;
  });
}

int MqsClient::setProcessIdentity(mqs_process* process, int identity) {
  return call(EntryPoint::set_process_identity, [&]() {
    KJ_IF_MAYBE(absent, openFor(EntryPoint::set_process_identity)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::set_process_identity);
    leaveWalk(token);
    auto reply = roundTrip<wire::Session::SetProcessIdentityResults>(
        EntryPoint::set_process_identity, [token, identity](wire::Session::Client& s) {
          auto r = s.setProcessIdentityRequest();
          r.setProcess(token);
          r.setIdentity(identity);
          return r.send();
        });
    return resultOf(reply, reply.get().getRc());
  });
}

int MqsClient::getCommCollState(mqs_process* process, int collective, int* sequence,
                                int* active) {
  return walkOrForward<wire::RecordedCollState, wire::Session::GetCommCollStateResults>(
      EntryPoint::get_comm_coll_state, process,
      [collective](RecordedWalk& walk, auto* out) {
        return walk.getCommCollState(collective, out);
      },
      [collective](wire::Session::Client& s, uint64_t token) {
        auto r = s.getCommCollStateRequest();
        r.setProcess(token);
        r.setCollective(collective);
        return r.send();
      },
      IterationCursor::stay,
      [sequence, active](auto answer, uint64_t) {
        apply(answer.getSequence(), sequence);
        apply(answer.getActive(), active);
      });
}

}  // namespace mqd::client
