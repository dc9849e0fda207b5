#include "LearnedMemory.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "Log.h"
#include "StateFile.h"
#include "mqd.capnp.h"

namespace mqd::server {
namespace {

constexpr size_t kMaxWindows = 1u << 16;

}  // namespace

LearnedMemory::LearnedMemory(std::string stateDir, std::string buildId, size_t maxFiles)
    : dir_(buildId.empty() ? "" : std::move(stateDir)),
      buildId_(std::move(buildId)),
      maxFiles_(maxFiles) {}

std::string LearnedMemory::file(uint64_t fingerprint) const {
  char name[64];
  std::snprintf(name, sizeof name, "-%016llx.capnp", static_cast<unsigned long long>(fingerprint));
  return dir_ + "/blocks-" + buildId_ + name;
}

LearnedMemory::Record LearnedMemory::read(uint64_t fingerprint) const {
  Record out;
  bool ok = readStateFile(file(fingerprint), 1u << 20, [&](capnp::MessageReader& reader) {
    auto learned = reader.getRoot<wire::LearnedBlocks>();
    if (learned.getBuildId() == buildId_ && learned.getFingerprint() == fingerprint &&
        learned.getWhole()) {
      for (auto w : learned.getWindows()) out.windows.push_back({w.getAddress(), w.getSize()});
      for (auto w : learned.getSetUp()) out.setUp.push_back({w.getAddress(), w.getSize()});
    }
  });
  if (!ok) out = Record{};
  return out;
}

const LearnedMemory::Record& LearnedMemory::load(uint64_t fingerprint) {
  static const Record kNone;
  if (dir_.empty() || fingerprint == 0) return kNone;
  auto found = records_.find(fingerprint);
  if (found == records_.end()) found = records_.emplace(fingerprint, read(fingerprint)).first;
  return found->second;
}

void LearnedMemory::save(uint64_t fingerprint, const Record& record) {
  if (dir_.empty() || fingerprint == 0 || record.windows.empty()) return;
  ::mkdir(dir_.c_str(), 0700);
  capnp::MallocMessageBuilder message;
  auto learned = message.initRoot<wire::LearnedBlocks>();
  learned.setBuildId(buildId_);
  learned.setFingerprint(fingerprint);
  learned.setWhole(true);
  Record kept;
  auto write = [](const std::vector<TargetMemory::Window>& from,
                  std::vector<TargetMemory::Window>& to, auto init) {
    size_t n = std::min(from.size(), kMaxWindows);
    to.assign(from.begin(), from.begin() + static_cast<long>(n));
    auto list = init(static_cast<unsigned>(n));
    for (unsigned i = 0; i < n; ++i) {
      list[i].setAddress(to[i].address);
      list[i].setSize(to[i].size);
    }
  };
  write(record.windows, kept.windows, [&](unsigned n) { return learned.initWindows(n); });
  write(record.setUp, kept.setUp, [&](unsigned n) { return learned.initSetUp(n); });
  records_[fingerprint] = std::move(kept);
  if (!writeStateFile(file(fingerprint), message) || pruned_) return;
  pruned_ = true;
  prune();
}

void LearnedMemory::prune() const {
  std::string prefix = "blocks-" + buildId_ + "-";
  std::vector<std::pair<time_t, std::string>> files;
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    std::string path = dir_ + "/" + e->d_name;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) files.push_back({st.st_mtime, path});
  }
  ::closedir(d);
  if (files.size() <= maxFiles_) return;
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + maxFiles_ < files.size(); ++i) ::unlink(files[i].second.c_str());
}

}  // namespace mqd::server
