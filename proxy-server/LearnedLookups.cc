#include "LearnedLookups.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "Log.h"

namespace mqd::server {
namespace {

constexpr uint64_t kMaxFileWords = 1u << 20;  // 8 MiB: far more than any DLL's look-ups

// mkdir -p, mode 0700 for what we create.
bool makeDirs(const std::string& path) {
  if (path.empty()) return false;
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

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
  int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = kMaxFileWords;
    capnp::StreamFdMessageReader reader(fd, options);
    auto learned = reader.getRoot<wire::LearnedLookups>();
    if (learned.getBuildId() != buildId_) {
      ::close(fd);
      return out;
    }
    for (auto l : learned.getLookups()) {
      switch (l.which()) {
        case wire::Lookup::SYMBOL:
          out.push_back({LookupKey::Symbol, l.getSymbol(), 0, ""});
          break;
        case wire::Lookup::FUNCTION:
          out.push_back({LookupKey::Function, l.getFunction().getName(),
                         l.getFunction().getLang(), ""});
          break;
        case wire::Lookup::TYPE:
          out.push_back({LookupKey::Type, l.getType().getName(), l.getType().getLang(), ""});
          break;
        case wire::Lookup::FIELD:
          out.push_back({LookupKey::Field, l.getField().getType().getName(),
                         l.getField().getType().getLang(), l.getField().getField()});
          break;
        case wire::Lookup::SIZE_OF:
          out.push_back({LookupKey::SizeOf, l.getSizeOf().getName(), l.getSizeOf().getLang(), ""});
          break;
      }
    }
  } catch (const kj::Exception& e) {
    MQD_LOG(Warn, "ignoring unreadable %s: %s", file_.c_str(), e.getDescription().cStr());
    out.clear();
  }
  ::close(fd);
  return out;
}

void LearnedLookups::save(const std::set<LookupKey>& seen) {
  if (file_.empty()) return;
  size_t before = known_.size();
  known_.insert(seen.begin(), seen.end());
  if (known_.size() == before) return;
  std::string dir = file_.substr(0, file_.rfind('/'));
  if (!makeDirs(dir)) {
    MQD_LOG(Warn, "cannot create state directory %s: %s", dir.c_str(), std::strerror(errno));
    return;
  }
  capnp::MallocMessageBuilder message;
  auto learned = message.initRoot<wire::LearnedLookups>();
  learned.setDll(dll_);
  learned.setBuildId(buildId_);
  auto list = learned.initLookups(static_cast<unsigned>(known_.size()));
  unsigned i = 0;
  for (const LookupKey& k : known_) {
    auto l = list[i++];
    switch (k.kind) {
      case LookupKey::Symbol: l.setSymbol(k.name); break;
      case LookupKey::Function: l.initFunction().setName(k.name); l.getFunction().setLang(k.lang); break;
      case LookupKey::Type: l.initType().setName(k.name); l.getType().setLang(k.lang); break;
      case LookupKey::Field: {
        auto f = l.initField();
        f.initType().setName(k.name);
        f.getType().setLang(k.lang);
        f.setField(k.field);
        break;
      }
      case LookupKey::SizeOf: l.initSizeOf().setName(k.name); l.getSizeOf().setLang(k.lang); break;
    }
  }
  std::string tmp = file_ + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    MQD_LOG(Warn, "cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    return;
  }
  try {
    capnp::writeMessageToFd(fd, message);
    ::close(fd);
    if (::rename(tmp.c_str(), file_.c_str()) != 0) ::unlink(tmp.c_str());
  } catch (const kj::Exception& e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    MQD_LOG(Warn, "cannot write %s: %s", file_.c_str(), e.getDescription().cStr());
  }
}

}  // namespace mqd::server
