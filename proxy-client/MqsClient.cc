#include "MqsClient.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>

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

}  // namespace

MqsClient::MqsClient(std::string server) : serverGiven_(std::move(server)) {
  link_.setRoundTripHooks(
      [this]() { records_.settleRecalled(); },  // their callbacks come first
      [this](double seconds) { refreshAhead_.costRule().roundTripTook(seconds); });
}

MqsClient::~MqsClient() {
  if (sessionOpened_) MQD_LOG(Info, "session summary: %s", counters_.summary().c_str());
  records_.save();
  // Calls still in flight hold the RPC system's replies: gone on the loop thread, before the
  // link closes the connection.
  try {
    link_.onLoop([this]() {
      behind_.reset();
      records_.dropInFlight();
    });
  } catch (...) {
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
      records_.callStarts();
      settleBehind();  // its callbacks belong to this call, the debugger's next
      records_.settleFor(entryPoint);
      return body();
    } catch (const ProxyError& e) {
      return report(e.code(), e.what(), entryPoint);
    } catch (const kj::Exception& e) {
      ProxyError failure = rpcFailure(e);
      return report(failure.code(), failure.what(), entryPoint);
    } catch (const std::exception& e) {
      return report(MQD_PROXY_ERR_PROTOCOL, e.what(), entryPoint);
    } catch (...) {
      return report(MQD_PROXY_ERR_PROTOCOL, "unknown failure", entryPoint);
    }
  }();
  saveLearnedLookups();
  if (entryPoint == EntryPoint::update_communicator_list) records_.save();
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
  if (!serverGiven_.empty()) {
    config_.server = serverGiven_;
    config_.record.clear();  // one recording is of one session (see the constructor)
  }
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
  connect();
  side_.setLevel3(dll_.compatibility >= MQS_INTERFACE_COMPATIBILITY_MPI2);
  sessionOpened_ = true;
  MQD_LOG(Info, "session open with %s: %s", config_.server.c_str(), dll_.path.c_str());
}

void MqsClient::connect() {
  SessionLink::Opened opened = link_.open(side_, recorder_.get());
  dll_ = std::move(opened.dll);
  serverReadsOnNode_ = opened.readsOnNode;
  refreshAhead_.setRequestBytes(opened.refreshAheadBytes);
  nodeRanks_ = std::move(opened.nodeRanks);
  std::sort(nodeRanks_.begin(), nodeRanks_.end());  // searched (NodeRouter): whatever was sent
  nodeProcesses_ = std::move(opened.nodeProcesses);
  openLearnedLookups();
  records_.open(config_, dll_, opened.takesInfoTokens);
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
  held_.clear();  // answers of the lost DLL: the debugger's calls go to the new
  // Calls sent with their answers given failed with the lost session; the replay below sends
  // their set-ups again, with the info tokens the debugger holds.
  records_.sessionLost();
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
    link_.roundTrip<wire::Session::SetupBasicCallbacksResults>(
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
          rc = updates_.send(token, {}).get().getRc();
        }
        if (rc == mqs_ok && e.updated && setUp_.cursor(token).setUp) {
          // Bring the interrupted iteration back to where the debugger stands.
          IterationCursor cursor = setUp_.cursor(token);
          link_.roundTrip<wire::Session::RepositionResults>(
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
  } else if (!link_.usable()) {
    reestablish();
  }
  if (basicCallbacksPending_) {
    auto reply = link_.roundTrip<wire::Session::SetupBasicCallbacksResults>(
        EntryPoint::setup_basic_callbacks,
        [](wire::Session::Client& s) { return s.setupBasicCallbacksRequest().send(); });
    (void)reply;
    basicCallbacksPending_ = false;
  }
}

void MqsClient::settleBehind() {
  if (!behind_) return;
  Behind b = std::move(*behind_);
  behind_.reset();
  uint64_t token = b.token;
  SetUpRecords::Mark before = records_.mark();
  if (b.entryPoint == EntryPoint::image_has_queues) {
    held_.holdReply<wire::Session::ImageHasQueuesResults>(
        link_, std::move(b.pending), b.entryPoint, token,
        [this, token, before](wire::Session::ImageHasQueuesResults::Reader r) {
          imageSetUpAhead_.keep(token, r.getSetUpAhead());
          records_.recordImageHasQueues(token, before, r);
        });
  } else {
    held_.holdReply<wire::Session::ProcessHasQueuesResults>(
        link_, std::move(b.pending), b.entryPoint, token,
        [this, token, before](wire::Session::ProcessHasQueuesResults::Reader r) {
          refreshAhead_.keepNextEpochOf(token, r, r.getLearned());
          setUpAhead_.forget(token);  // what it would have been sent with: read already
          records_.recordProcessHasQueues(token, before, r);
        });
  }
}

uint64_t MqsClient::setUpProcess(mqs_process* process, EntryPoint entryPoint) {
  uint64_t token = side_.processes.existingToken(process);
  if (token == 0 || !side_.processSetUp(token)) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(nameOf(entryPoint)) +
                         " on a process that was never given to mqs_setup_process");
  }
  records_.refuseContradicted(wire::InfoKind::PROCESS, token, entryPoint);
  // An answer sent behind the set-up serves only the debugger's next call on the process.
  if (entryPoint != EntryPoint::process_has_queues) held_.drop(wire::InfoKind::PROCESS, token);
  return token;
}

