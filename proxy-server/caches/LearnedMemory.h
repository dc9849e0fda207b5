// LearnedMemory: which target memory the DLL read of a process in a session (in any epoch,
// TargetMemory::allWindows), kept on disk between sessions, so that a new session on the same
// process (a debugger that re-attaches) can ask for all of it in one round trip instead of
// block by block.
//
// A process is recognised by a fingerprint: a hash of the DLL build and of the addresses the
// process's data-symbol look-ups resolved to, which address-space randomisation makes
// particular to one process. A wrong guess costs bytes, never correctness: the cache only ever
// holds what the debugger itself returned for the current epoch.
//
// Only a whole record is kept: one that holds what at least one update of the process read
// (with its walk), not only its set-up. A set-up's reads are read again by the next session's
// set-up anyway, and a record of them alone would make a set-up reply say that the first
// update is likely to read nothing else (docs/round-trips.md, "Learned state") when it reads
// everything else. A file without the mark (an older server's) is ignored.
//
// Files: <state-dir>/blocks-<build-id>-<fingerprint>.capnp, one per process. At a session's
// first save, the oldest beyond kMaxFilesPerBuild are removed: a record per process of a job
// of that many ranks, as many as the shim's set-up records (proxy-client/SetUpRecall.h). Pruned
// once per session, not at every save, so that a session never removes what it saved itself
// and a job of thousands of ranks does not scan the directory once per rank. Each record is
// read from disk once per session.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "TargetMemory.h"

namespace mqd::server {

class LearnedMemory {
 public:
  static constexpr size_t kMaxFilesPerBuild = 16384;

  // `maxFiles`: kMaxFilesPerBuild but in tests.
  LearnedMemory(std::string stateDir, std::string buildId,
                size_t maxFiles = kMaxFilesPerBuild);

  bool enabled() const { return !dir_.empty(); }

  struct Record {
    std::vector<TargetMemory::Window> windows;  // what every epoch read
    std::vector<TargetMemory::Window> setUp;    // what the set-up epoch read
  };

  // Empty when no whole record is known for the fingerprint (or it is 0: no fingerprint).
  const Record& load(uint64_t fingerprint);
  // Replaces what is known for the fingerprint with a whole record (the caller's promise: the
  // windows include an update's). Never throws.
  void save(uint64_t fingerprint, const Record& record);

 private:
  std::string file(uint64_t fingerprint) const;
  Record read(uint64_t fingerprint) const;
  void prune() const;

  std::string dir_;
  std::string buildId_;
  size_t maxFiles_;
  bool pruned_ = false;  // this session pruned the directory (at its first save)
  // Records read or written in this session, by fingerprint.
  std::map<uint64_t, Record> records_;
};

}  // namespace mqd::server
