#include "TargetModel.h"

#include <cstring>
#include <stdexcept>

namespace mqd::harness {

TargetModel::TargetModel(int pointerSize, bool bigEndian, uint64_t heapBase)
    : pointerSize_(pointerSize),
      bigEndian_(bigEndian),
      next_(heapBase != 0 ? heapBase : pointerSize == 8 ? 0x00007f5a10000000ull : 0x08100000ull) {
  if (pointerSize != 4 && pointerSize != 8) throw std::invalid_argument("pointer size 4 or 8");
}

uint64_t TargetModel::allocate(size_t size, size_t align) {
  // Like a heap: one contiguous mapping that grows. What lies outside it (address 0, the space
  // below the first allocation) is unmapped and fails to read.
  return grow(&next_, &heapStart_, size, align);
}

uint64_t TargetModel::allocateData(size_t size, size_t align) {
  return nextData_ == 0 ? allocate(size, align) : grow(&nextData_, &dataStart_, size, align);
}

uint64_t TargetModel::grow(uint64_t* next, std::optional<uint64_t>* start, size_t size,
                           size_t align) {
  size = size == 0 ? 1 : size;
  uint64_t at = (*next + align - 1) / align * align;
  if (!*start) {
    *start = at;
    regions_[at] = Region{at, std::vector<unsigned char>(size, 0)};
  } else {
    Region& mapping = regions_.at(**start);
    mapping.bytes.resize(at + size - mapping.start, 0);
  }
  *next = at + size;
  return at;
}

const TargetModel::Region* TargetModel::regionFor(uint64_t address, size_t size) const {
  auto it = regions_.upper_bound(address);
  if (it == regions_.begin()) return nullptr;
  --it;
  const Region& r = it->second;
  if (address < r.start || address - r.start + size > r.bytes.size()) return nullptr;
  return &r;
}

TargetModel::Region* TargetModel::regionFor(uint64_t address, size_t size) {
  return const_cast<Region*>(static_cast<const TargetModel*>(this)->regionFor(address, size));
}

void TargetModel::writeBytes(uint64_t address, const void* data, size_t size) {
  Region* r = regionFor(address, size);
  if (r == nullptr) throw std::out_of_range("write to unmapped target memory");
  std::memcpy(r->bytes.data() + (address - r->start), data, size);
}

void TargetModel::writeInt(uint64_t address, int size, int64_t value) {
  unsigned char bytes[8];
  auto u = static_cast<uint64_t>(value);
  for (int i = 0; i < size; ++i) {
    unsigned char b = static_cast<unsigned char>(u >> (8 * i));
    bytes[bigEndian_ ? size - 1 - i : i] = b;
  }
  writeBytes(address, bytes, static_cast<size_t>(size));
}

bool TargetModel::read(uint64_t address, size_t size, void* out) const {
  const Region* r = regionFor(address, size);
  if (r == nullptr) return false;
  std::memcpy(out, r->bytes.data() + (address - r->start), size);
  return true;
}

int64_t TargetModel::readInt(uint64_t address, int size) const {
  unsigned char bytes[8];
  if (!read(address, static_cast<size_t>(size), bytes)) throw std::out_of_range("unmapped");
  uint64_t u = 0;
  for (int i = 0; i < size; ++i) {
    u |= static_cast<uint64_t>(bytes[bigEndian_ ? size - 1 - i : i]) << (8 * i);
  }
  if (size < 8 && (u >> (8 * size - 1)) & 1) u |= ~0ull << (8 * size);  // sign-extend
  return static_cast<int64_t>(u);
}

const uint64_t* TargetModel::symbol(const std::string& name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : &it->second;
}

const uint64_t* TargetModel::function(const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

const TargetModel::Type* TargetModel::type(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : &it->second;
}

std::vector<int> TargetModel::typeSizes() const {
  return {2, 4, longSize(), 8, pointerSize_, 1, pointerSize_};
}

void TargetModel::targetToHost(const void* in, void* out, int size) const {
  constexpr bool hostBig = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  if (size <= 0) return;
  if (hostBig == bigEndian_) {
    std::memmove(dst, src, static_cast<size_t>(size));
    return;
  }
  std::vector<unsigned char> tmp(src, src + size);
  for (int i = 0; i < size; ++i) dst[i] = tmp[static_cast<size_t>(size - 1 - i)];
}

}  // namespace mqd::harness
