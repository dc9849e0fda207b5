#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "PeerLayout.h"

using mqd::server::PeerLayout;
using mqd::server::TargetMemory;
using Window = TargetMemory::Window;

namespace {

// A process's memory as a few windows of bytes, with 8-byte little-endian pointers in them.
struct Image {
  std::vector<std::pair<uint64_t, std::vector<unsigned char>>> windows;

  void add(uint64_t address, size_t size) {
    windows.push_back({address, std::vector<unsigned char>(size, 0x5a)});
  }
  void pointer(uint64_t at, uint64_t value) {
    for (auto& [start, bytes] : windows) {
      if (at >= start && at + 8 <= start + bytes.size()) {
        for (int i = 0; i < 8; ++i) {
          bytes[at - start + i] = static_cast<unsigned char>(value >> (8 * i));
        }
        return;
      }
    }
    FAIL("no window holds the pointer");
  }
  void fill(TargetMemory& m) const {
    for (const auto& [start, bytes] : windows) {
      m.store(start, kj::heapArray<kj::byte>(bytes.data(), bytes.size()));
    }
  }
  // The bytes of the windows asked for that this image holds, into `into` (what the shim reads).
  void serve(const std::vector<Window>& asked, TargetMemory& into) const {
    for (const Window& w : asked) {
      for (const auto& [start, bytes] : windows) {
        if (w.address >= start && w.address + w.size <= start + bytes.size()) {
          const unsigned char* from = bytes.data() + (w.address - start);
          into.store(w.address, kj::heapArray<kj::byte>(from, w.size));
        }
      }
    }
  }
};

bool holds(const std::vector<Window>& windows, uint64_t address, uint32_t size) {
  for (const Window& w : windows) {
    if (address >= w.address && address + size <= w.address + w.size) return true;
  }
  return false;
}

// The layout of an Open MPI rank as the DLL reads it: a library's data (found by a symbol)
// points into the heap, the heap points into the executable's data.
constexpr uint64_t kLib = 0x7f0000010b40, kHeap1 = 0x550010000a90, kHeap2 = 0x550010010300,
                   kExe = 0x550000000118;

struct Job {
  Image peer, own;
  std::vector<Window> walked{{kLib, 1624}, {kHeap1, 96}, {kHeap2, 48}, {kExe, 1848}};
  uint64_t dLib, dHeap, dExe;

