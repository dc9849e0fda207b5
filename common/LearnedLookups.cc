#include "LearnedLookups.h"

#include <capnp/message.h>

#include <cstdlib>

#include "StateFile.h"

namespace mqd {
namespace {

constexpr uint64_t kMaxFileWords = 1u << 20;  // 8 MiB: far more than any DLL's look-ups

}  // namespace

std::string defaultStateDir() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') return std::string(state) + "/mqd-proxy";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.local/state/mqd-proxy";
  return "";
}

LearnedLookups::LearnedLookups(std::string stateDir, std::string dll, std::string buildId)
    : dll_(std::move(dll)), buildId_(std::move(buildId)) {
  if (stateDir.empty() || buildId_.empty()) return;
  file_ = stateDir + "/lookups-" + buildId_ + ".capnp";
  for (const LookupKey& k : load()) known_.insert(k);
}

std::vector<LookupKey> LearnedLookups::load() const {
  std::vector<LookupKey> out;
  if (file_.empty()) return out;
  bool ok = readStateFile(file_, kMaxFileWords, [&](capnp::MessageReader& reader) {
    auto learned = reader.getRoot<wire::LearnedLookups>();
    if (learned.getBuildId() != buildId_) return;
    for (auto l : learned.getLookups()) {
      if (auto key = LookupKey::from(l)) out.push_back(std::move(*key));
    }
  });
  if (!ok) out.clear();
  return out;
}

void LearnedLookups::save(const std::set<LookupKey>& seen) {
  if (file_.empty()) return;
  size_t before = known_.size();
  known_.insert(seen.begin(), seen.end());
  if (known_.size() == before) return;
  if (!makeStateDir(file_.substr(0, file_.rfind('/')))) return;
  capnp::MallocMessageBuilder message;
  auto learned = message.initRoot<wire::LearnedLookups>();
  learned.setDll(dll_);
  learned.setBuildId(buildId_);
  auto list = learned.initLookups(static_cast<unsigned>(known_.size()));
  unsigned i = 0;
  for (const LookupKey& k : known_) k.writeTo(list[i++]);
  writeStateFile(file_, message);
}

}  // namespace mqd
