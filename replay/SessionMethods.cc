#include "SessionMethods.h"

#include <capnp/schema.h>
#include <kj/debug.h>

#include "mqd.capnp.h"

namespace mqd::client {
namespace {

struct Names {
  const char* method;
  const char* entryPoint;
};

constexpr Names kNames[] = {
    {"setupBasicCallbacks", "mqs_setup_basic_callbacks"},
    {"dllErrorString", "mqs_dll_error_string"},
    {"setupImage", "mqs_setup_image"},
    {"imageHasQueues", "mqs_image_has_queues"},
    {"destroyImageInfo", "mqs_destroy_image_info"},
    {"setupProcess", "mqs_setup_process"},
    {"processHasQueues", "mqs_process_has_queues"},
    {"destroyProcessInfo", "mqs_destroy_process_info"},
    {"updateCommunicatorList", "mqs_update_communicator_list"},
    {"setupCommunicatorIterator", "mqs_setup_communicator_iterator"},
    {"getCommunicator", "mqs_get_communicator"},
    {"getCommGroup", "mqs_get_comm_group"},
    {"nextCommunicator", "mqs_next_communicator"},
    {"setupOperationIterator", "mqs_setup_operation_iterator"},
    {"nextOperation", "mqs_next_operation"},
    {"setupJob", "mqs_setup_job"},
    {"destroyJobInfo", "mqs_destroy_job_info"},
    {"setupNewProcessIterator", "mqs_setup_new_process_iterator"},
    {"nextNewProcess", "mqs_next_new_process"},
    {"setProcessIdentity", "mqs_set_process_identity"},
    {"getCommCollState", "mqs_get_comm_coll_state"},
    {"reposition", "Session.reposition"},
};
constexpr uint16_t kCount = sizeof kNames / sizeof kNames[0];

}  // namespace

void checkSessionMethods() {
  auto methods = capnp::Schema::from<wire::Session>().getMethods();
  KJ_REQUIRE(methods.size() == kCount, "mqd.capnp's Session changed; update SessionMethods.h");
  for (uint16_t i = 0; i < kCount; ++i) {
    KJ_REQUIRE(methods[i].getProto().getName() == kNames[i].method,
               "mqd.capnp's Session changed; update SessionMethods.h", i);
  }
}

const char* entryPointOf(uint16_t method) {
  return method < kCount ? kNames[method].entryPoint : "an unknown Session method";
}

}  // namespace mqd::client
