#include "SetUpRecall.h"

#include <capnp/message.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "Log.h"
#include "StateFile.h"
#include "mqs_interface.h"

namespace mqd::client {
namespace {

constexpr uint64_t kMaxFileWords = 1u << 22;  // 32 MiB: kMaxRecords records and their look-ups

void feedKey(Sha256& sha, const LookupKey& key) {
  sha.number(key.kind).text(key.name).number(key.lang).text(key.field);
}

bool digestFrom(capnp::Data::Reader in, SetUpRecall::Digest* out) {
  if (in.size() != out->size()) return false;
  std::memcpy(out->data(), in.begin(), out->size());
  return true;
}

SetUpRecall::Call callFrom(wire::RecordedCall::Reader in) {
  SetUpRecall::Call call;
  call.rc = in.getRc();
  call.message = SetUpRecall::Message::from(in.getMessage());
  for (auto e : in.getEffects()) {
    switch (e.which()) {
      case wire::RecordedEffect::PUT_INFO:
        call.effects.push_back({SetUpRecall::Effect::PutInfo, {}});
        break;
      case wire::RecordedEffect::DPRINTS:
        call.effects.push_back({SetUpRecall::Effect::Dprints, e.getDprints()});
        break;
      case wire::RecordedEffect::DLL_OUTPUT: {
        auto bytes = e.getDllOutput();
        call.effects.push_back(
            {SetUpRecall::Effect::Output, std::string(bytes.asChars().begin(), bytes.size())});
        break;
      }
    }
  }
  return call;
}

void writeCall(const SetUpRecall::Call& call, wire::RecordedCall::Builder out) {
  out.setRc(call.rc);
  call.message.writeTo(out.initMessage());
  auto effects = out.initEffects(static_cast<unsigned>(call.effects.size()));
  for (unsigned i = 0; i < call.effects.size(); ++i) {
    const SetUpRecall::Effect& e = call.effects[i];
    switch (e.kind) {
      case SetUpRecall::Effect::PutInfo: effects[i].setPutInfo(); break;
      case SetUpRecall::Effect::Dprints: effects[i].setDprints(e.bytes); break;
      case SetUpRecall::Effect::Output:
        effects[i].setDllOutput(kj::arrayPtr(reinterpret_cast<const kj::byte*>(e.bytes.data()),
                                             e.bytes.size()));
        break;
    }
  }
}

}  // namespace

SetUpRecall::Message SetUpRecall::Message::from(wire::OutString::Reader in) {
  Message m;
  if (in.isNull()) m.kind = Null;
  if (in.isText()) {
    m.kind = Text;
    m.text = in.getText();
  }
  return m;
}

void SetUpRecall::Message::writeTo(wire::OutString::Builder out) const {
  switch (kind) {
    case Untouched: out.setUntouched(); break;
    case Null: out.setNull(); break;
    case Text: out.setText(text); break;
  }
}

bool SetUpRecall::Call::putsInfo() const {
  for (const Effect& e : effects) {
    if (e.kind == Effect::PutInfo) return true;
  }
  return false;
}

std::string SetUpRecall::canonical(const LookupKey& key, const DebuggerSide::LookupResult& a,
                                   bool address, uint64_t shift) {
  char buf[64];
  switch (key.kind) {
    case LookupKey::Symbol:
    case LookupKey::Function:
      if (!address) {
        std::snprintf(buf, sizeof buf, "%d", a.rc);
        break;
      }
      std::snprintf(
          buf, sizeof buf, "%d:%llx", a.rc,
          static_cast<unsigned long long>(a.rc == mqs_ok && a.written ? a.address - shift : 0));
      break;
    case LookupKey::Type:  // a type's token is the session's own: only whether there is one
      std::snprintf(buf, sizeof buf, "%d", a.type != 0 ? 1 : 0);
      break;
    case LookupKey::Field:
    case LookupKey::SizeOf:
      std::snprintf(buf, sizeof buf, "%d", a.value);
      break;
  }
  return buf;
}

std::optional<SetUpRecall::Digest> SetUpRecall::digestOf(
    const ConsumedLookups::Lookups& lookups, const Answers& answers, uint64_t shift) {
  Sha256 sha;
  sha.number(static_cast<int64_t>(lookups.size()));
  for (const auto& [key, address] : lookups) {
    auto it = answers.find(key);
    if (it == answers.end()) return std::nullopt;
    feedKey(sha, key);
    sha.number(address ? 1 : 0).text(canonical(key, it->second, address, shift));
  }
  return sha.finish();
}

std::optional<uint64_t> SetUpRecall::anchorOf(const ConsumedLookups::Lookups& lookups,
                                              const Answers& answers) {
  for (const auto& [key, address] : lookups) {
    auto it = answers.find(key);
    if (address && it != answers.end() && it->second.rc == mqs_ok && it->second.written) {
      return it->second.address;
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> SetUpRecall::shiftTo(const ProcessOutcome& process,
                                             const Answers& answers) {
  if (!process.anchor || !process.warning.empty()) return std::nullopt;
  for (const Call* call : {&process.setUp, &process.hasQueues}) {
    if (call->message.kind == Message::Text) return std::nullopt;
    for (const Effect& e : call->effects) {
      if (e.kind != Effect::PutInfo) return std::nullopt;
    }
  }
  std::optional<uint64_t> now = anchorOf(*process.lookups, answers);
  if (!now) return std::nullopt;
  uint64_t shift = *now - *process.anchor;
  if (shift == 0 || shift % kShiftGranule != 0) return std::nullopt;
  std::optional<Digest> digest = digestOf(*process.lookups, answers, shift);
  if (!digest || *digest != process.lookupDigest) return std::nullopt;
  return shift;
}

bool SetUpRecall::lookupsProve(const ProcessOutcome& process, const Answers& answers) {
  std::optional<Digest> digest = digestOf(*process.lookups, answers);
  return digest && *digest == process.lookupDigest;
}

SetUpRecall::ProcessInputs::ProcessInputs(bool bigEndian, const DebuggerSide::TypeSizes& sizes) {
  sha_.number(bigEndian ? 1 : 0);
  for (const std::optional<int>& size : sizes) sha_.number(size ? 1 : 0).number(size ? *size : 0);
}

bool SetUpRecall::ProcessInputs::read(const Read& r, const DebuggerSide::Block& block,
                                      uint64_t shift) {
  if (block.rc != mqs_ok || block.address != r.address + shift || block.bytes.size() != r.size) {
    return false;
  }
  sha_.number(static_cast<int64_t>(r.address)).number(r.size);
  sha_.number(static_cast<int64_t>(r.neededAddress)).number(r.neededSize);
  sha_.bytes(block.bytes.data(), block.bytes.size());
  return true;
}

SetUpRecall::SetUpRecall(std::string stateDir, std::string buildId)
    : buildId_(std::move(buildId)) {
  if (stateDir.empty() || buildId_.empty()) return;  // kept in memory only, or not at all
  file_ = stateDir + "/setups-" + buildId_ + ".capnp";
  load();
}

std::vector<const SetUpRecall::Record*> SetUpRecall::find(const Answers& answers) const {
  std::vector<const Record*> found;
  if (refuted_) return found;
  // Records of one image's set-up share their look-up list: one digest per list.
  std::map<const ConsumedLookups::Lookups*, std::optional<Digest>> digests;
  for (auto r = records_.rbegin(); r != records_.rend(); ++r) {
    auto it = digests.find(r->lookups.get());
    if (it == digests.end()) {
      it = digests.emplace(r->lookups.get(), digestOf(*r->lookups, answers)).first;
    }
    if (it->second && *it->second == r->lookupDigest) found.push_back(&*r);
  }
  return found;
}

SetUpRecall::LookupList SetUpRecall::share(ConsumedLookups::Lookups lookups) const {
  std::set<const ConsumedLookups::Lookups*> compared;  // each list once: most records share one
  auto same = [&](const LookupList& list) {
    return list && compared.insert(list.get()).second && *list == lookups;
  };
  for (const Record& r : records_) {
    if (same(r.lookups)) return r.lookups;
    if (r.process && same(r.process->lookups)) return r.process->lookups;
  }
  return std::make_shared<const ConsumedLookups::Lookups>(std::move(lookups));
}

void SetUpRecall::keep(Record record) {
  if (buildId_.empty() || refuted_) return;
  // The same part only for the same answers to the same look-ups: a digest alone may be a
  // damaged (or forged) file's, which find() would never match with this list.
  auto sameProcess = [](const ProcessOutcome& a, const ProcessOutcome& b) {
    return a.digest == b.digest && a.lookupDigest == b.lookupDigest && *a.lookups == *b.lookups;
  };
  for (auto it = records_.begin(); it != records_.end();) {
    if (it->lookupDigest != record.lookupDigest || *it->lookups != *record.lookups) {
      ++it;
    } else if (!record.process) {
      if (it->process) return;  // the image's outcome is kept already, with a process's
      it = records_.erase(it);
    } else if (!it->process || sameProcess(*it->process, *record.process)) {
      it = records_.erase(it);
    } else {
      ++it;
    }
  }
  records_.push_back(std::move(record));
  if (records_.size() > kMaxRecords) records_.erase(records_.begin());
  dirty_ = true;
}

void SetUpRecall::refute() {
  refuted_ = true;
  records_.clear();
  dirty_ = false;
  if (!file_.empty() && ::unlink(file_.c_str()) != 0 && errno != ENOENT) {
    MQD_LOG(Warn, "cannot remove %s: %s", file_.c_str(), std::strerror(errno));
  }
}

void SetUpRecall::load() {
  std::vector<Record> loaded;
  bool ok = readStateFile(file_, kMaxFileWords, [&](capnp::MessageReader& reader) {
    auto root = reader.getRoot<wire::SetUpRecords>();
    if (root.getBuildId() != buildId_ || !root.getConsumedOnly()) return;
    std::vector<std::optional<LookupKey>> table;
    for (auto l : root.getLookups()) table.push_back(LookupKey::from(l));
    std::map<ConsumedLookups::Lookups, LookupList> lists;
    // A list of the file's, shared with the records that have the same; nullopt for an index
    // out of the table, or a look-up of a kind this build does not know.
    auto listOf = [&](capnp::List<wire::RecordedLookup>::Reader in) -> std::optional<LookupList> {
      ConsumedLookups::Lookups lookups;
      for (auto l : in) {
        if (l.getIndex() >= table.size() || !table[l.getIndex()]) return std::nullopt;
        lookups[*table[l.getIndex()]] |= l.getAddress();
      }
      auto it = lists.find(lookups);
      if (it == lists.end()) {
        auto shared = std::make_shared<const ConsumedLookups::Lookups>(lookups);
        it = lists.emplace(std::move(lookups), std::move(shared)).first;
      }
      return it->second;
    };
    for (auto in : root.getRecords()) {
      Record r;
      std::optional<LookupList> lookups = listOf(in.getConsumed());
      if (!lookups || !digestFrom(in.getLookupDigest(), &r.lookupDigest) ||
          in.getImage().getRc() != mqs_ok) {
        continue;  // damage, or a newer writer's look-up
      }
      r.lookups = *lookups;
      r.image.setUp = callFrom(in.getImage());
      r.image.hasQueues = callFrom(in.getImageHasQueues());
      if (in.getHasProcess() && in.getProcess().getRc() == mqs_ok) {
        ProcessOutcome p;
        std::optional<LookupList> consumed = listOf(in.getProcessConsumed());
        if (consumed && digestFrom(in.getProcessLookupDigest(), &p.lookupDigest) &&
            digestFrom(in.getProcessDigest(), &p.digest)) {
          p.lookups = *consumed;
          for (auto read : in.getReads()) {
            p.reads.push_back({read.getAddress(), read.getSize(), read.getNeededAddress(),
                               read.getNeededSize()});
          }
          p.setUp = callFrom(in.getProcess());
          p.warning = in.getWarning();
          p.hasQueues = callFrom(in.getProcessHasQueues());
          if (in.getHasProcessAnchor()) p.anchor = in.getProcessAnchor();
          r.process = std::move(p);
        }
      }
      loaded.push_back(std::move(r));
    }
  });
  if (ok) records_ = std::move(loaded);
  while (records_.size() > kMaxRecords) records_.erase(records_.begin());
}

void SetUpRecall::save() {
  if (!dirty_ || file_.empty() || refuted_) return;
  dirty_ = false;
  if (!makeStateDir(file_.substr(0, file_.rfind('/')))) return;
  std::map<LookupKey, uint32_t> index;
  std::vector<const LookupKey*> table;
  auto enter = [&](const ConsumedLookups::Lookups& lookups) {
    for (const auto& entry : lookups) {
      if (index.emplace(entry.first, static_cast<uint32_t>(table.size())).second) {
        table.push_back(&entry.first);
      }
    }
  };
  for (const Record& r : records_) {
    enter(*r.lookups);
    if (r.process) enter(*r.process->lookups);
  }
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::SetUpRecords>();
  root.setBuildId(buildId_);
  root.setConsumedOnly(true);
  auto lookups = root.initLookups(static_cast<unsigned>(table.size()));
  for (unsigned i = 0; i < table.size(); ++i) table[i]->writeTo(lookups[i]);
  auto write = [&](const ConsumedLookups::Lookups& from,
                   capnp::List<wire::RecordedLookup>::Builder to) {
    unsigned k = 0;
    for (const auto& [key, address] : from) {
      to[k].setIndex(index.at(key));
      to[k++].setAddress(address);
    }
  };
  auto out = root.initRecords(static_cast<unsigned>(records_.size()));
  for (unsigned i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    auto o = out[i];
    write(*r.lookups, o.initConsumed(static_cast<unsigned>(r.lookups->size())));
    o.setLookupDigest(kj::arrayPtr(r.lookupDigest.data(), r.lookupDigest.size()));
    writeCall(r.image.setUp, o.initImage());
    writeCall(r.image.hasQueues, o.initImageHasQueues());
    if (!r.process) continue;
    const ProcessOutcome& p = *r.process;
    o.setHasProcess(true);
    write(*p.lookups, o.initProcessConsumed(static_cast<unsigned>(p.lookups->size())));
    o.setProcessLookupDigest(kj::arrayPtr(p.lookupDigest.data(), p.lookupDigest.size()));
    o.setProcessDigest(kj::arrayPtr(p.digest.data(), p.digest.size()));
    auto reads = o.initReads(static_cast<unsigned>(p.reads.size()));
    for (unsigned k = 0; k < p.reads.size(); ++k) {
      reads[k].setAddress(p.reads[k].address);
      reads[k].setSize(p.reads[k].size);
      reads[k].setNeededAddress(p.reads[k].neededAddress);
      reads[k].setNeededSize(p.reads[k].neededSize);
    }
    writeCall(p.setUp, o.initProcess());
    o.setWarning(p.warning);
    writeCall(p.hasQueues, o.initProcessHasQueues());
    o.setHasProcessAnchor(p.anchor.has_value());
    o.setProcessAnchor(p.anchor.value_or(0));
  }
  writeStateFile(file_, message);
}

}  // namespace mqd::client
