// ProcessUsage: what a process holds at one moment (resident memory, open descriptors,
// threads), read from /proc, for tests that check that repeating something does not make a
// process grow.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace mqd::soak {

struct ProcessUsage {
  int64_t rssBytes = -1;  // resident set (statm field 2 times the page size); -1: unknown
  int fds = -1;           // entries of /proc/PID/fd
  int threads = -1;       // entries of /proc/PID/task

  // Reads `pid` (0: this process). A process that is gone reads as all -1.
  static ProcessUsage of(pid_t pid = 0);

  // "rss 12.3 MiB, 7 fds, 2 threads".
  std::string text() const;
};

// The open descriptors of `pid` (0: this process) and what they refer to, one "fd -> target"
// per line, to show which ones a leak left behind.
std::string openDescriptors(pid_t pid = 0);

// Resident growth from `before` to `after` in bytes (negative when it shrank).
inline int64_t rssGrowth(const ProcessUsage& before, const ProcessUsage& after) {
  return after.rssBytes - before.rssBytes;
}

// `bytes` as "1.25 MiB" (with sign when negative).
std::string mebibytes(int64_t bytes);

}  // namespace mqd::soak
