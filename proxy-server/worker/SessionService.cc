#include "SessionService.h"

#include <kj/common.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <type_traits>

#include "AsanFiber.h"
#include "Bulk.h"
#include "ByteOrderCheck.h"
#include "CallbackTables.h"
#include "CommunicatorWalker.h"
#include "DllCall.h"
#include "DllOutput.h"
#include "Log.h"
#include "LookupDiscovery.h"
#include "OutputCapture.h"
#include "PeerLayout.h"
#include "ProxyErrors.h"
#include "SessionBoard.h"

namespace mqd::server {
namespace {

// Fiber stack for vendor code: as large as a default thread stack; pages are committed lazily.
constexpr size_t kFiberStackBytes = 8u << 20;

// Marker for "the DLL did not store into this char** output".
char kUntouched;

// While alive, under the epoch policy, the look-ups the DLL makes go to `sink`: what a set-up
// consumed, which its has-queues reply names for the shim's records (proxy-client/SetUpRecall.h).
class Consuming {
 public:
  Consuming(RemoteDebugger& remote, ConsumedLookups& sink) : remote_(remote) {
    if (remote_.options().policy == wire::CachePolicy::EPOCH) remote_.consumeInto(&sink);
  }
  ~Consuming() { remote_.consumeInto(nullptr); }
  Consuming(const Consuming&) = delete;
  Consuming& operator=(const Consuming&) = delete;

 private:
  RemoteDebugger& remote_;
};


void captureMessage(char* message, wire::OutString::Builder out) {
  if (message == &kUntouched) {
    out.setUntouched();
  } else if (message == nullptr) {
    out.setNull();
  } else {
    out.setText(std::string(message, strnlen(message, kMaxDllString)));
  }
}

// The blocks a request carries for one process, paired with their windows.
std::vector<RemoteDebugger::BlockAhead> blocksAhead(capnp::List<wire::MemoryWindow>::Reader windows,
                                                    capnp::List<wire::MemoryBlock>::Reader blocks) {
  if (windows.size() != blocks.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "memory read ahead: windows and blocks differ "
                                             "in number");
  }
  std::vector<RemoteDebugger::BlockAhead> ahead;
  for (unsigned i = 0; i < windows.size(); ++i) {
    ahead.push_back({{windows[i].getAddress(), windows[i].getSize()}, blocks[i]});
  }
  return ahead;
}

// mqs_destroy_*_info of the info `token` names (NULL for token 0; a token that names no live
// info of Object's kind is refused with ProxyError(BAD_HANDLE)), then the token forgotten.
// Returns what the DLL's `destroy` returned.
template <typename Object, typename Info, typename R>
R destroyInfo(DebuggerObjects& objects, DllCall& call, uint64_t token, R (*destroy)(Info*)) {
  static_assert(std::is_same_v<Info*, decltype(Object::info)>);
  auto* info = token == 0 ? nullptr
                          : static_cast<Info*>(
                                objects.infoFromToken(Object::kInfoKind, token, call.name()));
  KJ_DEFER(objects.forgetInfo(token));
  return destroy(info);
}

// The infos of Object's kind still live, each destroyed by `destroy` (when the DLL has it).
template <typename Object, typename Info, typename R>
void destroyLiveInfos(DebuggerObjects& objects, R (*destroy)(Info*)) {
  static_assert(std::is_same_v<Info*, decltype(Object::info)>);
  for (void* info : objects.takeLiveInfos(Object::kInfoKind)) {
    if (destroy) destroy(static_cast<Info*>(info));
  }
}

}  // namespace

SessionService::SessionService(std::unique_ptr<VendorDll> dll, wire::Debugger::Client debugger,
                               kj::Maybe<DllOutput&> output, const SessionConfig& config,
                               Metrics& metrics)
    : metrics_(metrics),
      dll_(std::move(dll)),
      remote_(kj::mv(debugger), config.debugger),
      output_(output),
      learned_(config.debugger.policy == wire::CachePolicy::EPOCH ? config.stateDir : "",
               dll_->path(), dll_->buildId()),
      learnedMemory_(config.debugger.policy == wire::CachePolicy::EPOCH ? config.stateDir : "",
                     dll_->buildId()),
      fibers_(kFiberStackBytes),
      queue_(kj::Promise<void>(kj::READY_NOW).fork()) {
  learnedAtStart_ = learned_.load();
  objects_.reserve(config.resumeInfos);
}

SessionService::~SessionService() noexcept(false) {
  // A DLL call can still be suspended on its fiber, waiting for the debugger, when the session
  // ends under it (the connection closed). Cancel it first, while the objects and the DLL's
  // infos it works on are alive: its pending callback fails and it returns. Destroying the
  // infos under it, and only then cancelling it, let it resume on freed memory (found by
  // fuzz_server_connection). The queue holds the last reference to the fiber: the calls'
  // own branches went with their call contexts, which held this service.
  queue_ = nullptr;  // not a new promise: the event loop may already be gone
  learned_.save(remote_.lookupsSeen());
  objects_.forEachProcess([this](RemoteProcess& p) {
    keepLearnedMemory(p, false);
  });
  destroyLeftInfos();
  MQD_LOG(Info, "session with %s ended", dll_->path().c_str());
}

void SessionService::destroyLeftInfos() {
  // A debugger that detaches often leaves its infos; a native one would keep the DLL's memory
  // until it unloads the DLL, and so would this worker until it exits. Destroy them as the
  // debugger would (jobs, then processes, then images: the outer objects last), outside any
  // call: callbacks that need the debugger are refused (DllCall::current() is null).
  const VendorDll::EntryPoints& entry = dll_->entry();
  try {
    destroyLiveInfos<RemoteJob>(objects_, entry.mqs_destroy_job_info);
    destroyLiveInfos<RemoteProcess>(objects_, entry.mqs_destroy_process_info);
    destroyLiveInfos<RemoteImage>(objects_, entry.mqs_destroy_image_info);
  } catch (...) {
    MQD_LOG(Warn, "destroying the infos left at the end of the session failed");
  }
}

void SessionService::relayDllOutput(DllCall& call) {
  KJ_IF_MAYBE(output, output_) {
    std::string text = output->drain();
    if (!text.empty()) remote_.notify(call, Effect{Effect::Kind::DllOutput, std::move(text)});
  }
}

uint64_t SessionService::fingerprint(RemoteProcess& process) {
  return process.image ? fingerprint(objects_.image(*process.image)) : 0;
}

