#include "TargetMemory.h"

#include <cstring>

namespace mqd::server {
namespace {
// Windows may overlap (a two-block read next to a one-block one); a read looks back this far.
constexpr int kLookBehind = 4;
}  // namespace

bool TargetMemory::read(uint64_t address, uint32_t size, void* out) const {
  auto it = windows_.upper_bound(address);
  for (int i = 0; i < kLookBehind && it != windows_.begin(); ++i) {
    --it;
    uint64_t start = it->first;
    const auto& bytes = it->second;
    if (address >= start && address - start + size <= bytes.size()) {
      std::memcpy(out, bytes.begin() + (address - start), size);
      return true;
    }
  }
  return false;
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
  windows_[address] = kj::mv(bytes);
}

void TargetMemory::storeFailure(uint64_t address, uint32_t size, int rc) {
  failures_[{address, size}] = rc;
}

std::vector<TargetMemory::Window> TargetMemory::currentWindows() const {
  std::vector<Window> out;
  for (const auto& [start, bytes] : windows_) {
    out.push_back({start, static_cast<uint32_t>(bytes.size())});
  }
  return out;
}

void TargetMemory::newEpoch() {
  previous_ = currentWindows();
  windows_.clear();
  failures_.clear();
}

}  // namespace mqd::server
