#include "ReadAhead.h"

#include <algorithm>
#include <cstring>

#include "Bulk.h"
#include "Log.h"
#include "ProxyErrors.h"

namespace mqd::client {

uint64_t bytesOf(const std::vector<Window>& windows) {
  uint64_t bytes = 0;
  for (const Window& w : windows) bytes += w.size;
  return bytes;
}

uint64_t bytesOf(const std::vector<ReadAhead>& read) {
  uint64_t bytes = 0;
  for (const ReadAhead& r : read) bytes += r.window.size;
  return bytes;
}

std::vector<Window> windowsOf(capnp::List<wire::MemoryWindow>::Reader list) {
  std::vector<Window> out;
  for (auto w : list) out.push_back({w.getAddress(), w.getSize()});
  return out;
}

void writeWindows(const std::vector<Window>& windows,
                  capnp::List<wire::MemoryWindow>::Builder out) {
  for (unsigned i = 0; i < windows.size(); ++i) {
    out[i].setAddress(windows[i].address);
    out[i].setSize(windows[i].size);
  }
}

std::vector<Window> windowsOf(const std::vector<ReadAhead>& read) {
  std::vector<Window> out;
  for (const ReadAhead& r : read) out.push_back(r.window);
  return out;
}

namespace {

// Reads the span of windows[first, next) in one read; true, with a ReadAhead per window cut
// from it in `out`, when the debugger gave it whole. A lone window's read is its answer either
// way (and true).
bool readWhole(const std::vector<Window>& windows, size_t first, size_t next,
               const ReadBlock& read, std::vector<ReadAhead>& out) {
  if (next - first == 1) {
    out.push_back({windows[first], read(windows[first].address, windows[first].size)});
    return true;
  }
  const uint64_t start = windows[first].address;
  uint64_t end = start;
  for (size_t i = first; i < next; ++i) {
    end = std::max<uint64_t>(end, windows[i].address + windows[i].size);
  }
  const auto size = static_cast<uint32_t>(end - start);
  DebuggerSide::Block span = read(start, size);
  if (span.rc != mqs_ok || span.address != start || span.bytes.size() != size) return false;
  for (size_t i = first; i < next; ++i) {
    DebuggerSide::Block b;
    b.rc = mqs_ok;
    b.address = windows[i].address;
    auto from = span.bytes.begin() + static_cast<std::ptrdiff_t>(b.address - start);
    b.bytes.assign(from, from + windows[i].size);
    out.push_back({windows[i], std::move(b)});
  }
  return true;
}

// Reads windows[first, next), a span the debugger did not give whole, into `out`, in order.
// Its halves are read as spans: the one that fails is split in turn, down to the windows a
// read fails for (most often a guess's last pages, past the top of the heap), so that a failure
// costs the reads around it, not a read of every window. When both halves fail, the failures
// are spread through the span, and its windows are read one by one.
void readFailedSpan(const std::vector<Window>& windows, size_t first, size_t next,
                    const ReadBlock& read, std::vector<ReadAhead>& out) {
  const size_t middle = first + (next - first) / 2;
  std::vector<ReadAhead> right;
  const bool leftWhole = readWhole(windows, first, middle, read, out);
  const bool rightWhole = readWhole(windows, middle, next, read, right);
  if (!leftWhole && !rightWhole) {
    for (size_t i = first; i < next; ++i) readWhole(windows, i, i + 1, read, out);
    return;
  }
  if (!leftWhole) readFailedSpan(windows, first, middle, read, out);
  if (!rightWhole) {
    readFailedSpan(windows, middle, next, read, out);
  } else {
    for (ReadAhead& r : right) out.push_back(std::move(r));
  }
}

}  // namespace

namespace {

// The end of the span readWindows reads in one read from windows[first]: the windows after
// `first`, in address order, that start within kReadGap of the end of those before (or inside
// them: windows may overlap), up to wire::MAX_BLOCKS_AHEAD_BYTES.
size_t spanEnd(const std::vector<Window>& windows, size_t first) {
  const uint64_t start = windows[first].address;
  uint64_t end = start + windows[first].size;
  size_t next = first + 1;
  for (; next < windows.size(); ++next) {
    const Window& w = windows[next];
    if (w.address < windows[next - 1].address || end < start ||
        (w.address > end && w.address - end > kReadGap) || w.address + w.size < w.address ||
        std::max<uint64_t>(end, w.address + w.size) - start > wire::MAX_BLOCKS_AHEAD_BYTES) {
      break;
    }
    end = std::max<uint64_t>(end, w.address + w.size);
  }
  return next;
}

}  // namespace

uint64_t readsOf(const std::vector<Window>& windows) {
  uint64_t reads = 0;
  for (size_t first = 0; first < windows.size(); first = spanEnd(windows, first)) ++reads;
  return reads;
}

std::vector<ReadAhead> readWindows(const std::vector<Window>& windows, const ReadBlock& read) {
  std::vector<ReadAhead> out;
  try {
    for (size_t first = 0, next; first < windows.size(); first = next) {
      next = spanEnd(windows, first);
      if (!readWhole(windows, first, next, read, out)) {
        readFailedSpan(windows, first, next, read, out);
      }
    }
  } catch (const ProxyError& e) {
    MQD_LOG(Debug, "no memory read ahead: %s", e.what());
    out.clear();
  }
  return out;
}

std::vector<ReadAhead> readOf(const std::vector<ReadAhead>& sent, const std::vector<Window>& read) {
  // Both in address order, or nothing is left out.
  for (size_t i = 1; i < sent.size(); ++i) {
    if (sent[i].window.address < sent[i - 1].window.address) return sent;
  }
  for (size_t i = 1; i < read.size(); ++i) {
    if (read[i].address < read[i - 1].address) return sent;
  }
  std::vector<ReadAhead> out;
  auto first = read.begin();
  for (const ReadAhead& r : sent) {
    const uint64_t start = r.window.address;
    const uint64_t end = start + r.window.size;
    // A block not sent whole is proved whole: a read that failed there is in no window of
    // `read` (which holds what the DLL read), yet its failure is part of the answer.
    if (r.block.rc != mqs_ok || r.block.address != start || r.block.bytes.size() != r.window.size) {
      out.push_back(r);
      continue;
    }
    // The read windows that end after this block starts; those before it are done with
    // (`sent` is in address order too).
    while (first != read.end() && first->address + first->size <= start) ++first;
    for (auto w = first; w != read.end() && w->address < end; ++w) {
      uint64_t from = std::max<uint64_t>(w->address, start);
      uint64_t to = std::min<uint64_t>(w->address + w->size, end);
      DebuggerSide::Block part;
      part.rc = mqs_ok;
      part.address = from;
      auto bytes = r.block.bytes.begin() + static_cast<std::ptrdiff_t>(from - start);
      part.bytes.assign(bytes, bytes + static_cast<std::ptrdiff_t>(to - from));
      out.push_back({{from, static_cast<uint32_t>(to - from)}, std::move(part)});
    }
  }
  return out;
}

std::vector<ReadAhead> unpackFor(capnp::List<wire::MemoryWindow>::Reader windows,
                                 capnp::List<wire::MemoryBlock>::Reader blocks,
                                 const std::optional<std::vector<Window>>& used) {
  if (windows.size() != blocks.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "memory read ahead: windows and blocks differ");
  }
  std::vector<Window> sent = windowsOf(windows);
  auto touched = [&used](const Window& w) {
    return std::any_of(used->begin(), used->end(), [&w](const Window& u) {
      return u.address < w.address + w.size && w.address < u.address + u.size;
    });
  };
  const bool all = !used || std::none_of(sent.begin(), sent.end(), touched);
  std::vector<ReadAhead> out;
  for (unsigned i = 0; i < sent.size(); ++i) {
    auto b = blocks[i];
    bool whole = b.getRc() == mqs_ok && b.getAddress() == sent[i].address &&
                 b.getData().getSize() == sent[i].size;
    // Left out: a block whole that the update did not touch, and a refusal, which answered
    // nothing: the server keeps none sent ahead (RemoteDebugger::keepBlock), so a read of the
    // DLL's there was a miss, fetched, and proved as a fetch.
    if (!all && ((whole && !touched(sent[i])) || b.getRc() != mqs_ok)) continue;
    DebuggerSide::Block block;
    block.rc = b.getRc();
    block.address = b.getAddress();
    kj::Array<kj::byte> bytes = readBulk(b.getData(), sent[i].size);
    block.bytes.assign(bytes.begin(), bytes.end());
    out.push_back({sent[i], std::move(block)});
  }
  return out;
}