uint64_t SessionService::fingerprint(const RemoteImage& image) const {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&hash](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) hash = (hash ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  };
  mix(dll_->buildId().data(), dll_->buildId().size());
  bool any = false;
  for (const auto& [name, answer] : image.symbols) {
    if (!answer.written) continue;
    mix(name.data(), name.size());
    mix(&answer.address, sizeof answer.address);
    any = true;
  }
  // Functions are left out: a DLL may look one up without an out-pointer (Open MPI does),
  // which leaves its address unknown in one session and known in the next.
  return any ? hash : 0;
}

void SessionService::startEpoch(DllCall& call, RemoteProcess& process,
                                RemoteDebugger::EpochKind kind,
                                const std::vector<RemoteDebugger::BlockAhead>& ahead) {
  std::vector<TargetMemory::Window> learned;
  if (kind != RemoteDebugger::EpochKind::SetUp &&
      learnedMemoryUsed_.insert(process.token).second) {
    uint64_t print = fingerprint(process);
    learned = learnedMemory_.load(print).windows;
    MQD_LOG(Debug, "process %llu: fingerprint %016llx, %zu learned memory windows",
            static_cast<unsigned long long>(process.token), static_cast<unsigned long long>(print),
            learned.size());
  }
  remote_.newEpoch(call, process, learned, ahead, kind);
}

void SessionService::keepLearnedMemory(RemoteProcess& process, bool updated) {
  if (!process.memory) return;
  if (updated ? !updatedOnce_.insert(process.token).second  // the rest is kept at the end
              : updatedOnce_.count(process.token) == 0) {   // a set-up's reads alone
    return;
  }
  learnedMemory_.save(fingerprint(process),
                      {process.memory->allWindows(), process.memory->setUpWindows()});
}

const LearnedMemory::Record& SessionService::earlierSession(RemoteProcess& process) {
  static const LearnedMemory::Record kNone;
  return learnedMemoryUsed_.count(process.token) == 0 ? learnedMemory_.load(fingerprint(process))
                                                      : kNone;
}

std::vector<TargetMemory::Window> SessionService::firstEpochWindows(RemoteProcess& process,
                                                                   bool* learned) {
  const std::vector<TargetMemory::Window>& earlier = earlierSession(process).windows;
  std::vector<TargetMemory::Window> windows = remote_.firstEpochWindows(process, earlier);
  *learned = !earlier.empty() && process.memory && process.memory->setUpEpoch() &&
             !process.node.proven() && !windows.empty();
  return windows;
}

void SessionService::writeWindows(const std::vector<TargetMemory::Window>& windows,
                                  capnp::List<wire::MemoryWindow>::Builder out) {
  for (unsigned i = 0; i < windows.size(); ++i) {
    out[i].setAddress(windows[i].address);
    out[i].setSize(windows[i].size);
  }
}

std::vector<TargetMemory::Window> SessionService::windowsOf(
    capnp::List<wire::MemoryWindow>::Reader list) {
  std::vector<TargetMemory::Window> windows;
  for (auto w : list) windows.push_back({w.getAddress(), w.getSize()});
  return windows;
}

std::vector<PeerLayout::SymbolPair> SessionService::symbolPairs(const RemoteImage& peer,
                                                                const RemoteImage& own) {
  std::vector<PeerLayout::SymbolPair> pairs;
  for (const auto& [name, answer] : peer.symbols) {
    auto mine = own.symbols.find(name);
    if (answer.written && mine != own.symbols.end() && mine->second.written) {
      pairs.push_back({answer.address, mine->second.address});
    }
  }
  return pairs;
}

std::vector<TargetMemory::Window> SessionService::peerSetUp(const RemoteImage& image) {
  std::vector<TargetMemory::Window> out;
  if (remote_.options().policy != wire::CachePolicy::EPOCH) return out;
  objects_.forEachProcess([&](RemoteProcess& peer) {
    if (!out.empty() || !peer.setUpOk || !peer.memory || !peer.image || !peer.pointerSize()) {
      return;
    }
    std::vector<TargetMemory::Window> read = peer.memory->setUpWindows();
    if (read.empty()) return;
    PeerLayout layout(*peer.memory, read, *peer.pointerSize(), peer.targetBigEndian);
    out = layout.start(symbolPairs(objects_.image(*peer.image), image)).movedBySymbols();
  });
  return out;
}

bool SessionService::setUpUnguided(RemoteProcess& process) {
  if (remote_.options().policy != wire::CachePolicy::EPOCH || !process.memory ||
      !earlierSession(process).setUp.empty()) {
    return false;
  }
  bool peer = false;
  objects_.forEachProcess([&](RemoteProcess& p) {
    peer = peer || (&p != &process && p.setUpOk && p.memory && p.image);
  });
  return !peer;
}

std::vector<SessionService::NamedEpoch> SessionService::guessPeers(DllCall& call,
                                                                  const RemoteProcess& peer,
                                                                  uint64_t callbacks) {
  std::vector<NamedEpoch> named;
  // Not with the node's memory: a process proved there is read on its host for less.
  if (remote_.options().policy != wire::CachePolicy::EPOCH || remote_.options().nodeMemory ||
      !peer.memory || !peer.image || !peer.pointerSize()) {
    return named;
  }
  int pointerSize = *peer.pointerSize();
  PeerLayout layout(*peer.memory, peer.memory->currentWindows(), pointerSize,
                    peer.targetBigEndian);
  const RemoteImage& peerImage = objects_.image(*peer.image);
  std::vector<RemoteProcess*> learners;
  std::vector<PeerLayout::Guess> guesses;
  objects_.forEachProcess([&](RemoteProcess& p) {
    if (&p == &peer || !p.setUpOk || p.info == nullptr || !p.memory || !p.image ||
        !p.memory->setUpEpoch() || updatedOnce_.count(p.token) != 0 || p.node.proven() ||
        p.targetBigEndian != peer.targetBigEndian || p.pointerSize() != pointerSize ||
        !earlierSession(p).windows.empty() ||
        !peerGuessed_.insert(p.token).second) {
      return;
    }
    learners.push_back(&p);
    guesses.push_back(layout.start(symbolPairs(peerImage, objects_.image(*p.image))));
  });
  if (learners.empty()) return named;
  auto started = std::chrono::steady_clock::now();
  int rounds = 0;
  // The rounds: each reads what every guess needs next, in one round trip.
  for (int round = 0; round < PeerLayout::kRounds; ++round) {
    std::vector<RemoteDebugger::Aside> wanted;
    std::vector<size_t> asked;
    uint64_t bytes = 0;
    for (size_t i = 0; i < guesses.size(); ++i) {
      const auto& windows = guesses[i].toRead();
      uint64_t n = 0;
      for (const auto& w : windows) n += w.size;
      if (windows.empty() || bytes + n > wire::MAX_REFRESH_AHEAD_BYTES) continue;
      bytes += n;
      wanted.push_back({learners[i]->token, &windows, &guesses[i].own()});
      asked.push_back(i);
    }
    if (wanted.empty()) break;
    remote_.readAside(call, wanted);
    ++rounds;
    for (size_t i : asked) guesses[i].learn();
  }
  for (size_t i = 0; i < learners.size(); ++i) {
    RemoteProcess& p = *learners[i];
    std::vector<TargetMemory::Window> guess = guesses[i].windows();
    uint64_t guessBytes = 0;
    for (const auto& w : guess) guessBytes += w.size;
    MQD_LOG(Debug, "process %llu: %zu windows (%llu bytes) guessed for its first update from "
                   "process %llu's (%s)",
            static_cast<unsigned long long>(p.token), guess.size(),
            static_cast<unsigned long long>(guessBytes),
            static_cast<unsigned long long>(peer.token), guesses[i].summary().c_str());
    if (guess.empty()) continue;
    bool learned = false;
    std::vector<TargetMemory::Window> next = firstEpochWindows(p, &learned);
    next.insert(next.end(), guess.begin(), guess.end());
    named.push_back({p.token, RemoteDebugger::blocksAheadBound(std::move(next)), callbacks});
    if (logEnabled(LogLevel::Debug)) guessesToMeasure_[p.token] = named.back().windows;
  }
  MQD_LOG(Debug, "first updates of %zu processes guessed from process %llu's: %d rounds, %.1f ms",
          named.size(), static_cast<unsigned long long>(peer.token), rounds,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
              .count());
  return named;
}

