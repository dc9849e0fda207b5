// TargetMemory: a process's memory as the server has read it during the current epoch.
//
// The vendor DLL reads the target 4 and 8 bytes at a time, tens of thousands of times per
// dump. The server instead asks the debugger for whole aligned blocks (blockSize bytes) and
// answers the DLL from them. A block that runs into memory the debugger cannot read comes back
// as the readable page-aligned window around what was needed; a read the debugger refused is
// remembered as refused, with its error code, so the DLL gets the same answer again.
//
// Memory is only stable while the target is stopped. What counts as "the same stop" is the
// epoch, chosen by the session's cache policy (see SessionService): everything here is dropped
// when an epoch ends. The blocks an epoch touched are remembered, so the next epoch can ask for
// them all at once, before the DLL needs them.
#pragma once

#include <kj/array.h>

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace mqd::server {

class TargetMemory {
 public:
  struct Request {
    uint64_t address;
    uint32_t size;
  };
  struct Window {
    uint64_t address;
    uint32_t size;
  };

  explicit TargetMemory(uint32_t blockSize) : blockSize_(blockSize) {}

  uint32_t blockSize() const { return blockSize_; }

  // Copies [address, address + size) into out if one cached window holds it all.
  bool read(uint64_t address, uint32_t size, void* out) const;
  // The error code the debugger gave for exactly this range this epoch, if it refused it.
  bool failed(uint64_t address, uint32_t size, int* rc) const;

  // The aligned block (or run of blocks) to ask for when [address, address + size) misses.
  Request requestFor(uint64_t address, uint32_t size) const;

  // Keeps `bytes` (the debugger's answer, moved in as it arrived: no copy) as the window at
  // `address`.
  void store(uint64_t address, kj::Array<kj::byte> bytes);
  void storeFailure(uint64_t address, uint32_t size, int rc);

  // Ends the epoch: forgets everything, keeps the windows it had for prefetching.
  void newEpoch();
  // What the previous epoch had read, to ask for again at the start of this one.
  const std::vector<Window>& previousWindows() const { return previous_; }
  // What this epoch has read so far.
  std::vector<Window> currentWindows() const;

 private:
  uint32_t blockSize_;
  std::map<uint64_t, kj::Array<kj::byte>> windows_;  // start -> bytes
  std::map<std::pair<uint64_t, uint32_t>, int> failures_;
  std::vector<Window> previous_;
};

}  // namespace mqd::server
