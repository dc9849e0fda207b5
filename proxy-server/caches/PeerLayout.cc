#include "PeerLayout.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace mqd::server {
namespace {

using Window = TargetMemory::Window;

struct Range {
  uint64_t start;
  uint64_t end;
};

// Sorted, with ranges that touch or overlap joined.
std::vector<Range> joined(std::vector<Window> windows) {
  std::sort(windows.begin(), windows.end(),
            [](const Window& a, const Window& b) { return a.address < b.address; });
  std::vector<Range> out;
  for (const Window& w : windows) {
    uint64_t end = w.address + w.size;
    if (end < w.address) continue;  // wraps: not a window a process has
    if (!out.empty() && w.address <= out.back().end) {
      out.back().end = std::max(out.back().end, end);
    } else {
      out.push_back({w.address, end});
    }
  }
  return out;
}

// Calls gap(from, to) for each run of [at, end) that no range of `have` (joined) covers.
template <typename Gap>
void forEachGap(const std::vector<Range>& have, uint64_t at, uint64_t end, Gap gap) {
  auto it = std::upper_bound(have.begin(), have.end(), at,
                             [](uint64_t a, const Range& r) { return a < r.end; });
  for (; at < end && it != have.end() && it->start < end; ++it) {
    if (it->start > at) gap(at, it->start);
    at = std::max(at, it->end);
  }
  if (at < end) gap(at, end);
}

std::optional<uint64_t> word(const TargetMemory& memory, uint64_t address, int size,
                             bool bigEndian) {
  unsigned char bytes[8];
  if (!memory.read(address, static_cast<uint32_t>(size), bytes)) return std::nullopt;
  uint64_t value = 0;
  for (int i = 0; i < size; ++i) value = value << 8 | bytes[bigEndian ? i : size - 1 - i];
  return value;
}

// The value most votes give (ties: the lowest), if any.
std::optional<uint64_t> elected(const std::map<uint64_t, unsigned>& votes) {
  std::optional<uint64_t> out;
  unsigned best = 0;
  for (const auto& [value, n] : votes) {
    if (n > best) {
      best = n;
      out = value;
    }
  }
  return out;
}

}  // namespace

PeerLayout::PeerLayout(const TargetMemory& peer, const std::vector<Window>& walked,
                       int pointerSize, bool bigEndian)
    : peer_(peer), pointerSize_(pointerSize), bigEndian_(bigEndian) {
  if (pointerSize_ <= 0 || pointerSize_ > 8) return;
  std::vector<Window> sorted = walked;
  std::sort(sorted.begin(), sorted.end(),
            [](const Window& a, const Window& b) { return a.address < b.address; });
  for (const Range& r : joined(sorted)) {
    if (!regions_.empty() && r.start - regions_.back().end < kRegionGap) {
      regions_.back().end = r.end;
    } else {
      regions_.push_back({r.start, r.end, {}, {}});
    }
  }
  for (const Window& w : sorted) {
    size_t i = regionOf(w.address);
    if (i < regions_.size()) regions_[i].windows.push_back(w);
  }
  // The peer's words that point into a region: the same for every process guessed, found once.
  for (size_t i = 0; i < regions_.size(); ++i) {
    for (const Window& w : regions_[i].windows) {
      uint64_t first = (w.address + pointerSize_ - 1) / pointerSize_ * pointerSize_;
      for (uint64_t at = first; at >= w.address && at - w.address + pointerSize_ <= w.size;
           at += pointerSize_) {
        std::optional<uint64_t> value = word(peer_, at, pointerSize_, bigEndian_);
        if (!value) continue;
        size_t to = regionOf(*value);
        if (to != regions_.size() && to != i) regions_[i].pointers.push_back({at, *value, to});
      }
    }
  }
}

size_t PeerLayout::regionOf(uint64_t address) const {
  auto after = std::upper_bound(regions_.begin(), regions_.end(), address,
                                [](uint64_t a, const Region& r) { return a < r.start; });
  if (after == regions_.begin() || address >= std::prev(after)->end) return regions_.size();
  return static_cast<size_t>(std::prev(after) - regions_.begin());
}