void SessionService::requireBasicCallbacks(const char* entryPoint) const {
  if (!basicCallbacksSet_) {
    throw ProxyError(MQD_PROXY_ERR_NOT_SET_UP,
                     std::string(entryPoint) + " before mqs_setup_basic_callbacks");
  }
}

template <typename Context, typename Body>
kj::Promise<void> SessionService::runDll(Context context, EntryPoint entryPoint, Body&& body,
                                         Count counted) {
  metrics_.add(counted);
  auto run = [this, context, entryPoint, body = kj::fwd<Body>(body)]() mutable {
    return fibers_.startFiber(
        [this, context, entryPoint, body = kj::mv(body)](kj::WaitScope& waitScope) mutable {
          AsanFiber onFiber(kFiberStackBytes);
          DllCall call(*this, waitScope, entryPoint);
          remote_.startCall(objects_);
          try {
            metrics_.add(Count::DllCalls);
            body(call);
            relayDllOutput(call);
          } catch (const ProxyError& e) {
            relayDllOutput(call);
            auto failure = context.getResults().initFailure();
            failure.setCode(e.code());
            failure.setDetail(e.what());
          }
          if (remote_.lookupsSeen().size() != lookupsSaved_) {
            lookupsSaved_ = remote_.lookupsSeen().size();
            learned_.save(remote_.lookupsSeen());
          }
        }).attach(kj::defer([]() { AsanFiber::backOnLoopStack(); }));
  };
  auto result = KJ_ASSERT_NONNULL(queue_).addBranch().then(kj::mv(run)).fork();
  queue_ = result.addBranch().catch_([](kj::Exception&&) {}).fork();
  return result.addBranch();
}

// ---- global ----

kj::Promise<void> SessionService::setupBasicCallbacks(SetupBasicCallbacksContext context) {
  return runDll(context, EntryPoint::setup_basic_callbacks, [this](DllCall&) {
    dll_->entry().mqs_setup_basic_callbacks(basicCallbackTable());
    basicCallbacksSet_ = true;
  });
}

kj::Promise<void> SessionService::dllErrorString(DllErrorStringContext context) {
  return runDll(context, EntryPoint::dll_error_string, [this, context](DllCall&) mutable {
    char* text = dll_->entry().mqs_dll_error_string(context.getParams().getCode());
    auto out = context.getResults().initText();
    if (text == nullptr) {
      out.setNull();
    } else {
      out.setText(std::string(text, strnlen(text, kMaxDllString)));
    }
  });
}

// ---- images ----

namespace {

// How a call is counted: one the shim did not wait for (a has-queues call sent behind its
// set-up, a set-up answered from a record) is no round trip.
Count behindOrNot(bool notWaited) { return notWaited ? Count::CallsBehind : Count::Calls; }

}  // namespace

void SessionService::reserveChosenToken(wire::InfoKind kind, uint64_t handle, uint64_t token) {
  if (token == 0) return;
  if (token < wire::FIRST_CHOSEN_INFO_TOKEN || token > UINT32_MAX) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                     "info token " + std::to_string(token) + " is not one the shim may choose");
  }
  objects_.reserve({{kind, handle, token}});
}

kj::Promise<void> SessionService::setupImage(SetupImageContext context) {
  return runDll(context, EntryPoint::setup_image, [this, context](DllCall& call) mutable {
    requireBasicCallbacks(call.name());
    auto params = context.getParams();
    RemoteImage& image = objects_.image(params.getImage());
    image.setUp = true;
    image.setUpOk = false;  // until this set-up answers mqs_ok
    reserveChosenToken(wire::InfoKind::IMAGE, params.getImage(), params.getInfoToken());
    // What earlier sessions with this DLL looked up, and what the images set up before this
    // one in this session did (the other ranks of a job: the same look-ups, each image's own
    // answers): what the shim answered ahead is kept, the rest asked for in one round trip.
    std::set<LookupKey> ahead(learnedAtStart_.begin(), learnedAtStart_.end());
    ahead.insert(remote_.lookupsSeen().begin(), remote_.lookupsSeen().end());
    if (remote_.options().policy == wire::CachePolicy::EPOCH && params.hasAhead()) {
      auto given = params.getAhead();
      if (given.size() > wire::MAX_LOOKUPS_AHEAD) {
        throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                         std::to_string(given.size()) + " look-ups answered ahead, more than " +
                             std::to_string(wire::MAX_LOOKUPS_AHEAD));
      }
      std::vector<LookupKey> keys;
      for (auto l : given) {
        if (auto key = LookupKey::from(l)) keys.push_back(std::move(*key));
      }
      if (keys.size() == given.size()) {  // else a kind this build does not know: all ignored
        remote_.keepLookups(call, image, keys, params.getAnswers());
        for (const LookupKey& k : keys) ahead.erase(k);
      }
    }
    // Nothing known of the DLL's look-ups (a first session ever): the set-up's own, found
    // before it runs, asked in the same round trip.
    bool nothingKnown = ahead.empty() && !(params.hasAhead() && params.getAhead().size() > 0);
    if (nothingKnown && remote_.options().policy == wire::CachePolicy::EPOCH &&
        remote_.options().lookupDiscovery) {
      std::vector<LookupKey> found = discoverLookups(call, image);
      ahead.insert(found.begin(), found.end());
      call.metrics().add(Count::LookupsDiscovered, ahead.size());
    }
    if (!ahead.empty()) {
      remote_.prefetchLookups(call, image, std::vector<LookupKey>(ahead.begin(), ahead.end()));
    }
    image.setUpConsumed.clear();
    Consuming consuming(remote_, image.setUpConsumed);
    int rc = dll_->entry().mqs_setup_image(reinterpret_cast<mqs_image*>(&image),
                                           imageCallbackTable());
    image.setUpOk = rc == mqs_ok;
    auto results = context.getResults();
    results.setRc(rc);
  }, behindOrNot(context.getParams().getRecalled()));
}