  Job(uint64_t lib, uint64_t heap, uint64_t exe, unsigned heapToExe = 2)
      : dLib(lib), dHeap(heap), dExe(exe) {
    for (Image* image : {&peer, &own}) {
      bool mine = image == &own;
      uint64_t l = mine ? dLib : 0, h = mine ? dHeap : 0, e = mine ? dExe : 0;
      image->add(kLib + l, 1624);
      image->add(kHeap1 + h, 96);
      image->add(kHeap2 + h, 48);
      image->add(kExe + e, 1848);
      image->pointer(kLib + l + 0x10, kHeap1 + h);
      image->pointer(kLib + l + 0x20, kHeap2 + h + 8);
      for (unsigned i = 0; i < heapToExe; ++i) {
        image->pointer(kHeap2 + h + 8 * i, kExe + e + 0x100 * i);
      }
    }
  }
  std::vector<PeerLayout::SymbolPair> symbols() const { return {{kLib, kLib + dLib}}; }
};

// Runs a guess to its end as the session does, the shim reading from `job.own`; `rounds` and
// `bytes`, if given, get how many rounds read the process and how much.
std::vector<Window> guessed(const Job& job, int* rounds = nullptr, uint64_t* bytes = nullptr) {
  TargetMemory peerMemory(65536);
  job.peer.fill(peerMemory);
  PeerLayout layout(peerMemory, job.walked, 8, false);
  PeerLayout::Guess guess = layout.start(job.symbols());
  int n = 0;
  uint64_t read = 0;
  while (!guess.toRead().empty()) {
    for (const Window& w : guess.toRead()) read += w.size;
    job.own.serve(guess.toRead(), guess.own());
    guess.learn();
    ++n;
  }
  if (rounds != nullptr) *rounds = n;
  if (bytes != nullptr) *bytes = read;
  return guess.windows();
}

// Whether any byte is in two of the windows.
bool overlaps(std::vector<Window> windows) {
  std::sort(windows.begin(), windows.end(),
            [](const Window& a, const Window& b) { return a.address < b.address; });
  for (size_t i = 1; i < windows.size(); ++i) {
    if (windows[i - 1].address + windows[i - 1].size > windows[i].address) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("PeerLayout: each region is moved as the process's own pointers say, round by round") {
  Job job(0x1000000, 0x2345000, uint64_t(0) - 0x100000);
  int rounds = 0;
  uint64_t bytes = 0;
  std::vector<Window> guess = guessed(job, &rounds, &bytes);
  // The library's words that point into the heap, then the heap's that point into the
  // executable's data (which points nowhere new): only those words are read.
  CHECK(rounds == 2);
  CHECK(bytes == 24 + 16);
  CHECK(holds(guess, kLib + job.dLib, 1624));
  CHECK(holds(guess, kHeap1 + job.dHeap, 96));
  CHECK(holds(guess, kHeap2 + job.dHeap, 48));
  CHECK(holds(guess, kExe + job.dExe, 1848));
  // The heap, moved by pointers, is widened: its objects drift from one rank to the next.
  CHECK(holds(guess, kHeap1 + job.dHeap - PeerLayout::kDrift, 16));
  CHECK(holds(guess, kHeap2 + job.dHeap + 48 + PeerLayout::kDrift - 16, 16));
  CHECK_FALSE(holds(guess, kHeap1 + job.dHeap - PeerLayout::kDrift - 16, 1));
  for (const Window& w : guess) CHECK(w.size <= PeerLayout::kPiece);
  // Near the heap's ends, where its mapping may end, a page at a time: one the debugger cannot
  // read loses no more.
  uint64_t heapStart = kHeap1 + job.dHeap - PeerLayout::kDrift;
  uint64_t heapEnd = kHeap2 + job.dHeap + 48 + PeerLayout::kDrift;
  for (const Window& w : guess) {
    if (w.address < heapStart + PeerLayout::kDrift || w.address >= heapEnd - PeerLayout::kDrift) {
      CHECK(w.size <= PeerLayout::kPage);
    }
  }
}

TEST_CASE("PeerLayout: a guess names each byte once") {
  // The heap's windows lie inside the widened heap: the widened pieces leave them out.
  Job job(0x1000000, 0x2345000, uint64_t(0) - 0x100000);
  std::vector<Window> guess = guessed(job);
  CHECK_FALSE(overlaps(guess));
  CHECK(holds(guess, kHeap1 + job.dHeap, 96));
  CHECK(holds(guess, kHeap1 + job.dHeap + 96, 16));
  CHECK(holds(guess, kHeap1 + job.dHeap - 16, 16));
}

TEST_CASE("PeerLayout: coverage counts what was read of what was named, and the runs missed") {
  // Named [100, 200) and [300, 400); read [50, 150), [180, 320) and [500, 510).
  PeerLayout::Coverage c =
      PeerLayout::coverage({{300, 100}, {100, 100}}, {{50, 100}, {180, 140}, {500, 10}});
  CHECK(c.named == 200);
  CHECK(c.read == 250);
  CHECK(c.readNamed == 50 + 20 + 20);
  // [50, 100), [200, 300), [500, 510)
  CHECK(c.missedRanges == 3);
  CHECK(PeerLayout::coverage({}, {}).missedRanges == 0);
  CHECK(PeerLayout::coverage({{0, 10}}, {{2, 3}}).readNamed == 3);
}

TEST_CASE("PeerLayout: what a set-up read, moved by the symbols alone, read nothing") {
  // A set-up reads the libraries' data where the symbols point: another process's set-up
  // reads, moved as the symbols both resolved show, with nothing read to find it out.
  Job job(0x1000000, 0x2345000, 0x300000);
  TargetMemory peerMemory(65536);
  job.peer.fill(peerMemory);
  PeerLayout layout(peerMemory, {{kLib + 0x100, 28}}, 8, false);
  std::vector<Window> moved = layout.start(job.symbols()).movedBySymbols();
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].address == kLib + 0x100 + job.dLib);
  CHECK(moved[0].size == 28);
  CHECK(layout.start({{0x10000, 0x20000}}).movedBySymbols().empty());  // no symbol near it
}

TEST_CASE("PeerLayout: a heap word off by less than a page moves nothing; the rest follows "
          "the heap") {
  // The process's heap words point 16 bytes past the peer's places: another object, drifted.
  Job job(0x1000000, 0x2345000, 0x300000);
  job.own.pointer(kHeap2 + job.dHeap, kExe + job.dExe + 16);
  job.own.pointer(kHeap2 + job.dHeap + 8, kExe + job.dExe + 0x100 + 16);
  std::vector<Window> guess = guessed(job);
  CHECK(holds(guess, kHeap2 + job.dHeap, 48));
  CHECK_FALSE(holds(guess, kExe + job.dExe, 1848));
  // The executable's data takes the nearest region moved by pointers: the heap's displacement,
  // widened as the heap.
  CHECK(holds(guess, kExe + job.dHeap, 1848));
  CHECK(holds(guess, kExe + job.dHeap - PeerLayout::kDrift, 16));
  CHECK(holds(guess, kExe + job.dHeap + 1848 + PeerLayout::kDrift - 16, 16));
}

TEST_CASE("PeerLayout: words count once per place they point to, and never when null") {
  // Two heap words point to the same place: one vote, which loses the tie to a lower
  // displacement another place shows.
  Job job(0x1000000, 0x2345000, 0x300000, 3);
  job.peer.pointer(kHeap2 + 8, kExe);
  job.own.pointer(kHeap2 + job.dHeap + 8, kExe + job.dExe);
  job.own.pointer(kHeap2 + job.dHeap + 16, kExe + 0x200 + 0x100000);
  CHECK(holds(guessed(job), kExe + 0x100000, 1848));
  // The process's words are null (its objects drifted away): no vote at all.
  Job nulls(0x1000000, 0x2345000, 0x300000);
  nulls.own.pointer(kHeap2 + nulls.dHeap, 0);
  nulls.own.pointer(kHeap2 + nulls.dHeap + 8, 0);
  CHECK_FALSE(holds(guessed(nulls), kExe + nulls.dExe, 1848));
}

TEST_CASE("PeerLayout: no symbol in common, no guess; nothing read that wraps") {
  Job job(0x1000000, 0x2345000, 0x300000);
  TargetMemory peerMemory(65536);
  job.peer.fill(peerMemory);
  PeerLayout layout(peerMemory, job.walked, 8, false);
  PeerLayout::Guess none = layout.start({{0x10000, 0x20000}});  // far from every region
  CHECK(none.toRead().empty());
  CHECK(none.windows().empty());
  // A symbol that moves the library's data past the top of the address space: nothing to read
  // there, and no guess.
  PeerLayout::Guess wraps = layout.start({{kLib, uint64_t(0) - 512}});
  for (const Window& w : wraps.toRead()) CHECK(w.address + w.size >= w.address);
  wraps.learn();
  for (const Window& w : wraps.windows()) CHECK(w.address + w.size >= w.address);
}

TEST_CASE("PeerLayout: what the process cannot give leaves its regions unmoved") {
  Job job(0x1000000, 0x2345000, 0x300000);
  TargetMemory peerMemory(65536);
  job.peer.fill(peerMemory);
  PeerLayout layout(peerMemory, job.walked, 8, false);
  PeerLayout::Guess guess = layout.start(job.symbols());
  REQUIRE_FALSE(guess.toRead().empty());
  guess.learn();  // nothing was read: no pointer, no region moved
  CHECK(guess.toRead().empty());
  CHECK(guess.windows().empty());  // the library's own data alone is no guess
}
