// TargetModel: a fake target process for the debugger harness.
//
// Memory with the target's pointer size and byte order (one contiguous heap, like a real
// process's), named symbols and functions, and named structure types with field offsets, so
// that a debugger harness can answer every MQD callback the way a real debugger would for a
// real process. Reads outside the heap fail, which is how tests make fetch_data fail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mqd::harness {

class TargetModel {
 public:
  struct Type {
    std::string name;
    int size = 0;
    std::map<std::string, int> fields;  // field -> byte offset
  };

  // pointerSize 4 or 8. Addresses start high enough on 64-bit targets (above 4 GiB) that a
  // 32-bit debugger cannot represent them, unless `heapBase` (non-zero) says where the heap
  // (symbols, structures) starts.
  TargetModel(int pointerSize, bool bigEndian, uint64_t heapBase = 0);

  int pointerSize() const { return pointerSize_; }
  int longSize() const { return pointerSize_; }  // ILP32 or LP64
  bool bigEndian() const { return bigEndian_; }

  // Memory. allocate() returns the target address of a fresh zeroed block; writeBytes and the
  // rest may change the target afterwards (as a running target does between two stops).
  uint64_t allocate(size_t size, size_t align = 8);
  // The same in the program's data (its variables, where symbols point): in the heap too,
  // unless placeData gave the data a mapping of its own at `base` (as a real process has,
  // away from its heap, each mapping moved by address-space randomisation).
  uint64_t allocateData(size_t size, size_t align = 8);
  void placeData(uint64_t base) { nextData_ = base; }
  void writeInt(uint64_t address, int size, int64_t value);  // target byte order
  void writePointer(uint64_t address, uint64_t value) { writeInt(address, pointerSize_, static_cast<int64_t>(value)); }
  void writeBytes(uint64_t address, const void* data, size_t size);
  // Copies target bytes; false (and nothing copied) if any byte is unmapped.
  bool read(uint64_t address, size_t size, void* out) const;
  int64_t readInt(uint64_t address, int size) const;  // throws if unmapped

  // Symbols, functions and types the debugger's look-ups answer from.
  void defineSymbol(const std::string& name, uint64_t address) { symbols_[name] = address; }
  void defineFunction(const std::string& name, uint64_t address) { functions_[name] = address; }
  void defineType(Type type) { types_[type.name] = std::move(type); }
  void removeSymbol(const std::string& name) { symbols_.erase(name); }
  void removeType(const std::string& name) { types_.erase(name); }
  const uint64_t* symbol(const std::string& name) const;
  const uint64_t* function(const std::string& name) const;
  const Type* type(const std::string& name) const;

  // Basic type sizes in mqs_target_type_sizes order: short, int, long, long long, pointer,
  // bool, size_t.
  std::vector<int> typeSizes() const;

  // Converts `size` bytes of target representation to this host's.
  void targetToHost(const void* in, void* out, int size) const;

 private:
  struct Region {
    uint64_t start;
    std::vector<unsigned char> bytes;
  };
  const Region* regionFor(uint64_t address, size_t size) const;
  Region* regionFor(uint64_t address, size_t size);

  int pointerSize_;
  bool bigEndian_;
  uint64_t next_;
  uint64_t nextData_ = 0;  // 0: the data is in the heap
  // Grows the mapping that ends at *next (made at *next when there is none), for allocate
  // and allocateData.
  uint64_t grow(uint64_t* next, std::optional<uint64_t>* start, size_t size, size_t align);
  std::optional<uint64_t> heapStart_, dataStart_;
  std::map<uint64_t, Region> regions_;
  std::map<std::string, uint64_t> symbols_;
  std::map<std::string, uint64_t> functions_;
  std::map<std::string, Type> types_;
};

}  // namespace mqd::harness