std::vector<LookupKey> SessionService::discoverLookups(DllCall& call, RemoteImage& image) {
  std::vector<LookupKey> found;
  for (bool existing : {true, false}) {
    std::vector<LookupKey> named = LookupDiscovery::discover([&](int fd) {
      call.metrics().detach();
      remote_.discoverInto([fd](const LookupKey& key) { LookupDiscovery::writeKey(fd, key); },
                           existing);
      auto* standIn = reinterpret_cast<mqs_image*>(&image);
      if (dll_->entry().mqs_setup_image(standIn, imageCallbackTable()) == mqs_ok) {
        char* message = nullptr;
        dll_->entry().mqs_image_has_queues(standIn, &message);
      }
    });
    found.insert(found.end(), named.begin(), named.end());
  }
  return found;
}

kj::Promise<void> SessionService::imageHasQueues(ImageHasQueuesContext context) {
  return runDll(context, EntryPoint::image_has_queues, [this, context](DllCall& call) mutable {
    RemoteImage& image = objects_.setUpImage(context.getParams().getImage(), call.name());
    auto results = context.getResults();
    if (context.getParams().getAfterSetUp() && !image.setUpOk) {
      results.setSkipped(true);
      return;
    }
    char* message = &kUntouched;
    int rc;
    {
      Consuming consuming(remote_, image.setUpConsumed);
      rc = dll_->entry().mqs_image_has_queues(reinterpret_cast<mqs_image*>(&image), &message);
    }
    results.setRc(rc);
    captureMessage(message, results.initMessage());
    if (remote_.options().policy == wire::CachePolicy::EPOCH) {
      image.setUpConsumed.writeTo(results);
    }
    std::vector<TargetMemory::Window> setUp = learnedMemory_.load(fingerprint(image)).setUp;
    if (setUp.empty()) setUp = peerSetUp(image);
    if (setUp.empty()) setUp = remote_.symbolBlocks(image);
    std::vector<TargetMemory::Window> ahead = remote_.imageSetUpAheadWindows(setUp);
    writeWindows(ahead, results.initSetUpAhead(static_cast<unsigned>(ahead.size())));
  }, behindOrNot(context.getParams().getAfterSetUp()));
}

kj::Promise<void> SessionService::destroyImageInfo(DestroyImageInfoContext context) {
  return runDll(context, EntryPoint::destroy_image_info, [this, context](DllCall& call) mutable {
    requireBasicCallbacks(call.name());  // a DLL frees an info through them
    destroyInfo<RemoteImage>(objects_, call, context.getParams().getInfo(),
                             dll_->entry().mqs_destroy_image_info);
  });
}

// ---- processes ----

kj::Promise<void> SessionService::setupProcess(SetupProcessContext context) {
  return runDll(context, EntryPoint::setup_process, [this, context](DllCall& call) mutable {
    requireBasicCallbacks(call.name());
    auto params = context.getParams();
    RemoteProcess& process = objects_.process(params.getProcess());
    if (params.getRedoesLate()) undoHeldSetUp(call, process);
    process.setUpHeld = false;
    reserveChosenToken(wire::InfoKind::PROCESS, params.getProcess(), params.getInfoToken());
    process.targetBigEndian = params.getTargetBigEndian();
    process.setUp = true;
    process.setUpOk = false;
    remote_.takeShimTimings(params.getTimings());
    remote_.processSetUp(process);
    if (remote_.options().policy == wire::CachePolicy::EPOCH && params.hasFacts()) {
      remote_.keepProcessFacts(process, params.getFacts());
    }
    startEpoch(call, process, RemoteDebugger::EpochKind::SetUp,
               blocksAhead(params.getAhead(), params.getBlocks()));
    if (setUpUnguided(process)) process.memory->setUnguided();
    std::vector<TargetMemory::Window> late = windowsOf(params.getProveLate());
    std::vector<kj::Array<kj::byte>> node;
    if (!late.empty()) node = remote_.proveLateOnNode(call, process, late);
    process.setUpHeld = !node.empty();
    process.setUpConsumed.clear();
    int rc;
    std::vector<Effect> held;
    {
      Consuming consuming(remote_, process.setUpConsumed);
      std::optional<HeldEffects> holding;
      if (process.setUpHeld) holding.emplace(call, &held);
      rc = dll_->entry().mqs_setup_process(reinterpret_cast<mqs_process*>(&process),
                                           processCallbackTable());
      if (holding) relayDllOutput(call);
    }
    process.setUpOk = rc == mqs_ok;
    auto results = context.getResults();
    results.setRc(rc);
    if (process.setUpHeld) {
      writeNodeBytes(late, node, results.initNodeBytes(static_cast<unsigned>(node.size())));
      writeEffects(held, results.initHeldEffects(static_cast<unsigned>(held.size())));
    }
    bool learned = false;
    std::vector<TargetMemory::Window> next = firstEpochWindows(process, &learned);
    writeWindows(next, results.initNextEpoch(static_cast<unsigned>(next.size())));
    results.setLearned(learned);
    results.setReadOnNode(process.node.proven());
    std::vector<TargetMemory::Window> ahead =
        remote_.setUpAheadWindows(process, earlierSession(process).setUp);
    writeWindows(ahead, results.initSetUpAhead(static_cast<unsigned>(ahead.size())));
    const RemoteImage* image = process.image ? &objects_.image(*process.image) : nullptr;
    if (auto warning = byteOrderContradiction(image, process)) {
      MQD_LOG(Warn, "process %llu: %s", static_cast<unsigned long long>(process.token),
              warning->c_str());
      results.setWarning(*warning);
    }
  }, behindOrNot(context.getParams().getRecalled()));
}