uint64_t MqsClient::setUpImage(mqs_image* image, EntryPoint entryPoint) {
  uint64_t token = side_.images.existingToken(image);
  if (token == 0) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(nameOf(entryPoint)) + " on an image that was never given to "
                                               "mqs_setup_image");
  }
  records_.refuseContradicted(wire::InfoKind::IMAGE, token, entryPoint);
  return token;
}

std::optional<int> MqsClient::openFor(EntryPoint entryPoint) {
  ensureSession();
  const EntryPointInfo& info = entryPointInfo(entryPoint);
  switch (info.absent) {
    case Absent::REQUIRED:
    case Absent::SHIM_ANSWERS:
      return std::nullopt;
    case Absent::NO_ENTRY_POINT:
      if (dll_.has(entryPoint)) return std::nullopt;
      throw ProxyError(MQD_PROXY_ERR_NO_ENTRY_POINT,
                       std::string(info.name) + " is not provided by vendor DLL " + dll_.path);
    case Absent::NO_INFORMATION:
      if (dll_.has(entryPoint)) return std::nullopt;
      return static_cast<int>(mqs_no_information);
  }
  return std::nullopt;
}

void MqsClient::restartIteration(mqs_process* process) {
  uint64_t token = side_.processes.existingToken(process);
  if (token != 0) setUp_.cursor(token).reset();
}

kj::Maybe<RecordedWalk&> MqsClient::walkOf(uint64_t process) {
  auto it = walks_.find(process);
  if (it == walks_.end()) return nullptr;
  return *it->second;
}

