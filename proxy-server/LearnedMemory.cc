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
#include "mqd.capnp.h"

namespace mqd::server {
namespace {

constexpr size_t kMaxFilesPerBuild = 64;
constexpr size_t kMaxWindows = 1u << 16;

}  // namespace

LearnedMemory::LearnedMemory(std::string stateDir, std::string buildId)
    : dir_(buildId.empty() ? "" : std::move(stateDir)), buildId_(std::move(buildId)) {}

std::string LearnedMemory::file(uint64_t fingerprint) const {
  char name[64];
  std::snprintf(name, sizeof name, "-%016llx.capnp", static_cast<unsigned long long>(fingerprint));
  return dir_ + "/blocks-" + buildId_ + name;
}

std::vector<TargetMemory::Window> LearnedMemory::load(uint64_t fingerprint) const {
  std::vector<TargetMemory::Window> out;
  if (dir_.empty() || fingerprint == 0) return out;
  int fd = ::open(file(fingerprint).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 1u << 20;
    capnp::StreamFdMessageReader reader(fd, options);
    auto learned = reader.getRoot<wire::LearnedBlocks>();
    if (learned.getBuildId() == buildId_ && learned.getFingerprint() == fingerprint) {
      for (auto w : learned.getWindows()) out.push_back({w.getAddress(), w.getSize()});
    }
  } catch (const kj::Exception& e) {
    MQD_LOG(Warn, "ignoring unreadable %s: %s", file(fingerprint).c_str(),
            e.getDescription().cStr());
    out.clear();
  }
  ::close(fd);
  return out;
}

void LearnedMemory::save(uint64_t fingerprint, const std::vector<TargetMemory::Window>& windows) {
  if (dir_.empty() || fingerprint == 0 || windows.empty()) return;
  ::mkdir(dir_.c_str(), 0700);
  capnp::MallocMessageBuilder message;
  auto learned = message.initRoot<wire::LearnedBlocks>();
  learned.setBuildId(buildId_);
  learned.setFingerprint(fingerprint);
  size_t n = std::min(windows.size(), kMaxWindows);
  auto list = learned.initWindows(static_cast<unsigned>(n));
  for (size_t i = 0; i < n; ++i) {
    list[static_cast<unsigned>(i)].setAddress(windows[i].address);
    list[static_cast<unsigned>(i)].setSize(windows[i].size);
  }
  std::string target = file(fingerprint);
  std::string tmp = target + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    MQD_LOG(Warn, "cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    return;
  }
  try {
    capnp::writeMessageToFd(fd, message);
    ::close(fd);
    if (::rename(tmp.c_str(), target.c_str()) != 0) ::unlink(tmp.c_str());
  } catch (const kj::Exception& e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    MQD_LOG(Warn, "cannot write %s: %s", target.c_str(), e.getDescription().cStr());
    return;
  }
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
  if (files.size() <= kMaxFilesPerBuild) return;
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + kMaxFilesPerBuild < files.size(); ++i) ::unlink(files[i].second.c_str());
}

}  // namespace mqd::server