kj::Promise<void> SessionService::processHasQueues(ProcessHasQueuesContext context) {
  return runDll(context, EntryPoint::process_has_queues, [this, context](DllCall& call) mutable {
    auto params = context.getParams();
    RemoteProcess& process = objects_.setUpProcess(params.getProcess(), call.name());
    auto results = context.getResults();
    if (params.getAfterSetUp() && !process.setUpOk) {
      results.setSkipped(true);
      return;
    }
    remote_.keepAhead(call, process, blocksAhead(params.getAhead(), params.getBlocks()));
    char* message = &kUntouched;
    int rc;
    std::vector<Effect> held;
    bool holding = params.getAfterSetUp() && process.setUpHeld;
    {
      Consuming consuming(remote_, process.setUpConsumed);
      std::optional<HeldEffects> hold;
      if (holding) hold.emplace(call, &held);
      rc = dll_->entry().mqs_process_has_queues(reinterpret_cast<mqs_process*>(&process),
                                                &message);
      if (hold) relayDllOutput(call);
    }
    results.setRc(rc);
    if (holding) writeEffects(held, results.initHeldEffects(static_cast<unsigned>(held.size())));
    captureMessage(message, results.initMessage());
    if (remote_.options().policy == wire::CachePolicy::EPOCH) {
      process.setUpConsumed.writeTo(results);
    }
    bool learned = false;
    std::vector<TargetMemory::Window> next = firstEpochWindows(process, &learned);
    writeWindows(next, results.initNextEpoch(static_cast<unsigned>(next.size())));
    results.setLearned(learned);
    results.setReadOnNode(process.node.proven());
    if (remote_.options().policy == wire::CachePolicy::EPOCH && process.memory &&
        process.memory->setUpEpoch()) {
      std::vector<TargetMemory::Window> read = process.memory->setUpWindows();
      writeWindows(read, results.initSetUpRead(static_cast<unsigned>(read.size())));
    }
  }, behindOrNot(context.getParams().getAfterSetUp()));
}

kj::Promise<void> SessionService::destroyProcessInfo(DestroyProcessInfoContext context) {
  return runDll(context, EntryPoint::destroy_process_info, [this, context](DllCall& call) mutable {
    requireBasicCallbacks(call.name());  // a DLL frees an info through them
    destroyInfo<RemoteProcess>(objects_, call, context.getParams().getInfo(),
                               dll_->entry().mqs_destroy_process_info);
  });
}

// ---- communicators ----

// The shape of every process-level call that returns only a result code.
#define MQD_PROCESS_RC_CALL(method, Context, which)                                          \
  kj::Promise<void> SessionService::method(Context context) {                                \
    return runDll(context, EntryPoint::which, [this, context](DllCall& call) mutable {       \
      RemoteProcess& process =                                                               \
          objects_.setUpProcess(context.getParams().getProcess(), call.name());              \
      int rc = dll_->entry().mqs_##which(reinterpret_cast<mqs_process*>(&process));          \
      auto results = context.getResults();                                                   \
      results.setRc(rc);                                                                     \
    });                                                                                      \
  }

MQD_PROCESS_RC_CALL(setupCommunicatorIterator, SetupCommunicatorIteratorContext,
                    setup_communicator_iterator)
MQD_PROCESS_RC_CALL(nextCommunicator, NextCommunicatorContext, next_communicator)

kj::Promise<void> SessionService::getCommunicator(GetCommunicatorContext context) {
  return runDll(context, EntryPoint::get_communicator, [this, context](DllCall& call) mutable {
    RemoteProcess& process =
        objects_.setUpProcess(context.getParams().getProcess(), call.name());
    mqs_communicator communicator;
    prepare(communicator);
    int rc = dll_->entry().mqs_get_communicator(reinterpret_cast<mqs_process*>(&process),
                                                &communicator);
    auto results = context.getResults();
    results.setRc(rc);
    capture(communicator, results.initCommunicator());
    if (results.getCommunicator().getWritten() & wire::Communicator::WRITTEN_SIZE) {
      process.communicatorSize = communicator.size;
    }
  });
}

template <typename Results>
bool SessionService::dllExports(const DllCall& call, Results results) const {
  if (dll_->exports(call.entryPoint())) return true;
  switch (entryPointInfo(call.entryPoint()).absent) {
    case Absent::NO_INFORMATION:
      results.setRc(mqs_no_information);
      return false;
    case Absent::NO_ENTRY_POINT:
    case Absent::REQUIRED:      // load() refused the DLL already
    case Absent::SHIM_ANSWERS:  // never forwarded
      break;
  }
  throw ProxyError(MQD_PROXY_ERR_NO_ENTRY_POINT, call.name());
}

kj::Promise<void> SessionService::getCommGroup(GetCommGroupContext context) {
  return runDll(context, EntryPoint::get_comm_group, [this, context](DllCall& call) mutable {
    RemoteProcess& process =
        objects_.setUpProcess(context.getParams().getProcess(), call.name());
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    // The DLL writes as many ints as the size it reported for the communicator.
    GroupBuffer ranks(GroupBuffer::capacityFor(process.communicatorSize));
    int rc = dll_->entry().mqs_get_comm_group(reinterpret_cast<mqs_process*>(&process),
                                              ranks.data());
    results.setRc(rc);
    ranks.capture(results);
  });
}


int SessionService::refresh(DllCall& call, RemoteProcess& process,
                            const std::vector<RemoteDebugger::BlockAhead>& ahead,
                            wire::Bulk::Builder walkOut, RemoteDebugger::EpochKind kind) {
  // The target ran since the last refresh: a new memory epoch, starting with what the shim
  // read ahead.
  startEpoch(call, process, kind, ahead);
  return updateAndWalk(call, process, walkOut);
}

int SessionService::updateAndWalk(DllCall& call, RemoteProcess& process,
                                  wire::Bulk::Builder walkOut) {
  int rc = dll_->entry().mqs_update_communicator_list(reinterpret_cast<mqs_process*>(&process));
  walkOut.setRaw(nullptr);
  if (rc == mqs_ok && remote_.options().policy == wire::CachePolicy::EPOCH) {
    relayDllOutput(call);  // what update printed belongs to update, not to the walk
    capnp::MallocMessageBuilder walk;
    CommunicatorWalker walker(*dll_, process, call);
    if (walker.record(walk)) {
      BulkSizes sizes = setBulkMessage(walkOut, walk, remote_.options().compress);
      metrics_.add(Count::BulkRawBytes, sizes.raw);
      metrics_.add(Count::BulkWireBytes, sizes.wire);
      keepLearnedMemory(process, true);
      logGuessCoverage(process);
    }
  }
  return rc;
}