void MqsClient::leaveWalk(uint64_t process) {
  auto it = walks_.find(process);
  if (it == walks_.end()) return;
  std::unique_ptr<RecordedWalk> walk = std::move(it->second);
  walks_.erase(it);
  ++counters_.walksLeft;
  link_.sendDetached([&](wire::Session::Client& s) {
    auto request = s.repositionRequest();
    request.setProcess(process);
    walk->cursor().writeTo(request.initCursor());
    return request.send();
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
    if (auto absent = openFor(entryPoint)) {
      setUpProcess(process, entryPoint);  // a process never set up is refused all the same
      return *absent;
    }
    uint64_t token = setUpProcess(process, entryPoint);
    KJ_IF_MAYBE(walk, walkOf(token)) {
      typename Recorded::Reader recorded;
      if (ask(*walk, &recorded)) {
        step(setUp_.cursor(token));
        replay(recorded.getEffects());
        deliver(recorded, token);
        return recorded.getRc();
      }
      leaveWalk(token);
    }
    auto reply = link_.roundTrip<Results>(
        entryPoint, [&](wire::Session::Client& s) { return request(s, token); });
    step(setUp_.cursor(token));
    int rc = reply.dllResult();
    deliver(reply.get(), token);
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

int MqsClient::openNow() {
  return call(EntryPoint::version_compatibility, [&]() -> int {
    if (auto absent = openFor(EntryPoint::version_compatibility)) return *absent;
    return mqs_ok;
  });
}

char* MqsClient::versionString() {
  char* result = nullptr;
  int rc = call(EntryPoint::version_string, [&]() -> int {
    if (auto absent = openFor(EntryPoint::version_string)) return *absent;
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
    if (auto absent = openFor(EntryPoint::version_compatibility)) return *absent;
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
    if (auto absent = openFor(EntryPoint::dll_error_string)) return *absent;
    auto known = dllErrorText_.find(code);
    if (known != dllErrorText_.end()) {
      ++counters_.errorTextsLocal;
      result = known->second;
      return mqs_ok;
    }
    auto reply = link_.roundTrip<wire::Session::DllErrorStringResults>(
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
    if (auto absent = openFor(EntryPoint::setup_image)) return *absent;
    uint64_t token = side_.images.tokenOf(image);
    if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, "NULL image");
    side_.setImageCallbacks(token, callbacks);
    imageSetUpAhead_.forget(token);  // named again by its mqs_image_has_queues
    bool first = records_.firstSetUp(wire::InfoKind::IMAGE, token);
    if (!first || !records_.active() || config_.cache != wire::CachePolicy::EPOCH) {
      auto reply = sendSetupImage(token, config_.cache == wire::CachePolicy::EPOCH);
      setUp_.setUp(SessionSetUp::Kind::Image, token);
      return reply.dllResult();
    }
    LookupsAhead ahead = lookupsAhead(token);
    if (records_.recallSetupImage(token, ahead)) {
      setUp_.setUp(SessionSetUp::Kind::Image, token);
      return int(mqs_ok);
    }
    records_.settleRecalled();  // their callbacks are not this set-up's
    SetUpRecords::Mark before = records_.mark();
    auto reply = sendSetupImage(token, true, &ahead);
    setUp_.setUp(SessionSetUp::Kind::Image, token);
    int rc = reply.dllResult();
    records_.recordImageSetUp(token, before, rc, ahead);
    return rc;
  });
}

int MqsClient::imageHasQueues(mqs_image* image, char** message) {
  return call(EntryPoint::image_has_queues, [&]() {
    if (auto absent = openFor(EntryPoint::image_has_queues)) return *absent;
    uint64_t token = setUpImage(image, EntryPoint::image_has_queues);
    if (auto rc = held_.serve(side_, strings_, wire::InfoKind::IMAGE, token, message)) {
      setUp_.queriedQueues(SessionSetUp::Kind::Image, token);
      return *rc;
    }
    records_.settleRecalled();  // their callbacks are not this call's
    SetUpRecords::Mark before = records_.mark();
    auto reply = sendImageHasQueues(token);
    setUp_.queriedQueues(SessionSetUp::Kind::Image, token);
    int rc = reply.dllResult();
    imageSetUpAhead_.keep(token, reply.get().getSetUpAhead());
    records_.recordImageHasQueues(token, before, reply.get());
    applyMessage(reply.get().getMessage(), message, strings_);
    return rc;
  });
}

void MqsClient::destroyImageInfo(mqs_image_info* info) {
  call(EntryPoint::destroy_image_info, [&]() -> int {
    if (auto absent = openFor(EntryPoint::destroy_image_info)) return *absent;
    uint64_t token = reinterpret_cast<uintptr_t>(info);
    side_.infoDestroyed(wire::InfoKind::IMAGE, token);
    refreshAhead_.forgetRefreshes();  // never refresh ahead a process of an image the debugger let go
    held_.dropAll(wire::InfoKind::IMAGE);  // the info's image is not known here: none serves
    auto reply = link_.roundTrip<wire::Session::DestroyImageInfoResults>(
        EntryPoint::destroy_image_info, [token](wire::Session::Client& s) {
          auto r = s.destroyImageInfoRequest();
          r.setInfo(token);
          return r.send();
        });
    return mqs_ok;
  });
}

// ---- processes ----

int MqsClient::setupProcess(mqs_process* process, const mqs_process_callbacks* callbacks) {
  return call(EntryPoint::setup_process, [&]() {
    if (auto absent = openFor(EntryPoint::setup_process)) return *absent;
    uint64_t token = side_.processes.tokenOf(process);
    if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, "NULL process");
    walks_.erase(token);  // set-up starts the DLL's view of the process afresh
    // Its place in the refresh order starts over too; the other processes' places stand.
    refreshAhead_.forget(token);
    setUpAhead_.forget(token);
    held_.drop(wire::InfoKind::PROCESS, token);
    if (recorder_) recorder_->labelProcess(token);
    side_.setProcessCallbacks(token, callbacks);
    bool bigEndian = side_.probeTargetBigEndian(process, callbacks);
    bool first = records_.firstSetUp(wire::InfoKind::PROCESS, token);
    // A server that reads the target on its host reads what a set-up needs there, for less
    // than the shim's reading it through the debugger: no process set-up is recorded or
    // answered from a record for it.
    if (!first || !records_.active() || config_.cache != wire::CachePolicy::EPOCH ||
        serverReadsOnNode_) {
      int rc = sendSetupProcess(token, bigEndian, config_.cache == wire::CachePolicy::EPOCH);
      setUp_.setUp(SessionSetUp::Kind::Process, token).targetBigEndian = bigEndian;
      return rc;
    }
    if (records_.recallSetupProcess(token, bigEndian)) {
      setUp_.setUp(SessionSetUp::Kind::Process, token).targetBigEndian = bigEndian;
      return int(mqs_ok);
    }
    records_.settleRecalled();  // their callbacks are not this set-up's
    records_.startProcessRecording(token, bigEndian);
    SetUpRecords::Mark before = records_.mark();
    std::string warning;
    int rc = sendSetupProcess(token, bigEndian, true, &warning);
    setUp_.setUp(SessionSetUp::Kind::Process, token).targetBigEndian = bigEndian;
    records_.recordProcessSetUp(token, before, rc, warning);
    return rc;
  });
}

LookupsAhead MqsClient::lookupsAhead(uint64_t image) {
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

Reply<wire::Session::SetupImageResults> MqsClient::sendSetupImage(
    uint64_t image, bool hasQueuesBehind, const LookupsAhead* given) {
  records_.settleRecalled();
  LookupsAhead asked;
  if (given == nullptr) asked = lookupsAhead(image);
  auto setUp = startSetupImage(link_, image, given != nullptr ? *given : asked, 0, false);
  std::shared_ptr<PendingCall> behind;
  if (hasQueuesBehind) behind = startHasQueuesBehind(link_, EntryPoint::image_has_queues, image);
  auto reply = link_.finishSetUp<wire::Session::SetupImageResults>(
      std::move(setUp), EntryPoint::setup_image, behind);
  if (behind) behind_ = Behind{EntryPoint::image_has_queues, image, std::move(behind)};
  return reply;
}

Reply<wire::Session::ImageHasQueuesResults> MqsClient::sendImageHasQueues(
    uint64_t image) {
  return link_.roundTrip<wire::Session::ImageHasQueuesResults>(
      EntryPoint::image_has_queues, [image](wire::Session::Client& s) {
        auto r = s.imageHasQueuesRequest();
        r.setImage(image);
        return r.send();
      });
}

Reply<wire::Session::SetupJobResults> MqsClient::sendSetupJob(uint64_t job) {
  return link_.roundTrip<wire::Session::SetupJobResults>(
      EntryPoint::setup_job, [job](wire::Session::Client& s) {
        auto r = s.setupJobRequest();
        r.setJob(job);
        return r.send();
      });
}

Reply<wire::Session::ProcessHasQueuesResults> MqsClient::sendProcessHasQueues(
    uint64_t process, const std::vector<ReadAhead>& ahead) {
  return link_.roundTrip<wire::Session::ProcessHasQueuesResults>(
      EntryPoint::process_has_queues, [this, process, &ahead](wire::Session::Client& s) {
        auto r = s.processHasQueuesRequest();
        r.setProcess(process);
        writeAhead(ahead, link_.compress(), r);
        return r.send();
      });
}

int MqsClient::sendSetupProcess(uint64_t token, bool bigEndian, bool hasQueuesBehind,
                                std::string* warning) {
  // The calls answered from records are served before this one, in order. The image's reply
  // among them names what this set-up reads (setUpAhead), so they are served before it is
  // sent; a server that reads on its host names nothing, and this set-up goes right behind.
  if (!serverReadsOnNode_) records_.settleRecalled();
  // Under epoch, the process's image and type sizes travel with the request (asked here, on
  // the debugger's thread, now that it handed over the process's table): every DLL asks for
  // them during its set-up, two round trips a process otherwise.
  // A server that reads on its host gets the rank too, which it needs to find the process
  // there (ProcessFacts.globalRank): one callback round trip less per process; and the
  // debugger's bytes at the AT_RANDOM address and at the stack pointer of each process of that
  // rank there, its proof of identity and the set-up epoch's check: the one callback its
  // set-up would otherwise make. Of the one process of that rank there, the shim reads them
  // while the request travels, and compares them with the node's itself (the proof made late).
  std::optional<ProcessFacts> facts;
  std::vector<ReadAhead> ahead;  // what earlier set-ups of processes of its image read
  LateProof late;
  if (config_.cache == wire::CachePolicy::EPOCH) {
    facts = ProcessFacts{side_.getImage(token), side_.getTypeSizes(token), std::nullopt};
    std::vector<Window> named;
    if (const std::vector<Window>* image = imageSetUpAhead_.find(facts->image)) named = *image;
    if (serverReadsOnNode_) {
      facts->globalRank = side_.getGlobalRank(token);
      auto here = nodeProcesses_.find(*facts->globalRank);
      if (here != nodeProcesses_.end()) {
        bool only = named.empty() && here->second.size() == 1 && here->second[0].stack != 0;
        for (const NodeProcess& p : here->second) {
          named.push_back({p.random, wire::AT_RANDOM_BYTES});
          if (p.stack != 0) named.push_back({p.stack, wire::STACK_CHECK_BYTES});
        }
        std::sort(named.begin(), named.end(),
                  [](const Window& a, const Window& b) { return a.address < b.address; });
        if (only) late.windows.swap(named);  // read while the request travels
      }
    }
    if (!named.empty()) ahead = readAhead(side_, token, named);
  }
  std::shared_ptr<PendingCall> behind;
  std::vector<ReadAhead> read;  // the debugger's bytes of late.windows
  auto first = exchangeSetupProcess(token, bigEndian, facts ? &*facts : nullptr, ahead, late,
                                    hasQueuesBehind, &behind, &read);
  std::optional<Reply<wire::Session::SetupProcessResults>> again;
  if (auto node = first.get().getNodeBytes(); node.size() > 0) {
    if (sameAsNode(read, node)) {
      ++counters_.lateProofs;
      for (auto effect : first.get().getHeldEffects()) side_.deliver(effect);
    } else {
      ++counters_.lateProofsRedone;
      MQD_LOG(Debug, "process %llu: the node's bytes are not the debugger's: its set-up sent "
                     "again with the debugger's",
              static_cast<unsigned long long>(token));
      if (behind) link_.drain(std::move(behind));
      again.emplace(exchangeSetupProcess(token, bigEndian, facts ? &*facts : nullptr, read,
                                         LateProof{{}, true}, hasQueuesBehind, &behind,
                                         nullptr));
    }
  }
  const Reply<wire::Session::SetupProcessResults>& reply = again ? *again : first;
  int rc = reply.dllResult();
  refreshAhead_.keepNextEpochOf(token, reply.get(), reply.get().getLearned());
  setUpAhead_.keep(token, reply.get().getSetUpAhead());
  if (behind) behind_ = Behind{EntryPoint::process_has_queues, token, std::move(behind)};
  std::string said = reply.get().getWarning();
  warnOfByteOrder(side_, said);
  if (warning != nullptr) *warning = said;
  return rc;
}

Reply<wire::Session::SetupProcessResults> MqsClient::exchangeSetupProcess(
    uint64_t token, bool bigEndian, const ProcessFacts* facts,
    const std::vector<ReadAhead>& ahead, const LateProof& late, bool hasQueuesBehind,
    std::shared_ptr<PendingCall>* behind, std::vector<ReadAhead>* read) {
  auto setUp = startSetupProcess(link_, token, bigEndian, facts, ahead, 0, false,
                                 refreshAhead_.costRule(), side_.readPrice(), late);
  if (hasQueuesBehind) {
    *behind = startHasQueuesBehind(link_, EntryPoint::process_has_queues, token);
  }
  records_.settleRecalled(true);  // a session lost there fails these two as well
  if (!late.windows.empty() && read != nullptr) {
    // The debugger reads while the request travels; the callbacks the server asks meanwhile
    // wait for finishSetUp.
    try {
      *read = readAhead(side_, token, late.windows);
    } catch (...) {
      link_.drain(std::move(setUp));
      if (*behind) link_.drain(std::move(*behind));
      throw;
    }
  }
  return link_.finishSetUp<wire::Session::SetupProcessResults>(
      std::move(setUp), EntryPoint::setup_process, *behind);
}

int MqsClient::processHasQueues(mqs_process* process, char** message) {
  return call(EntryPoint::process_has_queues, [&]() {
    if (auto absent = openFor(EntryPoint::process_has_queues)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::process_has_queues);
    if (auto rc = held_.serve(side_, strings_, wire::InfoKind::PROCESS, token, message)) {
      setUp_.queriedQueues(SessionSetUp::Kind::Process, token);
      return *rc;
    }
    leaveWalk(token);
    records_.settleRecalled();  // their callbacks are not this call's
    SetUpRecords::Mark before = records_.mark();
    std::vector<ReadAhead> ahead;
    if (const std::vector<Window>* named = setUpAhead_.find(token)) {
      ahead = readAhead(side_, token, *named);
      setUpAhead_.forget(token);
    }
    auto reply = sendProcessHasQueues(token, ahead);
    setUp_.queriedQueues(SessionSetUp::Kind::Process, token);
    int rc = reply.dllResult();
    refreshAhead_.keepNextEpochOf(token, reply.get(), reply.get().getLearned());
    records_.recordProcessHasQueues(token, before, reply.get());
    applyMessage(reply.get().getMessage(), message, strings_);
    return rc;
  });
}

void MqsClient::destroyProcessInfo(mqs_process_info* info) {
  call(EntryPoint::destroy_process_info, [&]() -> int {
    if (auto absent = openFor(EntryPoint::destroy_process_info)) return *absent;
    uint64_t token = reinterpret_cast<uintptr_t>(info);
    side_.infoDestroyed(wire::InfoKind::PROCESS, token);
    refreshAhead_.forgetRefreshes();  // never refresh ahead a process the debugger let go
    held_.dropAll(wire::InfoKind::PROCESS);  // the info's process is not known here
    auto reply = link_.roundTrip<wire::Session::DestroyProcessInfoResults>(
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
    if (auto absent = openFor(EntryPoint::update_communicator_list)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::update_communicator_list);
    walks_.erase(token);  // a new epoch: the old walk is stale
    CommunicatorUpdates::Outcome outcome = updates_.update(token);
    setUp_.updated(token);
    if (outcome.callbackError) throw *outcome.callbackError;
    if (outcome.walk) {
      for (auto t : outcome.walk->errorTexts()) rememberDllErrorText(t.getCode(), t.getText());
      walks_[token] = std::move(outcome.walk);
    }
    return outcome.rc;
  });
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
    if (auto absent = openFor(EntryPoint::setup_job)) return *absent;
    uint64_t token = side_.jobs.tokenOf(job);
    if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, "NULL job");
    side_.setJobCallbacks(token, callbacks);
    auto reply = sendSetupJob(token);
    setUp_.setUp(SessionSetUp::Kind::Job, token);
    return reply.dllResult();
  });
}

int MqsClient::destroyJobInfo(mqs_job_info* info) {
  return call(EntryPoint::destroy_job_info, [&]() {
    if (auto absent = openFor(EntryPoint::destroy_job_info)) return *absent;
    uint64_t token = reinterpret_cast<uintptr_t>(info);
    side_.infoDestroyed(wire::InfoKind::JOB, token);
    auto reply = link_.roundTrip<wire::Session::DestroyJobInfoResults>(
        EntryPoint::destroy_job_info, [token](wire::Session::Client& s) {
          auto r = s.destroyJobInfoRequest();
          r.setInfo(token);
          return r.send();
        });
    return reply.dllResult();
  });
}

int MqsClient::setupNewProcessIterator(mqs_process* process) {
  return call(EntryPoint::setup_new_process_iterator, [&]() {
    if (auto absent = openFor(EntryPoint::setup_new_process_iterator)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::setup_new_process_iterator);
    leaveWalk(token);
    auto reply = link_.roundTrip<wire::Session::SetupNewProcessIteratorResults>(
        EntryPoint::setup_new_process_iterator, [token](wire::Session::Client& s) {
          auto r = s.setupNewProcessIteratorRequest();
          r.setProcess(token);
          return r.send();
        });
    if (SessionSetUp::Entry* e = setUp_.find(SessionSetUp::Kind::Process, token)) {
      e->newProcessIteration = true;
      e->newProcessesLost = false;
    }
    return reply.dllResult();
  });
}

int MqsClient::nextNewProcess(mqs_process* process, mqs_process_location* location) {
  return call(EntryPoint::next_new_process, [&]() {
    if (auto absent = openFor(EntryPoint::next_new_process)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::next_new_process);
    SessionSetUp::Entry* e = setUp_.find(SessionSetUp::Kind::Process, token);
    if (e != nullptr && e->newProcessesLost) {
      throw ProxyError(MQD_PROXY_ERR_SESSION_LOST,
                       "the new-process iteration was cut when the session was lost; restart "
                       "it with mqs_setup_new_process_iterator");
    }
    leaveWalk(token);
    auto reply = link_.roundTrip<wire::Session::NextNewProcessResults>(
        EntryPoint::next_new_process, [token](wire::Session::Client& s) {
          auto r = s.nextNewProcessRequest();
          r.setProcess(token);
          return r.send();
        });
    int rc = reply.dllResult();
    if (location != nullptr) apply(reply.get().getLocation(), *location);
    return rc;
  });
}

int MqsClient::setProcessIdentity(mqs_process* process, int identity) {
  return call(EntryPoint::set_process_identity, [&]() {
    if (auto absent = openFor(EntryPoint::set_process_identity)) return *absent;
    uint64_t token = setUpProcess(process, EntryPoint::set_process_identity);
    leaveWalk(token);
    auto reply = link_.roundTrip<wire::Session::SetProcessIdentityResults>(
        EntryPoint::set_process_identity, [token, identity](wire::Session::Client& s) {
          auto r = s.setProcessIdentityRequest();
          r.setProcess(token);
          r.setIdentity(identity);
          return r.send();
        });
    return reply.dllResult();
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
