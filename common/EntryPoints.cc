#include "EntryPoints.h"

namespace mqd {
namespace {

constexpr EntryPointInfo kInfo[] = {
#define MQD_INFO(result, name, method, parameters, arguments, absent) \
  {"mqs_" #name, #method, Absent::absent},
    MQS_ENTRY_POINTS(MQD_INFO)
#undef MQD_INFO
};
static_assert(sizeof kInfo / sizeof kInfo[0] == kEntryPointCount, "one entry per entry point");

}  // namespace

const EntryPointInfo& entryPointInfo(EntryPoint entryPoint) {
  return kInfo[static_cast<size_t>(entryPoint)];
}

std::optional<EntryPoint> entryPointOfMethod(kj::StringPtr method) {
  for (size_t i = 0; i < kEntryPointCount; ++i) {
    if (method == kInfo[i].method) return static_cast<EntryPoint>(i);
  }
  return std::nullopt;
}

}  // namespace mqd