void SessionService::logGuessCoverage(const RemoteProcess& process) {
  auto found = guessesToMeasure_.find(process.token);
  if (found == guessesToMeasure_.end() || !process.memory) return;
  PeerLayout::Coverage c = PeerLayout::coverage(found->second, process.memory->currentWindows());
  MQD_LOG(Debug, "process %llu: its first update read %llu bytes, %llu of them of the %llu "
                 "guessed ahead, and %llu runs of bytes not guessed",
          static_cast<unsigned long long>(process.token),
          static_cast<unsigned long long>(c.read), static_cast<unsigned long long>(c.readNamed),
          static_cast<unsigned long long>(c.named),
          static_cast<unsigned long long>(c.missedRanges));
  guessesToMeasure_.erase(found);
}

kj::Promise<void> SessionService::updateCommunicatorList(UpdateCommunicatorListContext context) {
  return runDll(context, EntryPoint::update_communicator_list, [this, context](DllCall& call) mutable {
    auto params = context.getParams();
    RemoteProcess& process = objects_.setUpProcess(params.getProcess(), call.name());
    remote_.takeShimTimings(params.getTimings());
    SessionBoard::Slot& slot = metrics_.slot();
    auto counters = params.getClientCounters();
    for (unsigned i = 0; i < counters.size() && i < 16; ++i) {
      copyField(slot.clientCounterNames[i], sizeof slot.clientCounterNames[i],
                counters[i].getName());
      slot.clientCounters[i].store(counters[i].getValue());
    }
    auto results = context.getResults();
    std::vector<TargetMemory::Window> late = windowsOf(params.getCheckLate());
    std::vector<NamedEpoch> peers;
    if (!late.empty() && process.node.proven() &&
        remote_.options().policy == wire::CachePolicy::EPOCH) {
      if (!refreshCheckedLate(call, process, late, results)) {
        results.setLateCheckDeclined(true);
        return;
      }
    } else {
      bool firstWalk = updatedOnce_.count(process.token) == 0;
      uint64_t callbacks = metrics_.get(Count::Callbacks);
      uint64_t blockCallbacks = remote_.blockCallbacks();
      uint64_t nodeBlocks = metrics_.get(Count::NodeBlocks);
      uint64_t notifications = metrics_.get(Count::Notifications);
      int rc = refresh(call, process, blocksAhead(params.getAhead(), params.getBlocks()),
                       results.initWalk());
      results.setRc(rc);
      relayDllOutput(call);  // printed by the walk: counted below
      // Provable as a refresh ahead is (refreshAhead below): every callback a fetch of blocks
      // (its misses', or the previous epoch's the shim did not send), which the shim keeps.
      uint64_t made = metrics_.get(Count::Callbacks) - callbacks;
      uint64_t blocks = remote_.blockCallbacks() - blockCallbacks;
      if (rc == mqs_ok && results.getWalk().getSize() > 0 && process.memory &&
          !process.node.proven() && made == blocks &&
          metrics_.get(Count::NodeBlocks) == nodeBlocks &&
          metrics_.get(Count::Notifications) == notifications &&
          remote_.options().policy == wire::CachePolicy::EPOCH) {
        results.setProvable(true);
        std::vector<TargetMemory::Window> read = process.memory->currentWindows();
        writeWindows(read, results.initRead(static_cast<unsigned>(read.size())));
      } else if (rc == mqs_ok) {
        MQD_LOG(Debug, "process %llu: its update is not provable (%llu callbacks, %llu of "
                       "them for blocks, %llu node blocks, %llu effects)",
                static_cast<unsigned long long>(process.token),
                static_cast<unsigned long long>(made), static_cast<unsigned long long>(blocks),
                static_cast<unsigned long long>(metrics_.get(Count::NodeBlocks) - nodeBlocks),
                static_cast<unsigned long long>(metrics_.get(Count::Notifications) -
                                                notifications));
      }
      if (firstWalk && updatedOnce_.count(process.token) != 0) {
        peers = guessPeers(call, process, metrics_.get(Count::Callbacks) - callbacks);
        metrics_.add(Count::PeerGuesses, peers.size());
      }
    }
    std::vector<TargetMemory::Window> next = remote_.nextEpochWindows(process);
    writeWindows(next, results.initNextEpoch(static_cast<unsigned>(next.size())));
    results.setReadOnNode(process.node.proven());
    if (params.hasOthers()) {
      refreshAhead(call, process, params.getOthers(), params.getOthersProvedByFetches(), results,
                   &peers);
    }
    auto out = results.initPeers(static_cast<unsigned>(peers.size()));
    for (unsigned i = 0; i < peers.size(); ++i) {
      out[i].setProcess(peers[i].process);
      writeWindows(peers[i].windows,
                   out[i].initNextEpoch(static_cast<unsigned>(peers[i].windows.size())));
      out[i].setCallbacks(
          static_cast<uint32_t>(std::min<uint64_t>(peers[i].callbacks, UINT32_MAX)));
    }
  });
}

void SessionService::undoHeldSetUp(DllCall& call, RemoteProcess& process) {
  if (!process.setUpHeld) return;
  process.setUpHeld = false;
  if (process.info == nullptr) return;
  // The debugger never got this info: its destruction shows it nothing either.
  std::vector<Effect> dropped;
  HeldEffects held(call, &dropped);
  uint64_t token = objects_.infoToken(wire::InfoKind::PROCESS, process.token, process.info);
  destroyInfo<RemoteProcess>(objects_, call, token, dll_->entry().mqs_destroy_process_info);
  relayDllOutput(call);
  process.info = nullptr;
  MQD_LOG(Debug, "process %llu: its set-up proved late undone (the debugger's bytes differ)",
          static_cast<unsigned long long>(process.token));
}

bool SessionService::refreshCheckedLate(
    DllCall& call, RemoteProcess& process, const std::vector<TargetMemory::Window>& windows,
    wire::Session::UpdateCommunicatorListResults::Builder results) {
  int rc = 0;
  std::vector<kj::Array<kj::byte>> node = updateCheckedLate(call, process, windows,
                                                            results.initWalk(), &rc);
  if (node.empty()) {
    results.disownWalk();
    return false;
  }
  results.setRc(rc);
  writeNodeBytes(windows, node, results.initNodeBytes(static_cast<unsigned>(node.size())));
  return true;
}

