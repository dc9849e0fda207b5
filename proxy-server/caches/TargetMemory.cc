#include "TargetMemory.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace mqd::server {

const BulkBytes* TargetMemory::holding(uint64_t address, uint64_t* start) const {
  // Windows may overlap (a block asked for beside a smaller window): every window starting
  // within the largest window's size below `address` may hold it.
  auto it = windows_.upper_bound(address);
  while (it != windows_.begin()) {
    --it;
    if (address - it->first >= largestWindow_) break;
    if (address - it->first < it->second.size()) {
      *start = it->first;
      return &it->second;
    }
  }
  return nullptr;
}

bool TargetMemory::read(uint64_t address, uint32_t size, void* out) const {
  // From one window, or from windows that follow each other (a range read in one epoch is
  // asked for in the next as windows of at most a block each). Nothing is written unless the
  // windows hold all of it: `out` may be smaller than a size the DLL got wrong.
  uint64_t start;
  const BulkBytes* first = holding(address, &start);
  if (first == nullptr) return false;
  if (first->size() - (address - start) >= size) {  // the common case: one window
    if (out != nullptr) std::memcpy(out, first->bytes() + (address - start), size);
    return true;
  }
  // Calls each(window, offset, n) for the pieces of the range in order; false if one is
  // missing.
  auto pieces = [this, address, size](auto&& each) {
    uint64_t at = address;
    for (uint64_t left = size, from; left > 0;) {
      const BulkBytes* bytes = holding(at, &from);
      if (bytes == nullptr) return false;
      uint64_t n = std::min<uint64_t>(left, bytes->size() - (at - from));
      each(bytes, at - from, n);
      at += n;
      left -= n;
    }
    return true;
  };
  if (!pieces([](const BulkBytes*, uint64_t, uint64_t) {})) return false;
  if (out == nullptr) return true;
  auto* to = static_cast<kj::byte*>(out);
  return pieces([&to](const BulkBytes* from, uint64_t offset, uint64_t n) {
    std::memcpy(to, from->bytes() + offset, n);
    to += n;
  });
}

bool TargetMemory::failed(uint64_t address, uint32_t size, int* rc) const {
  auto it = failures_.find({address, size});
  if (it == failures_.end()) return false;
  *rc = it->second;
  return true;
}

TargetMemory::Request TargetMemory::requestFor(uint64_t address, uint32_t size) const {
  uint64_t start = address / blockSize_ * blockSize_;
  uint64_t end = address + size;
  uint64_t last = (end + blockSize_ - 1) / blockSize_ * blockSize_;
  if (last < end) last = end;  // wrapped at the top of the address space
  return {start, static_cast<uint32_t>(last - start)};
}

void TargetMemory::store(uint64_t address, kj::Array<kj::byte> bytes) {
  store(address, BulkBytes(kj::mv(bytes)));
}

void TargetMemory::store(uint64_t address, BulkBytes bytes) {
  uint64_t end = address + bytes.size();
  for (auto it = windows_.lower_bound(address);
       it != windows_.end() && it->first < end;) {
    it = it->first + it->second.size() <= end ? windows_.erase(it) : std::next(it);
  }
  largestWindow_ = std::max<uint64_t>(largestWindow_, bytes.size());
  windows_.insert_or_assign(address, kj::mv(bytes));
}

bool TargetMemory::storeAndRead(uint64_t address, kj::Array<kj::byte> bytes, uint64_t needed,
                                uint32_t size, void* out) {
  if (needed < address || needed - address > bytes.size() ||
      size > bytes.size() - (needed - address)) {
    return false;
  }
  std::memcpy(out, bytes.begin() + (needed - address), size);
  store(address, kj::mv(bytes));
  return true;
}

void TargetMemory::storeFailure(uint64_t address, uint32_t size, int rc) {
  failures_[{address, size}] = rc;
}

void TargetMemory::touch(uint64_t address, uint32_t size) {
  if (size == 0) return;
  touched_.add(address, address + size < address ? UINT64_MAX : address + size);
}

void TargetMemory::ReadRanges::add(uint64_t start, uint64_t end) {
  auto near = [](uint64_t lowEnd, uint64_t highStart) {  // within kTouchGap, or overlapping
    return highStart <= lowEnd || highStart - lowEnd <= kTouchGap;
  };
  // Kept ranges are disjoint and sorted: only the one before `start` can reach it from below.
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin() && near(std::prev(it)->second, start)) --it;
  while (it != ranges_.end() && near(end, it->first)) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(start, end);
}

void TargetMemory::ReadRanges::addAll(const ReadRanges& other) {
  for (const auto& [start, end] : other.ranges_) add(start, end);
}

std::vector<TargetMemory::Window> TargetMemory::ReadRanges::windows(uint32_t blockSize) const {
  std::vector<Window> out;
  for (const auto& [first, end] : ranges_) {
    for (uint64_t start = first; start < end;) {  // split at block boundaries
      uint64_t blockEnd = (start / blockSize + 1) * blockSize;
      uint64_t stop = blockEnd != 0 && blockEnd < end ? blockEnd : end;
      out.push_back({start, static_cast<uint32_t>(stop - start)});
      start = stop;
    }
  }
  return out;
}

std::vector<TargetMemory::Window> TargetMemory::currentWindows() const {
  return touched_.windows(blockSize_);
}

std::vector<TargetMemory::Window> TargetMemory::allWindows() const {
  ReadRanges all = allTouched_;
  all.addAll(touched_);
  return all.windows(blockSize_);
}

std::vector<TargetMemory::Window> TargetMemory::keptWindows() const {
  std::vector<Window> out;
  for (const auto& [start, bytes] : windows_) {
    out.push_back({start, static_cast<uint32_t>(bytes.size())});
  }
  return out;
}

std::vector<TargetMemory::Window> TargetMemory::setUpWindows() const {
  return setUp_ ? currentWindows() : setUpRead_;
}

void TargetMemory::newEpoch(bool setUp) {
  previous_ = currentWindows();
  previousSetUp_.clear();
  if (setUp_) {
    previousSetUp_ = keptWindows();
    setUpRead_ = previous_;
  }
  afterSetUp_ = setUp_;
  afterUnguidedSetUp_ = setUp_ && unguided_;
  setUp_ = setUp;
  unguided_ = false;
  misses_ = 0;
  windows_.clear();
  largestWindow_ = 0;
  allTouched_.addAll(touched_);
  touched_.clear();
  failures_.clear();
}

}  // namespace mqd::server
