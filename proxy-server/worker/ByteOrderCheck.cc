#include "ByteOrderCheck.h"

#include <cstring>

namespace mqd::server {

namespace {

constexpr const char* kTypedefSizes = "MPIR_debug_typedefs_sizeof";

const char* nameOf(bool bigEndian) { return bigEndian ? "big-endian" : "little-endian"; }

}  // namespace

std::optional<ByteOrder> byteOrderOfTypedefSizes(const unsigned char (&bytes)[8]) {
  static constexpr unsigned char kLittle[8] = {2, 0, 0, 0, 4, 0, 0, 0};
  static constexpr unsigned char kBig[8] = {0, 0, 0, 2, 0, 0, 0, 4};
  if (std::memcmp(bytes, kLittle, sizeof bytes) == 0) return ByteOrder::Little;
  if (std::memcmp(bytes, kBig, sizeof bytes) == 0) return ByteOrder::Big;
  return std::nullopt;
}

std::optional<std::string> byteOrderContradiction(const RemoteImage* image,
                                                  const RemoteProcess& process) {
  if (image == nullptr || process.memory == nullptr) return std::nullopt;
  auto symbol = image->symbols.find(kTypedefSizes);
  if (symbol == image->symbols.end() || !symbol->second.written) return std::nullopt;
  unsigned char bytes[8];
  if (!process.memory->read(symbol->second.address, sizeof bytes, bytes)) return std::nullopt;
  auto order = byteOrderOfTypedefSizes(bytes);
  if (!order) return std::nullopt;
  bool memoryBig = *order == ByteOrder::Big;
  if (memoryBig == process.targetBigEndian) return std::nullopt;
  return std::string("the debugger's target_to_host says this process is ") +
         nameOf(process.targetBigEndian) + ", but its memory is " + nameOf(memoryBig) + " (" +
         kTypedefSizes + " reads {2, 4} only that way): the DLL reads every integer " +
         "byte-reversed, so its queues are wrong or empty. The debugger must swap bytes in " +
         "target_to_host for a target of the other byte order (and only then).";
}

}  // namespace mqd::server
