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

template <typename Field>
kj::Maybe<EntryPoint> find(kj::StringPtr wanted, Field field) {
  for (size_t i = 0; i < kEntryPointCount; ++i) {
    if (wanted == kInfo[i].*field) return static_cast<EntryPoint>(i);
  }
  return nullptr;
}

}  // namespace

const EntryPointInfo& entryPointInfo(EntryPoint entryPoint) {
  return kInfo[static_cast<size_t>(entryPoint)];
}

kj::Maybe<EntryPoint> entryPointNamed(kj::StringPtr name) {
  return find(name, &EntryPointInfo::name);
}

kj::Maybe<EntryPoint> entryPointOfMethod(kj::StringPtr method) {
  return find(method, &EntryPointInfo::method);
}

}  // namespace mqd
