#include "ProcessUsage.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace mqd::soak {
namespace {

std::string procDir(pid_t pid) {
  return pid == 0 ? std::string("/proc/self") : "/proc/" + std::to_string(pid);
}

// Directory entries other than . and ..; -1 when the directory cannot be opened.
int countEntries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

}  // namespace

ProcessUsage ProcessUsage::of(pid_t pid) {
  ProcessUsage u;
  std::ifstream statm(procDir(pid) + "/statm");
  int64_t size = 0, resident = 0;
  if (statm >> size >> resident) u.rssBytes = resident * ::sysconf(_SC_PAGESIZE);
  // Counted after statm: opendir itself holds a descriptor while it counts, the same one
  // every time, so it cancels out between two samples.
  u.fds = countEntries(procDir(pid) + "/fd");
  u.threads = countEntries(procDir(pid) + "/task");
  return u;
}

std::string openDescriptors(pid_t pid) {
  std::string dir = procDir(pid) + "/fd";
  std::string out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[512];
    ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
    target[n < 0 ? 0 : n] = 0;
    out += std::string(e->d_name) + " -> " + target + "\n";
  }
  ::closedir(d);
  return out;
}

std::string mebibytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string ProcessUsage::text() const {
  return "rss " + mebibytes(rssBytes) + ", " + std::to_string(fds) + " fds, " +
         std::to_string(threads) + " threads";
}

}  // namespace mqd::soak