bool sameReads(const std::vector<ReadAhead>& then, const std::vector<ReadAhead>& now) {
  if (then.size() != now.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    const DebuggerSide::Block& a = then[i].block;
    const DebuggerSide::Block& b = now[i].block;
    if (then[i].window.address != now[i].window.address ||
        then[i].window.size != now[i].window.size || a.rc != b.rc || a.address != b.address ||
        a.bytes != b.bytes) {
      return false;
    }
  }
  return true;
}

bool sameAsNode(const std::vector<ReadAhead>& read, capnp::List<wire::MemoryBlock>::Reader node) {
  if (read.size() != node.size()) return false;
  for (unsigned i = 0; i < node.size(); ++i) {
    const DebuggerSide::Block& mine = read[i].block;
    if (mine.rc != mqs_ok || node[i].getRc() != mqs_ok || mine.address != node[i].getAddress() ||
        mine.address != read[i].window.address || mine.bytes.size() != read[i].window.size) {
      return false;
    }
    kj::Array<kj::byte> theirs = readBulk(node[i].getData(), read[i].window.size);
    if (theirs.size() != mine.bytes.size() ||
        std::memcmp(theirs.begin(), mine.bytes.data(), theirs.size()) != 0) {
      return false;
    }
  }
  return true;
}

void writeAhead(const std::vector<ReadAhead>& read, bool compress,
                capnp::List<wire::MemoryWindow>::Builder windows,
                capnp::List<wire::MemoryBlock>::Builder blocks) {
  for (unsigned i = 0; i < read.size(); ++i) {
    windows[i].setAddress(read[i].window.address);
    windows[i].setSize(read[i].window.size);
    const DebuggerSide::Block& b = read[i].block;
    blocks[i].setRc(b.rc);
    blocks[i].setAddress(b.address);
    setBulk(blocks[i].initData(), kj::arrayPtr(b.bytes.data(), b.bytes.size()), compress);
  }
}

void NamedWindows::keep(uint64_t token, capnp::List<wire::MemoryWindow>::Reader windows) {
  if (windows.size() == 0) {
    named_.erase(token);
  } else {
    named_[token] = windowsOf(windows);
  }
}

std::vector<ReadAhead> readAhead(DebuggerSide& side, uint64_t process,
                                 const std::vector<Window>& windows) {
  return readWindows(windows, [&side, process](uint64_t start, uint32_t size) {
    return side.readBlock(process, start, size, start, size);
  });
}

}  // namespace mqd::client