std::vector<kj::Array<kj::byte>> SessionService::updateCheckedLate(
    DllCall& call, RemoteProcess& process, const std::vector<TargetMemory::Window>& windows,
    wire::Bulk::Builder walkOut, int* rc) {
  startEpoch(call, process, RemoteDebugger::EpochKind::Update);
  std::vector<kj::Array<kj::byte>> node = remote_.readForLateCheck(call, process, windows);
  if (node.empty()) return node;
  std::vector<Effect> effects;
  {
    HeldEffects held(call, &effects);
    *rc = updateAndWalk(call, process, walkOut);
    relayDllOutput(call);
  }
  if (!effects.empty() || !process.node.proven()) {
    MQD_LOG(Debug, "process %llu: its late check declined (%zu effects held back)",
            static_cast<unsigned long long>(process.token), effects.size());
    return {};
  }
  return node;
}

void SessionService::writeNodeBytes(const std::vector<TargetMemory::Window>& windows,
                                    const std::vector<kj::Array<kj::byte>>& node,
                                    capnp::List<wire::MemoryBlock>::Builder out) const {
  for (unsigned i = 0; i < node.size(); ++i) {
    out[i].setRc(mqs_ok);
    out[i].setAddress(windows[i].address);
    setBulk(out[i].initData(), node[i].asPtr(), remote_.options().compress);
  }
}

void SessionService::refreshAhead(DllCall& call, const RemoteProcess& asked,
                                  capnp::List<wire::RefreshAhead>::Reader others,
                                  bool provedByFetches,
                                  wire::Session::UpdateCommunicatorListResults::Builder results,
                                  std::vector<NamedEpoch>* dropped) {
  if (remote_.options().policy != wire::CachePolicy::EPOCH) return;
  relayDllOutput(call);  // what the asked process's refresh printed is its own
  uint64_t bytes = 0;
  for (auto other : others) {
    for (auto w : other.getAhead()) bytes += w.getSize();
  }
  if (bytes > remote_.options().refreshAheadBytes) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                     "other processes' memory read ahead: " + std::to_string(bytes) +
                         " bytes, more than the session's refreshAheadBytes");
  }
  // Each one refreshed as its own update would be, with every effect held back: a process
  // whose refresh asked the debugger anything (but its memory's blocks, when the shim proves
  // a refresh by them too), or had anything to show it, is left for its own update (which runs
  // the DLL again, where the debugger sees it all at the right time).
  capnp::MallocMessageBuilder scratch;
  std::vector<capnp::Orphan<wire::RefreshedAhead>> kept;
  std::set<uint64_t> seen{asked.token};
  for (auto other : others) {
    uint64_t token = other.getProcess();
    if (!seen.insert(token).second) continue;
    // Only a process whose infos the DLL still holds: the debugger may have destroyed them
    // (the process is gone), and the DLL would then be handed none.
    RemoteProcess* process = objects_.setUpProcessOrNull(token);
    if (process == nullptr || process->info == nullptr || process->image.value_or(0) == 0 ||
        objects_.image(*process->image).info == nullptr) {
      continue;
    }
    auto out = scratch.getOrphanage().newOrphan<wire::RefreshedAhead>();
    // A process read on its node only with its check made late: the shim proves it by that
    // check, which its debugger makes at the process's own update. Without it, its refresh
    // would read memory the shim never sees, and the shim could not prove it current.
    if (process->node.proven()) {
      if (other.hasCheckLate() && refreshedOnNode(call, *process, other.getCheckLate(), out.get())) {
        kept.push_back(kj::mv(out));
        metrics_.add(Count::RefreshedAhead);
      }
      continue;
    }
    std::vector<Effect> effects;
    uint64_t callbacks = metrics_.get(Count::Callbacks);
    uint64_t misses = metrics_.get(Count::MemoryMisses);
    uint64_t prefetched = metrics_.get(Count::BlocksPrefetched);
    uint64_t nodeBlocks = metrics_.get(Count::NodeBlocks);
    int rc;
    {
      HeldEffects held(call, &effects);
      rc = refresh(call, *process, blocksAhead(other.getAhead(), other.getBlocks()),
                   out.get().initWalk(), RemoteDebugger::EpochKind::RefreshAhead);
      relayDllOutput(call);
    }
    // Each miss is one fetchBlocks callback (RemoteDebugger::fetchBlock) unless read on the
    // node, whose bytes the shim never sees.
    uint64_t made = metrics_.get(Count::Callbacks) - callbacks;
    bool onlyFetches = provedByFetches && made == metrics_.get(Count::MemoryMisses) - misses &&
                       metrics_.get(Count::NodeBlocks) == nodeBlocks && !process->node.proven();
    bool quiet = effects.empty() && (made == 0 || onlyFetches);
    if (rc != mqs_ok || !quiet || out.get().getWalk().getSize() == 0) {
      MQD_LOG(Debug, "process %llu: refreshed ahead, but for its own update (rc %d, %zu "
                     "effects, %llu callbacks, %llu memory misses, %llu blocks prefetched of "
                     "%u sent)",
              static_cast<unsigned long long>(token), rc, effects.size(),
              static_cast<unsigned long long>(metrics_.get(Count::Callbacks) - callbacks),
              static_cast<unsigned long long>(metrics_.get(Count::MemoryMisses) - misses),
              static_cast<unsigned long long>(metrics_.get(Count::BlocksPrefetched) - prefetched),
              other.getAhead().size());
      // What it read, its misses included, for its own update to read ahead: that update
      // then asks for nothing the last epoch read.
      if (rc == mqs_ok && process->memory && !process->node.proven()) {
        dropped->push_back({token, remote_.nextEpochWindows(*process),
                            metrics_.get(Count::Callbacks) - callbacks});
      }
      continue;
    }
    out.get().setProcess(token);
    std::vector<TargetMemory::Window> next = remote_.nextEpochWindows(*process);
    writeWindows(next, out.get().initNextEpoch(static_cast<unsigned>(next.size())));
    // Every read came from the blocks sent, or fetched: what the shim's proof reads again.
    if (process->memory) {
      std::vector<TargetMemory::Window> read = process->memory->currentWindows();
      writeWindows(read, out.get().initRead(static_cast<unsigned>(read.size())));
    }
    kept.push_back(kj::mv(out));
    metrics_.add(Count::RefreshedAhead);
  }
  auto list = results.initRefreshed(static_cast<unsigned>(kept.size()));
  for (unsigned i = 0; i < kept.size(); ++i) list.setWithCaveats(i, kept[i].getReader());
}

