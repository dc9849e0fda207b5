// ReadAhead: target memory the shim reads through the debugger before the server asks for it
// (a process's next epoch, the rest of its set-up), sent with the request so that the DLL's
// reads on the server find it there instead of costing a callback each (docs/round-trips.md).
//
// A Window names memory; readWindows() reads a list of them with as few debugger reads as
// their layout allows, and gives each window the block a read of that window alone gives.
// Nothing here talks to the server or keeps state: the reads go through the function it is
// handed (DebuggerSide::readBlock in the shim, a fake target in tests).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "DebuggerSide.h"
#include "mqd.capnp.h"

namespace mqd::client {

// A window of target memory.
struct Window {
  uint64_t address;
  uint32_t size;
};

// Per image or process, the windows a server's reply named (a set-up's setUpAhead: what the
// rest of that set-up, or a set-up of a process of that image, is likely to read).
class NamedWindows {
 public:
  // Keeps what a reply named for `token`; a reply that named nothing forgets it.
  void keep(uint64_t token, capnp::List<wire::MemoryWindow>::Reader windows);
  // Null when nothing is named.
  const std::vector<Window>* find(uint64_t token) const {
    auto it = named_.find(token);
    return it == named_.end() ? nullptr : &it->second;
  }
  void forget(uint64_t token) { named_.erase(token); }
  void clear() { named_.clear(); }

 private:
  std::unordered_map<uint64_t, std::vector<Window>> named_;
};

// A window, and the block the debugger gave for it.
struct ReadAhead {
  Window window;
  DebuggerSide::Block block;
};

// The bytes `windows` span in all.
uint64_t bytesOf(const std::vector<Window>& windows);
// The bytes the windows of `read` span in all.
uint64_t bytesOf(const std::vector<ReadAhead>& read);
// The windows of a list a server reply names.
std::vector<Window> windowsOf(capnp::List<wire::MemoryWindow>::Reader list);
// The windows a list of blocks read ahead was read for.
std::vector<Window> windowsOf(const std::vector<ReadAhead>& read);
// `windows` into a request's list (initialised to their number).
void writeWindows(const std::vector<Window>& windows,
                  capnp::List<wire::MemoryWindow>::Builder out);

// Windows that follow each other within kReadGap bytes are read as one span: through
// gdbserver one read carries up to 9,215 bytes, so two windows 8 KiB apart cost one exchange
// read together and two apart (a rank's stack's top and its AT_RANDOM bytes, about 6 KiB
// apart, read with its set-up on a node that reads memory itself).
constexpr uint64_t kReadGap = 8192;

// How many reads readWindows() makes of `windows` when every span reads whole.
uint64_t readsOf(const std::vector<Window>& windows);

// Reads one block of target memory: [start, start + size), as the debugger gives it.
using ReadBlock = std::function<DebuggerSide::Block(uint64_t start, uint32_t size)>;

// Reads `windows` (in ascending order, as the server names them) and returns one ReadAhead per
// window, in order. Windows that follow each other within kReadGap bytes, or overlap, a span
// of at most wire::MAX_BLOCKS_AHEAD_BYTES, are read as one span and cut; a span `read` does not give
// whole is read again by halves, down to the windows that fail (or window by window when both
// halves fail), so each block is exactly what a read of its window alone gives, a refusal
// (rc != mqs_ok) included. A ProxyError thrown by `read` (the debugger cannot be asked now)
// gives an empty list: the server then asks for what it needs itself.
std::vector<ReadAhead> readWindows(const std::vector<Window>& windows, const ReadBlock& read);

// readWindows() of the process's memory through the debugger (each read a callback into it: a
// packet exchange through gdbserver).
std::vector<ReadAhead> readAhead(DebuggerSide& side, uint64_t process,
                                 const std::vector<Window>& windows);

// What of `sent` (blocks read ahead for a refresh, as readWindows gave them) the refresh read,
// by `read` (the windows its update read, in address order: RefreshedAhead.read): the proof
// that it is still current reads these again. Of a block sent whole, the parts of `read`
// inside its window, with the bytes sent there; a block not sent whole (refused, or only part
// of its window readable), touched or not, whole: a read that failed there is in no window of
// `read`, yet the update was answered its failure. Parts of `read` outside every block sent
// were never read from them (the refresh asked the debugger nothing: RefreshedAhead), and are
// left out. In address order; `sent` whole when either list is not in address order.
std::vector<ReadAhead> readOf(const std::vector<ReadAhead>& sent, const std::vector<Window>& read);

// The blocks a request's `windows` and `blocks` (as writeAhead wrote them) carried that a proof
// of `used` needs (readOf): those a window of `used` overlaps and those readable only in part,
// with their bytes, not the refused ones (the server keeps no refusal read ahead: a read there
// was a miss, fetched); every block when `used` is nullopt or overlaps none (the proof then
// reads all). In the lists' order. Throws ProxyError(PROTOCOL) for a payload that does not unpack.
std::vector<ReadAhead> unpackFor(capnp::List<wire::MemoryWindow>::Reader windows,
                                 capnp::List<wire::MemoryBlock>::Reader blocks,
                                 const std::optional<std::vector<Window>>& used);

// Whether `then` and `now` are the same reads: the same windows, each block the same (rc,
// address and bytes). A refresh ahead made from `then` is proved current by `now`.
bool sameReads(const std::vector<ReadAhead>& then, const std::vector<ReadAhead>& now);

// Whether the debugger read exactly the node's bytes: each window whole, as `node` has it
// (wire updateCommunicatorList's nodeBytes).
bool sameAsNode(const std::vector<ReadAhead>& read, capnp::List<wire::MemoryBlock>::Reader node);

// Writes what was read ahead into a request's parallel lists `windows` and `blocks`, each of
// read.size() elements; `compress`: zstd the blocks' bytes (Bulk.h).
void writeAhead(const std::vector<ReadAhead>& read, bool compress,
                capnp::List<wire::MemoryWindow>::Builder windows,
                capnp::List<wire::MemoryBlock>::Builder blocks);
// The same into a request's `ahead` and `blocks` fields, left unset when nothing was read.
template <typename Builder>
void writeAhead(const std::vector<ReadAhead>& read, bool compress, Builder&& to) {
  if (read.empty()) return;
  auto n = static_cast<unsigned>(read.size());
  writeAhead(read, compress, to.initAhead(n), to.initBlocks(n));
}

}  // namespace mqd::client