PeerLayout::Guess::Guess(const PeerLayout& layout, const std::vector<SymbolPair>& symbols)
    : layout_(&layout),
      shift_(layout.regions_.size()),
      by_(layout.regions_.size(), By::None),
      own_(kPiece) {
  const auto& regions = layout.regions_;
  std::vector<std::map<uint64_t, unsigned>> votes(regions.size());
  for (const SymbolPair& s : symbols) {
    for (size_t i = 0; i < regions.size(); ++i) {
      if (s.peer + TargetMemory::kTouchGap >= regions[i].start &&
          s.peer < regions[i].end + TargetMemory::kTouchGap) {
        ++votes[i][s.own - s.peer];
      }
    }
  }
  std::vector<size_t> moved;
  for (size_t i = 0; i < regions.size(); ++i) {
    shift_[i] = elected(votes[i]);
    if (shift_[i]) {
      by_[i] = By::Symbols;
      moved.push_back(i);
    }
  }
  readMoved(moved);
}

void PeerLayout::Guess::readMoved(const std::vector<size_t>& regions) {
  reading_ = regions;
  toRead_.clear();
  if (round_++ >= kRounds) return;
  // Only the words that can move another region: the peer's pointers into regions not moved
  // yet, each where it is in the process; words closer than kTouchGap are read as one window.
  const int size = layout_->pointerSize_;
  for (size_t i : regions) {
    for (const Pointer& p : layout_->regions_[i].pointers) {
      if (by_[p.to] != By::None) continue;
      uint64_t at = moved(i, p.at);
      if (at + static_cast<uint64_t>(size) < at) continue;  // across the top of the address space
      Window* last = toRead_.empty() ? nullptr : &toRead_.back();
      if (last != nullptr && at >= last->address &&
          at - (last->address + last->size) <= TargetMemory::kTouchGap &&
          at + size - last->address <= kPiece) {
        uint64_t end = std::max<uint64_t>(last->address + last->size, at + size);
        last->size = static_cast<uint32_t>(end - last->address);
      } else {
        toRead_.push_back({at, static_cast<uint32_t>(size)});
      }
    }
  }
}

uint64_t PeerLayout::Guess::moved(size_t region, uint64_t address) const {
  const Region& r = layout_->regions_[region];
  if (by_[region] == By::Pointers) {
    auto above = landmarks_.upper_bound(address);
    if (above != landmarks_.begin() && std::prev(above)->first >= r.start) {
      return address + std::prev(above)->second;
    }
    if (above != landmarks_.end() && above->first < r.end) return address + above->second;
  }
  return address + *shift_[region];
}

void PeerLayout::Guess::learn() {
  const PeerLayout& l = *layout_;
  const int size = l.pointerSize_;
  // Per region not moved yet: displacement -> the peer's addresses pointed at that show it,
  // from words of regions a symbol moved (laid out as the peer's) and of the others (a heap:
  // its objects drift, and a word there is often another object's; only whole pages count).
  using Votes = std::map<uint64_t, std::set<uint64_t>>;
  std::vector<Votes> exact(l.regions_.size()), drifting(l.regions_.size());
  for (size_t i : reading_) {
    for (const Pointer& p : l.regions_[i].pointers) {
      if (by_[p.to] != By::None) continue;
      std::optional<uint64_t> mine = word(own_, moved(i, p.at), size, l.bigEndian_);
      if (!mine || *mine == 0) continue;  // a null pointer shows nothing
      uint64_t delta = *mine - p.value;
      if (by_[i] == By::Symbols) {
        exact[p.to][delta].insert(p.value);
        landmarks_.emplace(p.value, delta);
      } else if (delta % kPage == 0) {
        drifting[p.to][delta].insert(p.value);
      }
    }
  }
  auto elect = [](const Votes& votes) {
    std::map<uint64_t, unsigned> counted;
    for (const auto& [delta, targets] : votes) {
      counted[delta] = static_cast<unsigned>(targets.size());
    }
    return elected(counted);
  };
  std::vector<size_t> moved;
  for (size_t i = 0; i < l.regions_.size(); ++i) {
    if (by_[i] != By::None) continue;
    shift_[i] = elect(exact[i]);
    if (!shift_[i]) shift_[i] = elect(drifting[i]);
    if (shift_[i]) {
      by_[i] = By::Pointers;
      moved.push_back(i);
    }
  }
  readMoved(moved);
}

std::vector<Window> PeerLayout::Guess::movedBySymbols() const {
  std::vector<Window> out;
  for (size_t i = 0; i < layout_->regions_.size(); ++i) {
    if (by_[i] != By::Symbols) continue;
    for (const Window& w : layout_->regions_[i].windows) {
      Window there{w.address + *shift_[i], w.size};
      if (there.address + there.size >= there.address) out.push_back(there);
    }
  }
  return out;
}

