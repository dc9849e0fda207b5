#include "SessionMethods.h"

#include <capnp/schema.h>
#include <kj/debug.h>

#include "EntryPoints.h"
#include "mqd.capnp.h"

namespace mqd::client {
namespace {

// The Session methods by ordinal. The entry point each serves comes from
// schema/mqs_entry_points.h (EntryPoints.h), whose `method` column names them.
constexpr const char* kMethods[] = {
    "setupBasicCallbacks",
    "dllErrorString",
    "setupImage",
    "imageHasQueues",
    "destroyImageInfo",
    "setupProcess",
    "processHasQueues",
    "destroyProcessInfo",
    "updateCommunicatorList",
    "setupCommunicatorIterator",
    "getCommunicator",
    "getCommGroup",
    "nextCommunicator",
    "setupOperationIterator",
    "nextOperation",
    "setupJob",
    "destroyJobInfo",
    "setupNewProcessIterator",
    "nextNewProcess",
    "setProcessIdentity",
    "getCommCollState",
    "reposition",
};
constexpr uint16_t kCount = sizeof kMethods / sizeof kMethods[0];

}  // namespace

void checkSessionMethods() {
  auto methods = capnp::Schema::from<wire::Session>().getMethods();
  KJ_REQUIRE(methods.size() == kCount, "mqd.capnp's Session changed; update SessionMethods.h");
  for (uint16_t i = 0; i < kCount; ++i) {
    KJ_REQUIRE(methods[i].getProto().getName() == kMethods[i],
               "mqd.capnp's Session changed; update SessionMethods.h", i);
  }
}

const char* entryPointOf(uint16_t method) {
  if (method >= kCount) return "an unknown Session method";
  KJ_IF_MAYBE(entryPoint, entryPointOfMethod(kMethods[method])) return nameOf(*entryPoint);
  return method == kReposition ? "Session.reposition" : "an unknown Session method";
}

}  // namespace mqd::client
