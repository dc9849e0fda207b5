#include "SetUpRecords.h"

#include <algorithm>
#include <tuple>

#include "Log.h"

namespace mqd::client {
namespace {

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

}  // namespace

void SetUpRecords::open(const ClientConfig& config, const DllInfo& dll, bool takesInfoTokens) {
  // Without a state directory the records are kept in memory only (SetUpRecall): a job never
  // seen has its later images' set-ups answered from the first one's all the same.
  if (config.cache != wire::CachePolicy::EPOCH || dll.buildId.empty() || !takesInfoTokens) {
    recall_ = nullptr;
    side_.effectLog = nullptr;
    return;
  }
  if (!recall_ || recall_->buildId() != dll.buildId) {
    recall_ = std::make_unique<SetUpRecall>(config.stateDir, dll.buildId);
  }
  side_.effectLog = &effectLog_;
}

void SetUpRecords::settleFor(EntryPoint entryPoint) {
  bool setUpCall = entryPoint == EntryPoint::setup_image ||
                   entryPoint == EntryPoint::image_has_queues ||
                   entryPoint == EntryPoint::setup_process ||
                   entryPoint == EntryPoint::process_has_queues;
  if (!setUpCall) settleRecalled();
  if (processRecording_ && entryPoint != EntryPoint::process_has_queues) stopProcessRecording();
}

void SetUpRecords::sessionLost() {
  link_.onLoop([this]() { recalled_.clear(); });
  stopProcessRecording();
  imageRecords_.clear();
}

void SetUpRecords::refuseContradicted(wire::InfoKind kind, uint64_t token,
                                      EntryPoint entryPoint) const {
  if (contradicted_.count({static_cast<int>(kind), token}) == 0) return;
  throw ProxyError(MQD_PROXY_ERR_NOT_SET_UP,
                   std::string(nameOf(entryPoint)) + " on the " + objectName(kind) +
                       " whose set-up was answered from a record that the vendor DLL then "
                       "contradicted: set it up again");
}

bool SetUpRecords::firstSetUp(wire::InfoKind kind, uint64_t token) {
  contradicted_.erase({static_cast<int>(kind), token});
  if (kind == wire::InfoKind::IMAGE) {
    imageRecords_.erase(token);
    return imagesSetUp_.insert(token).second;
  }
  return processesSetUp_.insert(token).second;
}

bool SetUpRecords::recallSetupImage(uint64_t image, const LookupsAhead& ahead) {
  if (ahead.keys.empty() || side_.replaying) return false;
  SetUpRecall::Answers answers = ahead.answersByKey();
  std::vector<const SetUpRecall::Record*> found = recall_->find(answers);
  if (found.empty()) return false;
  ImageRecord kept{*found.front(), std::move(answers), true, true};
  kept.record.process.reset();
  const SetUpRecall::ImageOutcome& outcome = kept.record.image;
  uint64_t info = 0;
  if (!chooseInfoToken(outcome.setUp, &info)) return false;
  answerFromRecord(EntryPoint::setup_image, image,
                   startSetupImage(link_, image, ahead, info, true), outcome.setUp, info, {},
                   outcome.hasQueues);
  imageRecords_[image] = std::move(kept);
  return true;
}

void SetUpRecords::recordImageSetUp(uint64_t image, const Mark& from, int rc,
                                    const LookupsAhead& ahead) {
  std::vector<SetUpRecall::Effect> effects;
  if (rc == mqs_ok && !ahead.keys.empty() &&
      answeredOnly(from, wire::InfoKind::IMAGE, image, false, &effects)) {
    // Keyed at its has-queues reply, which names what the two calls consumed.
    SetUpRecall::Record record;
    record.image.setUp = SetUpRecall::Call{rc, {}, std::move(effects)};
    imageRecords_[image] = ImageRecord{std::move(record), ahead.answersByKey(), false, false};
  }
}

bool SetUpRecords::chooseInfoToken(const SetUpRecall::Call& setUp, uint64_t* info) {
  *info = 0;
  if (!setUp.putsInfo()) return true;
  if (nextChosenInfoToken_ > UINT32_MAX) return false;
  *info = nextChosenInfoToken_++;
  return true;
}

void SetUpRecords::answerFromRecord(EntryPoint setUpEntry, uint64_t token,
                                 std::shared_ptr<PendingCall> setUp,
                                 const SetUpRecall::Call& told, uint64_t info,
                                 const std::string& warning,
                                 const SetUpRecall::Call& hasQueues) {
  wire::InfoKind kind = objectKindOf(setUpEntry);
  EntryPoint hasQueuesEntry = kind == wire::InfoKind::IMAGE ? EntryPoint::image_has_queues
                                                            : EntryPoint::process_has_queues;
  recalled_.push_back({setUpEntry, token, std::move(setUp), told, info, warning});
  recalled_.push_back({hasQueuesEntry, token, startHasQueuesBehind(link_, hasQueuesEntry, token),
                       hasQueues, 0, {}});
  deliverRecordedEffects(side_, told.effects, kind, token, info);
  warnOfByteOrder(side_, warning);
  HeldAnswers::Answer held;  // its effects reach the debugger inside its own call
  held.rc = hasQueues.rc;
  held.message = outStringOf(hasQueues.message);
  held.effects = hasQueues.effects;
  held_.hold(kind, token, std::move(held));
  ++counters_.setUpsRecalled;
  MQD_LOG(Debug, "%s %llu: set up from a record", objectName(kind),
          static_cast<unsigned long long>(token));
}

std::vector<SetUpRecords::ProcessCandidate> SetUpRecords::candidatesFor(
    const ImageRecord& image) const {
  // Of the processes recorded with records of this image's set-up (found now: a process set up
  // since the image was, another rank's, counts), those whose set-up consumed look-ups answered
  // the same for this image: the same process again (or one that shares its addresses); then,
  // when none is, those answered the same moved (another rank of the job: SetUpRecall::shiftTo).
  // Process parts share their look-up lists: one digest per list (a state directory may hold
  // thousands of one job's ranks).
  std::vector<ProcessCandidate> candidates;
  std::vector<const SetUpRecall::Record*> found = recall_->find(image.answers);
  std::map<const ConsumedLookups::Lookups*, std::optional<SetUpRecall::Digest>> digests;
  for (const SetUpRecall::Record* r : found) {
    if (!r->process) continue;
    const ConsumedLookups::Lookups* list = r->process->lookups.get();
    auto d = digests.find(list);
    if (d == digests.end()) {
      d = digests.emplace(list, SetUpRecall::digestOf(*list, image.answers)).first;
    }
    if (d->second && *d->second == r->process->lookupDigest) {
      candidates.push_back({&*r->process, 0});
    }
  }
  if (!candidates.empty()) return candidates;
  size_t tried = 0;
  for (const SetUpRecall::Record* r : found) {
    if (!r->process) continue;
    if (std::optional<uint64_t> shift = SetUpRecall::shiftTo(*r->process, image.answers)) {
      candidates.push_back({&*r->process, *shift});
    }
    if (++tried == kMaxMovedCandidates) break;
  }
  return candidates;
}

bool SetUpRecords::recallSetupProcess(uint64_t process, bool bigEndian) {
  if (side_.replaying) return false;
  uint64_t image = side_.getImage(process);
  auto it = imageRecords_.find(image);
  if (it == imageRecords_.end() || !it->second.recalled) return false;
  std::vector<ProcessCandidate> candidates = candidatesFor(it->second);
  if (candidates.empty()) return false;
  DebuggerSide::TypeSizes sizes = side_.getTypeSizes(process);
  // The proof: the same byte order and type sizes, and every byte a recorded set-up read (its
  // setUpRead), read again now and sent with the set-up, which then asks for none of it. That
  // is what the server learned of the process's set-up, which a set-up without a record reads
  // ahead too (setUpAhead). Reads that several records share are made once.
  // A record moved from another process (shift) is read where this process keeps the same.
  std::map<std::tuple<uint64_t, uint32_t, uint64_t, uint32_t>, DebuggerSide::Block> blocks;
  const ProcessCandidate* proved = nullptr;
  std::vector<ReadAhead> read;
  for (const ProcessCandidate& candidate : candidates) {
    SetUpRecall::ProcessInputs inputs(bigEndian, sizes);
    read.clear();
    bool whole = true;
    for (const SetUpRecall::Read& r : candidate.outcome->reads) {
      uint64_t at = r.address + candidate.shift;
      uint64_t needed = r.neededAddress + candidate.shift;
      auto key = std::make_tuple(at, r.size, needed, r.neededSize);
      auto b = blocks.find(key);
      if (b == blocks.end()) {
        b = blocks.emplace(key, side_.readBlock(process, at, r.size, needed, r.neededSize)).first;
      }
      whole = inputs.read(r, b->second, candidate.shift);
      if (!whole) break;
      bool again = std::any_of(read.begin(), read.end(), [&](const ReadAhead& a) {
        return a.window.address == at && a.window.size == r.size;
      });
      if (!again) read.push_back({Window{at, r.size}, b->second});
    }
    if (whole && inputs.finish() == candidate.outcome->digest) {
      proved = &candidate;
      break;
    }
  }
  if (proved == nullptr) {
    MQD_LOG(Debug, "process %llu: not set up from a record: its memory or facts changed",
            static_cast<unsigned long long>(process));
    return false;
  }
  const SetUpRecall::ProcessOutcome& outcome = *proved->outcome;
  uint64_t info = 0;
  if (!chooseInfoToken(outcome.setUp, &info)) return false;
  ProcessFacts facts{image, sizes, std::nullopt};
  answerFromRecord(EntryPoint::setup_process, process,
                   startSetupProcess(link_, process, bigEndian, &facts, read, info, true,
                                     refreshAhead_.costRule(), side_.readPrice()),
                   outcome.setUp, info, outcome.warning, outcome.hasQueues);
  if (proved->shift != 0) {
    ++counters_.setUpsMoved;
    MQD_LOG(Debug, "process %llu: set up from another process's record, moved by %#llx",
            static_cast<unsigned long long>(process),
            static_cast<unsigned long long>(proved->shift));
  }
  return true;
}

void SetUpRecords::settleRecalled(bool behindAnother) {
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
          auto reply = link_.finish<wire::Session::SetupImageResults>(call.pending, call.entryPoint);
          compare(reply.get().getRc(), false, nullptr, nullptr, reply.call());
          break;
        }
        case EntryPoint::image_has_queues: {
          auto reply =
              link_.finish<wire::Session::ImageHasQueuesResults>(call.pending, call.entryPoint);
          auto r = reply.get();
          auto message = SetUpRecall::Message::from(r.getMessage());
          compare(r.getRc(), r.getSkipped(), &message, nullptr, reply.call());
          imageSetUpAhead_.keep(call.token, r.getSetUpAhead());
          break;
        }
        case EntryPoint::setup_process: {
          auto reply =
              link_.finish<wire::Session::SetupProcessResults>(call.pending, call.entryPoint);
          auto r = reply.get();
          std::string warning = r.getWarning();
          compare(r.getRc(), false, nullptr, &warning, reply.call());
          refreshAhead_.keepNextEpochOf(call.token, r, r.getLearned());
          break;
        }
        default: {  // process_has_queues
          auto reply =
              link_.finish<wire::Session::ProcessHasQueuesResults>(call.pending, call.entryPoint);
          auto r = reply.get();
          auto message = SetUpRecall::Message::from(r.getMessage());
          compare(r.getRc(), r.getSkipped(), &message, nullptr, reply.call());
          if (!r.getSkipped()) refreshAhead_.keepNextEpochOf(call.token, r, r.getLearned());
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
        for (Recalled& rest : recalled_) link_.drain(std::move(rest.pending));
        recalled_.clear();
        throw;
      }
    }
    // The effects: those the debugger was told of, in order, the info with its chosen token.
    bool same = effects.size() == call.told.effects.size();
    for (size_t i = 0; same && i < effects.size(); ++i) {
      wire::Effect::Reader now = *effects[i];
      same = effectOf(now) == call.told.effects[i] &&
             (!now.isPutInfo() || (now.getPutInfo().getKind() == objectKindOf(call.entryPoint) &&
                                   now.getPutInfo().getHandle() == call.token &&
                                   now.getPutInfo().getInfo() == call.infoToken));
    }
    if (how.empty() && !same) how = "its effects differ (put_*_info, dprints or output)";
    if (!how.empty()) contradict(call, how, same ? decltype(effects)() : kj::mv(effects));
  }
}