std::string PeerLayout::Guess::summary() const {
  size_t symbols = 0, pointers = 0;
  for (By b : by_) {
    symbols += b == By::Symbols;
    pointers += b == By::Pointers;
  }
  return std::to_string(by_.size()) + " regions of the peer's: " + std::to_string(symbols) +
         " moved by symbols, " + std::to_string(pointers) + " by pointers, " +
         std::to_string(by_.size() - symbols - pointers) + " by neither";
}

std::vector<Window> PeerLayout::Guess::windows() const {
  const PeerLayout& l = *layout_;
  std::vector<std::optional<uint64_t>> shift = shift_;
  std::vector<By> by = by_;
  for (size_t i = 0; i < l.regions_.size(); ++i) {
    if (by_[i] != By::None) continue;
    uint64_t nearest = std::numeric_limits<uint64_t>::max();
    for (size_t j = 0; j < l.regions_.size(); ++j) {
      if (by_[j] != By::Pointers) continue;
      uint64_t gap = j < i ? l.regions_[i].start - l.regions_[j].end
                           : l.regions_[j].start - l.regions_[i].end;
      if (gap < nearest) {
        nearest = gap;
        shift[i] = shift_[j];
        by[i] = By::Pointers;
      }
    }
  }
  bool any = false;
  for (size_t i = 0; i < l.regions_.size(); ++i) any = any || by[i] == By::Pointers;
  std::vector<Window> out;
  if (!any) return out;  // only what the anchors read: no guess worth naming

  uint64_t total = 0;
  auto add = [&out, &total](uint64_t at, uint64_t n) {
    if (total >= kMaxGuessBytes || at + n < at || n == 0) return;
    n = std::min(n, kMaxGuessBytes - total);
    out.push_back({at, static_cast<uint32_t>(n)});
    total += n;
  };
  // The peer's windows, moved, first (the likeliest to be read, should the bound cut); then
  // each region moved by pointers, widened by kDrift on both sides.
  std::vector<Window> widened;
  for (size_t i = 0; i < l.regions_.size(); ++i) {
    if (by[i] == By::None) continue;
    for (const Window& w : l.regions_[i].windows) {
      add(by_[i] == By::None ? w.address + *shift[i] : moved(i, w.address), w.size);
    }
    if (by[i] != By::Pointers) continue;
    uint64_t start = l.regions_[i].start + *shift[i];
    uint64_t end = l.regions_[i].end + *shift[i];
    if (end < start) continue;  // moved across the top of the address space
    start = start > kDrift ? start - kDrift : 0;
    end = end + kDrift < end ? std::numeric_limits<uint64_t>::max() : end + kDrift;
    for (uint64_t at = start; at < end;) {  // windows of at most 4 GiB
      uint64_t n = std::min<uint64_t>(end - at, std::numeric_limits<uint32_t>::max());
      widened.push_back({at, static_cast<uint32_t>(n)});
      at += n;
    }
  }
  // The widened regions name each byte once: only what the peer's windows left.
  const std::vector<Range> named = joined(out);
  auto addUnnamed = [&add, &named](uint64_t at, uint64_t end) {
    forEachGap(named, at, end, [&add](uint64_t from, uint64_t to) { add(from, to - from); });
  };
  // In pieces; near a run's ends, where the mapping may end (the heap's top), a page each.
  for (const Range& r : joined(std::move(widened))) {
    for (uint64_t at = r.start; at < r.end;) {
      bool nearEnd = at - r.start < kDrift || r.end - at <= kDrift;
      uint64_t piece = nearEnd ? kPage : kPiece;
      uint64_t pieceEnd = (at / piece + 1) * piece;
      if (pieceEnd == 0 || pieceEnd > r.end) pieceEnd = r.end;
      if (!nearEnd && r.end - pieceEnd < kDrift) pieceEnd = r.end - kDrift;
      addUnnamed(at, pieceEnd);
      at = pieceEnd;
    }
  }
  return out;
}

PeerLayout::Coverage PeerLayout::coverage(const std::vector<Window>& named,
                                          const std::vector<Window>& read) {
  Coverage out;
  std::vector<Range> have = joined(named);
  for (const Range& r : have) out.named += r.end - r.start;
  for (const Range& r : joined(read)) {
    uint64_t missed = 0;
    forEachGap(have, r.start, r.end, [&out, &missed](uint64_t from, uint64_t to) {
      ++out.missedRanges;
      missed += to - from;
    });
    out.read += r.end - r.start;
    out.readNamed += r.end - r.start - missed;
  }
  return out;
}

}  // namespace mqd::server
