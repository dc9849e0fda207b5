// LearnedMemory: which target memory the DLL read of a process in a session (in any epoch,
// TargetMemory::allWindows), kept on disk between sessions, so that a new session on the same process (a debugger that re-attaches) can ask
// for all of it in one round trip instead of block by block.
//
// A process is recognised by a fingerprint: a hash of the DLL build and of the addresses the
// process's data-symbol look-ups resolved to, which address-space randomisation makes
// particular to one process. A wrong guess costs bytes, never correctness: the cache only ever holds what
// the debugger itself returned for the current epoch.
//
// Files: <state-dir>/blocks-<build-id>-<fingerprint>.capnp; the oldest are removed beyond
// kMaxFilesPerBuild.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "TargetMemory.h"

namespace mqd::server {

class LearnedMemory {
 public:
  LearnedMemory(std::string stateDir, std::string buildId);

  bool enabled() const { return !dir_.empty(); }

  std::vector<TargetMemory::Window> load(uint64_t fingerprint) const;
  // Replaces what is known for the fingerprint. Never throws.
  void save(uint64_t fingerprint, const std::vector<TargetMemory::Window>& windows);

 private:
  std::string file(uint64_t fingerprint) const;
  void prune() const;

  std::string dir_;
  std::string buildId_;
};

}  // namespace mqd::server