bool SessionService::refreshedOnNode(DllCall& call, RemoteProcess& process,
                                     capnp::List<wire::MemoryWindow>::Reader checkLate,
                                     wire::RefreshedAhead::Builder out) {
  std::vector<TargetMemory::Window> windows = windowsOf(checkLate);
  int rc = 0;
  uint64_t callbacks = metrics_.get(Count::Callbacks);
  std::vector<kj::Array<kj::byte>> node =
      windows.empty() ? std::vector<kj::Array<kj::byte>>()
                      : updateCheckedLate(call, process, windows, out.initWalk(), &rc);
  // Asked the debugger anything (about this process, inside another's call): its own update
  // asks it again, at the right time.
  uint64_t asked = metrics_.get(Count::Callbacks) - callbacks;
  if (node.empty() || rc != mqs_ok || asked != 0 || out.getWalk().getSize() == 0) {
    MQD_LOG(Debug, "process %llu: refreshed ahead on its node, but for its own update (rc %d, "
                   "%llu questions to the debugger)",
            static_cast<unsigned long long>(process.token), rc,
            static_cast<unsigned long long>(asked));
    return false;
  }
  out.setProcess(process.token);
  std::vector<TargetMemory::Window> next = remote_.nextEpochWindows(process);
  writeWindows(next, out.initNextEpoch(static_cast<unsigned>(next.size())));
  writeNodeBytes(windows, node, out.initNodeBytes(static_cast<unsigned>(node.size())));
  return true;
}

kj::Promise<void> SessionService::reposition(RepositionContext context) {
  return runDll(
      context, EntryPoint::setup_communicator_iterator,
      [this, context](DllCall& call) mutable {
        auto params = context.getParams();
        RemoteProcess& process = objects_.setUpProcess(params.getProcess(), "reposition");
        CommunicatorWalker(*dll_, process, call).reposition(params.getCursor());
      },
      Count::Notifications);
}

// ---- operations ----

kj::Promise<void> SessionService::setupOperationIterator(SetupOperationIteratorContext context) {
  return runDll(context, EntryPoint::setup_operation_iterator, [this, context](DllCall& call) mutable {
    auto params = context.getParams();
    RemoteProcess& process = objects_.setUpProcess(params.getProcess(), call.name());
    int rc = dll_->entry().mqs_setup_operation_iterator(reinterpret_cast<mqs_process*>(&process),
                                                        params.getOpClass());
    auto results = context.getResults();
    results.setRc(rc);
  });
}

kj::Promise<void> SessionService::nextOperation(NextOperationContext context) {
  return runDll(context, EntryPoint::next_operation, [this, context](DllCall& call) mutable {
    RemoteProcess& process =
        objects_.setUpProcess(context.getParams().getProcess(), call.name());
    mqs_pending_operation operation;
    prepare(operation);
    int rc = dll_->entry().mqs_next_operation(reinterpret_cast<mqs_process*>(&process),
                                              &operation);
    auto results = context.getResults();
    results.setRc(rc);
    capture(operation, results.initOperation());
  });
}

// ---- level 3 and extensions ----

kj::Promise<void> SessionService::setupJob(SetupJobContext context) {
  return runDll(context, EntryPoint::setup_job, [this, context](DllCall& call) mutable {
    requireBasicCallbacks(call.name());
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    RemoteJob& job = objects_.job(context.getParams().getJob());
    job.setUp = true;
    results.setRc(dll_->entry().mqs_setup_job(reinterpret_cast<mqs_job*>(&job),
                                              jobCallbackTable()));
  });
}

kj::Promise<void> SessionService::destroyJobInfo(DestroyJobInfoContext context) {
  return runDll(context, EntryPoint::destroy_job_info, [this, context](DllCall& call) mutable {
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    requireBasicCallbacks(call.name());  // a DLL frees an info through them
    results.setRc(destroyInfo<RemoteJob>(objects_, call, context.getParams().getInfo(),
                                         dll_->entry().mqs_destroy_job_info));
  });
}

kj::Promise<void> SessionService::setupNewProcessIterator(
    SetupNewProcessIteratorContext context) {
  return runDll(context, EntryPoint::setup_new_process_iterator, [this, context](DllCall& call) mutable {
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    RemoteProcess& process =
        objects_.setUpProcess(context.getParams().getProcess(), call.name());
    results.setRc(
        dll_->entry().mqs_setup_new_process_iterator(reinterpret_cast<mqs_process*>(&process)));
  });
}

kj::Promise<void> SessionService::nextNewProcess(NextNewProcessContext context) {
  return runDll(context, EntryPoint::next_new_process, [this, context](DllCall& call) mutable {
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    RemoteProcess& process =
        objects_.setUpProcess(context.getParams().getProcess(), call.name());
    auto location = std::make_unique<mqs_process_location>();
    prepare(*location);
    results.setRc(dll_->entry().mqs_next_new_process(reinterpret_cast<mqs_process*>(&process),
                                                     location.get()));
    capture(*location, results.initLocation());
  });
}

kj::Promise<void> SessionService::setProcessIdentity(SetProcessIdentityContext context) {
  return runDll(context, EntryPoint::set_process_identity, [this, context](DllCall& call) mutable {
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    auto params = context.getParams();
    RemoteProcess& process = objects_.setUpProcess(params.getProcess(), call.name());
    process.call.identity.reset();  // the debugger's answer may change with it
    results.setRc(dll_->entry().mqs_set_process_identity(
        reinterpret_cast<mqs_process*>(&process), params.getIdentity()));
  });
}

kj::Promise<void> SessionService::getCommCollState(GetCommCollStateContext context) {
  return runDll(context, EntryPoint::get_comm_coll_state, [this, context](DllCall& call) mutable {
    auto params = context.getParams();
    RemoteProcess& process = objects_.setUpProcess(params.getProcess(), call.name());
    auto results = context.getResults();
    if (!dllExports(call, results)) return;
    int sequence, active;
    prepare(sequence);
    prepare(active);
    int rc = dll_->entry().mqs_get_comm_coll_state(reinterpret_cast<mqs_process*>(&process),
                                                   params.getCollective(), &sequence, &active);
    results.setRc(rc);
    capture(sequence, results.initSequence());
    capture(active, results.initActive());
  });
}

}  // namespace mqd::server
