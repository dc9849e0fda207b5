// PeerLayout: what a process's first mqs_update_communicator_list will read, guessed from a
// peer: another process of the session whose first update has walked.
//
// The ranks of a job run one program with the same libraries, so the DLL reads the same
// objects in each, at addresses that differ by where address-space randomisation put each
// mapping, plus small drifts inside the heap. With nothing learned of a process (a job never
// seen before), each block its first update reads is a round trip to the debugger, about 16
// for an Open MPI rank: at 20 ms, 64 ranks cost 20 s in misses alone. A guess, read by the
// shim with the process's update (or with another's, as a refresh ahead), saves them.
//
// The rule that keeps it safe: a guess only names memory for the shim to read from the
// process's own debugger, inside the call that starts the epoch it serves (the process's own
// update, or a refresh ahead that is then proved current at that update: docs/round-trips.md,
// "The whole job"); the bytes read to make the guess (`anchors`) serve no DLL read. Every byte
// the DLL is given is still the debugger's answer for that process in that epoch; a wrong
// guess costs bytes and the misses it did not save, never an answer.
//
// How it guesses, in rounds (each one round trip for every process guessed at once):
//   * A region is a run of the peer's update windows less than kRegionGap apart.
//   * A symbol both processes' images resolved, within kTouchGap of a region, moves that
//     region by the difference of its two addresses (a library's data: laid out alike, moved
//     as a whole). Read first, from the process: the words of those regions that, in the
//     peer, point into a region not yet moved (nothing else of it serves the guess).
//   * Each such word gives the region it points into a displacement: the process's word
//     (not null) minus the peer's. A region takes the displacement most of its symbols give,
//     else most pointers read where a symbol moved, else most pointers read elsewhere whose
//     displacement is whole pages (kPage): where objects drift (a heap), a word at the
//     peer's place is often another object's, but what moves a mapping is whole pages.
//     Pointers count once per place they point to; ties go to the lowest. The words of the
//     regions moved so are read in the next round (the heap's first objects point to the
//     executable's data), up to kRounds rounds: a few KiB of each process in all, however
//     large its heap.
//   * Inside a region moved by pointers, objects drift: a byte there is taken to move as the
//     nearest object below it that a pointer read where a symbol moved points to (a
//     landmark), else as the region.
//   * A region still not moved takes the displacement of the nearest moved by pointers (the
//     heap moves as a whole, its objects only drift).
//   * The guess is the peer's windows in every moved region, moved, and each region moved by
//     pointers widened by kDrift on both sides as well, in pieces of at most kPiece bytes, and
//     of a page within kDrift of either end (a piece the debugger cannot read, past the heap's
//     top, loses no more); each byte once, the peer's windows first; at most kMaxGuessBytes
//     in all. A walk reads about a fifth of it (the debug log's "its first update read" lines
//     measure each guess).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "TargetMemory.h"

namespace mqd::server {

class PeerLayout {
 public:
  using Window = TargetMemory::Window;
  // Regions of the peer's reads closer than this are one region.
  static constexpr uint64_t kRegionGap = 256 * 1024;
  // How far the process's objects may sit from the peer's, displaced: observed up to 50 KiB
  // between two ranks of an Open MPI job's heaps.
  static constexpr uint64_t kDrift = 64 * 1024;
  static constexpr uint32_t kPiece = 16 * 1024;
  static constexpr uint64_t kMaxGuessBytes = 8u << 20;
  static constexpr int kRounds = 3;
  // What address-space randomisation moves a mapping by a multiple of.
  static constexpr uint64_t kPage = 4096;

  // The address a symbol resolved to in the peer and in the process.
  struct SymbolPair {
    uint64_t peer;
    uint64_t own;
  };

  // `peer` holds the bytes of `walked`, what the peer's first update epoch read.
  PeerLayout(const TargetMemory& peer, const std::vector<Window>& walked, int pointerSize,
             bool bigEndian);

  // One process's guess.
  class Guess {
   public:
    // What to read of the process in this round (the words that can move another region);
    // empty: no more rounds.
    const std::vector<Window>& toRead() const { return toRead_; }
    // Where the process's bytes of toRead() go (what could be read of them) before learn().
    TargetMemory& own() { return own_; }
    // Ends the round: the displacements its bytes show, and what the next round reads.
    void learn();
    // The windows to read ahead for the process's first update (empty: no guess).
    std::vector<Window> windows() const;
    // The peer's windows in the regions the symbols moved, moved (a set-up's reads: the
    // libraries' data).
    std::vector<Window> movedBySymbols() const;
    // For the log: how each region was moved ("4 regions: 1 by symbols, 2 by pointers, ...").
    std::string summary() const;

   private:
    friend class PeerLayout;
    enum class By { None, Symbols, Pointers };
    Guess(const PeerLayout& layout, const std::vector<SymbolPair>& symbols);
    void readMoved(const std::vector<size_t>& regions);
    // Where the byte at the peer's `address`, in region `region`, is in the process.
    uint64_t moved(size_t region, uint64_t address) const;

    const PeerLayout* layout_;
    std::vector<std::optional<uint64_t>> shift_;  // per region, modulo 2^64
    std::vector<By> by_;
    std::vector<size_t> reading_;  // the regions toRead() covers
    // Objects found exactly: the peer's address a pointer read where a symbol moved points to
    // -> the displacement the process's pointer shows for that object.
    std::map<uint64_t, uint64_t> landmarks_;
    std::vector<Window> toRead_;
    TargetMemory own_;
    int round_ = 0;
  };
  Guess start(const std::vector<SymbolPair>& symbols) const { return Guess(*this, symbols); }

  // How well windows named ahead served what the DLL then read (for the log).
  struct Coverage {
    uint64_t named = 0;         // bytes named
    uint64_t read = 0;          // bytes read
    uint64_t readNamed = 0;     // bytes read that were named
    uint64_t missedRanges = 0;  // runs of bytes read that were not named
  };
  static Coverage coverage(const std::vector<Window>& named, const std::vector<Window>& read);

 private:
  // A word of the peer's that points into another region.
  struct Pointer {
    uint64_t at;
    uint64_t value;
    size_t to;  // the region it points into
  };
  struct Region {
    uint64_t start;
    uint64_t end;
    std::vector<Window> windows;  // the peer's, in address order
    std::vector<Pointer> pointers;  // its words that point into another region, in order
  };
  // The region holding `address`, or regions_.size().
  size_t regionOf(uint64_t address) const;

  const TargetMemory& peer_;
  int pointerSize_;
  bool bigEndian_;
  std::vector<Region> regions_;
};

}  // namespace mqd::server
