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
// when an epoch ends. What the DLL read in an epoch is remembered, so the next epoch can ask
// for it all at once, before the DLL needs it: the bytes the DLL read, not the blocks around
// them, since a debugger's remote link carries a few KiB per exchange (gdbserver about 9 KiB,
// qemu's stub 2 KiB) and a 64 KiB block the DLL read 200 bytes of would cost 8 to 32 of them.
// Ranges closer than kTouchGap are asked for as one window (a gap costs less than another
// exchange), and no window crosses a block boundary.
#pragma once

#include <kj/array.h>

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "Bulk.h"

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

  // Read ranges closer than this are one window for the next epoch.
  static constexpr uint64_t kTouchGap = 1024;

  explicit TargetMemory(uint32_t blockSize) : blockSize_(blockSize) {}

  uint32_t blockSize() const { return blockSize_; }

  // Copies [address, address + size) into out if the windows kept hold it all (`out` null:
  // only whether they do).
  bool read(uint64_t address, uint32_t size, void* out) const;
  // The error code the debugger gave for exactly this range this epoch, if it refused it.
  bool failed(uint64_t address, uint32_t size, int* rc) const;

  // The aligned block (or run of blocks) to ask for when [address, address + size) misses.
  Request requestFor(uint64_t address, uint32_t size) const;
  // Counts a read that missed this epoch; returns how many did, this one included.
  uint32_t countMiss() { return ++misses_; }
  // Whether nothing named what this epoch reads (RemoteDebugger::newEpoch decides;
  // newEpoch clears it): its misses are a walk through memory the server was never told of
  // (RemoteDebugger::fetchBlock).
  bool unguided() const { return unguided_; }
  void setUnguided() { unguided_ = true; }
  // Whether the previous epoch was a set-up (the process was never updated since), and one
  // nothing guided.
  bool afterSetUp() const { return afterSetUp_; }
  bool afterUnguidedSetUp() const { return afterUnguidedSetUp_; }

  // Keeps `bytes` (the debugger's answer, moved in as it arrived: no copy) as the window at
  // `address`; windows it holds entirely are dropped. A window that came compressed is
  // decompressed when the DLL first reads it (BulkBytes): a frame that does not decompress to
  // its size throws ProxyError(PROTOCOL) from read() then.
  void store(uint64_t address, kj::Array<kj::byte> bytes);
  void store(uint64_t address, BulkBytes bytes);
  // store(), and copies [needed, needed + size) out of the new window into `out`: the one way a
  // block fetched for a read that missed reaches the DLL. False, keeping nothing, if the
  // window does not hold that range.
  bool storeAndRead(uint64_t address, kj::Array<kj::byte> bytes, uint64_t needed,
                    uint32_t size, void* out);
  // The DLL was answered [address, address + size) this epoch (from a window, or not).
  void touch(uint64_t address, uint32_t size);
  void storeFailure(uint64_t address, uint32_t size, int rc);

  // Ends the epoch: forgets everything, keeps what the DLL read for prefetching. `setUp`: the
  // epoch that starts is the process's set-up.
  void newEpoch(bool setUp = false);
  // What the DLL read in the previous epoch, to ask for again at the start of this one.
  const std::vector<Window>& previousWindows() const { return previous_; }
  // When the previous epoch was a set-up, the windows it kept, whole: a first
  // mqs_update_communicator_list reads near what set-up read, and with nothing learned
  // about the process these save it a miss per block.
  const std::vector<Window>& previousSetUpWindows() const { return previousSetUp_; }
  // Whether this epoch is a set-up (newEpoch(true)).
  bool setUpEpoch() const { return setUp_; }
  // The windows kept this epoch (blocks, and what was asked for ahead), in address order.
  std::vector<Window> keptWindows() const;
  // What the DLL has read so far this epoch, as windows to ask for (see kTouchGap), in
  // address order.
  std::vector<Window> currentWindows() const;
  // What the DLL has read in any epoch of this memory, this one included: what a later
  // session's first epoch may read (a first mqs_update_communicator_list reads more than a
  // later one, which finds the communicators unchanged).
  std::vector<Window> allWindows() const;
  // What the DLL read in the process's set-up epoch (this one while it lasts), as windows.
  std::vector<Window> setUpWindows() const;

 private:
  uint32_t misses_ = 0;  // countMiss, this epoch
  // The window holding the byte at `address` (its start in *start), or null.
  const BulkBytes* holding(uint64_t address, uint64_t* start) const;

  uint32_t blockSize_;
  std::map<uint64_t, BulkBytes> windows_;  // start -> bytes
  uint64_t largestWindow_ = 0;  // of windows_, for read's look-behind

  // Byte ranges read, merged when kTouchGap apart or closer.
  class ReadRanges {
   public:
    void add(uint64_t start, uint64_t end);
    void addAll(const ReadRanges& other);
    void clear() { ranges_.clear(); }
    // As windows of at most one block each.
    std::vector<Window> windows(uint32_t blockSize) const;

   private:
    std::map<uint64_t, uint64_t> ranges_;  // start -> end
  };
  ReadRanges touched_;     // this epoch
  ReadRanges allTouched_;  // the epochs before this one
  std::map<std::pair<uint64_t, uint32_t>, int> failures_;
  std::vector<Window> previous_;
  std::vector<Window> previousSetUp_;
  std::vector<Window> setUpRead_;  // what the last set-up epoch read (currentWindows)
  bool setUp_ = false;  // this epoch is a set-up
  bool unguided_ = false;
  bool afterSetUp_ = false;
  bool afterUnguidedSetUp_ = false;
};

}  // namespace mqd::server
