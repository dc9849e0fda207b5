// RefreshFetches: the blocks the server fetches from the debugger for the other processes of
// one update while its request is out (the misses of their refreshes ahead: wire fetchBlocks,
// not aside), kept for the proofs of the refreshes the server then keeps (wire
// updateCommunicatorList's othersProvedByFetches; docs/round-trips.md, "The whole job").
//
// Contract: for the life of the object it listens to every DebuggerSide::readBlock, after the
// listener before it, which it restores when destroyed (scopes nest). It keeps each read of one
// of `processes` as a ReadAhead that a proof reads again and finds the same when nothing
// changed: a block given whole for the window it holds, a refusal for the range the server
// needed. At most `maxBytes` in all: past it, a process it had to leave a block out for is
// `incomplete`, and no refresh of it may be kept. Not thread-safe: the debugger's thread, on
// which the shim serves the server's callbacks, alone uses it.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <unordered_map>
#include <vector>

#include "DebuggerSide.h"
#include "ReadAhead.h"

namespace mqd::client {

class RefreshFetches {
 public:
  RefreshFetches(DebuggerSide& side, std::set<uint64_t> processes, uint64_t maxBytes);
  ~RefreshFetches();
  RefreshFetches(const RefreshFetches&) = delete;
  RefreshFetches& operator=(const RefreshFetches&) = delete;

  // Whether a block fetched for the process was left out (maxBytes).
  bool incomplete(uint64_t process) const { return incomplete_.count(process) != 0; }
  // The blocks fetched for the process, in the order fetched, taken out.
  std::vector<ReadAhead> take(uint64_t process);

 private:
  void kept(uint64_t process, uint64_t neededAddress, uint32_t neededSize,
            const DebuggerSide::Block& block);

  DebuggerSide& side_;
  decltype(DebuggerSide::onRead) previous_;
  std::set<uint64_t> processes_;
  uint64_t maxBytes_;
  uint64_t bytes_ = 0;
  std::unordered_map<uint64_t, std::vector<ReadAhead>> fetched_;
  std::set<uint64_t> incomplete_;
};

}  // namespace mqd::client