void SetUpRecords::contradict(const Recalled& call, const std::string& how,
                           std::vector<kj::Own<wire::Effect::Reader>> unexpected) {
  ++counters_.setUpsContradicted;
  wire::InfoKind kind = objectKindOf(call.entryPoint);
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

bool SetUpRecords::answeredOnly(const Mark& from, wire::InfoKind kind, uint64_t token,
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

void SetUpRecords::recordImageHasQueues(uint64_t image, const Mark& from,
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

bool SetUpRecords::keyBy(std::optional<ConsumedLookups::Lookups> consumed,
                      const SetUpRecall::Answers& answers, SetUpRecall::LookupList* lookups,
                      SetUpRecall::Digest* digest) const {
  std::optional<SetUpRecall::Digest> d;
  if (consumed) d = SetUpRecall::digestOf(*consumed, answers);
  if (!d) return false;
  *lookups = recall_->share(std::move(*consumed));
  *digest = *d;
  return true;
}

void SetUpRecords::startProcessRecording(uint64_t process, bool bigEndian) {
  stopProcessRecording();
  uint64_t image = side_.getImage(process);
  auto it = imageRecords_.find(image);
  if (it == imageRecords_.end() || !it->second.complete) return;
  processRecording_ =
      ProcessRecording{process, image, bigEndian, side_.getTypeSizes(process), {}, 0, {}};
  side_.onRead = [this](uint64_t p, uint64_t, uint32_t, uint64_t, uint32_t, bool,
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

void SetUpRecords::recordProcessSetUp(uint64_t process, const Mark& from, int rc,
                                      const std::string& warning) {
  std::vector<SetUpRecall::Effect> effects;
  if (processRecording_ &&
      (rc != mqs_ok || !answeredOnly(from, wire::InfoKind::PROCESS, process, true, &effects))) {
    stopProcessRecording();
  }
  if (processRecording_) {
    processRecording_->outcome.setUp = SetUpRecall::Call{rc, {}, std::move(effects)};
    processRecording_->outcome.warning = warning;
  }
}

void SetUpRecords::stopProcessRecording() {
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

void SetUpRecords::recordProcessHasQueues(uint64_t process, const Mark& from,
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
  rec.outcome.anchor = SetUpRecall::anchorOf(*rec.outcome.lookups, it->second.answers);
  SetUpRecall::Record record = it->second.record;
  record.process = std::move(rec.outcome);
  recall_->keep(std::move(record));
}

}  // namespace mqd::client
