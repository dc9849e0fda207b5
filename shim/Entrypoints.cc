// libmqdproxy.so: the MQD entry points a debugger dlopen()s, forwarded to mqd-proxy-server.
//
// This file is the whole C ABI veneer: each exported function hands its arguments to the one
// MqsClient of this library instance, which never throws. Nothing else is exported (see
// libmqdproxy.map); the client is created on first use and destroyed when the library is
// unloaded.
#include "MqsClient.h"
#include "mqs_interface.h"

#define MQD_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

mqd::client::MqsClient& client() {
  static mqd::client::MqsClient instance;
  return instance;
}

}  // namespace

MQD_EXPORT void mqs_setup_basic_callbacks(const mqs_basic_callbacks* callbacks) {
  client().setupBasicCallbacks(callbacks);
}
MQD_EXPORT char* mqs_version_string(void) { return client().versionString(); }
MQD_EXPORT int mqs_version_compatibility(void) { return client().versionCompatibility(); }
MQD_EXPORT int mqs_dll_taddr_width(void) { return client().dllTaddrWidth(); }
MQD_EXPORT char* mqs_dll_error_string(int code) { return client().dllErrorString(code); }

MQD_EXPORT int mqs_setup_image(mqs_image* image, const mqs_image_callbacks* callbacks) {
  return client().setupImage(image, callbacks);
}
MQD_EXPORT int mqs_image_has_queues(mqs_image* image, char** message) {
  return client().imageHasQueues(image, message);
}
MQD_EXPORT void mqs_destroy_image_info(mqs_image_info* info) { client().destroyImageInfo(info); }

MQD_EXPORT int mqs_setup_process(mqs_process* process, const mqs_process_callbacks* callbacks) {
  return client().setupProcess(process, callbacks);
}
MQD_EXPORT int mqs_process_has_queues(mqs_process* process, char** message) {
  return client().processHasQueues(process, message);
}
MQD_EXPORT void mqs_destroy_process_info(mqs_process_info* info) {
  client().destroyProcessInfo(info);
}

MQD_EXPORT int mqs_update_communicator_list(mqs_process* process) {
  return client().updateCommunicatorList(process);
}
MQD_EXPORT int mqs_setup_communicator_iterator(mqs_process* process) {
  return client().setupCommunicatorIterator(process);
}
MQD_EXPORT int mqs_get_communicator(mqs_process* process, mqs_communicator* communicator) {
  return client().getCommunicator(process, communicator);
}
MQD_EXPORT int mqs_get_comm_group(mqs_process* process, int* ranks) {
  return client().getCommGroup(process, ranks);
}
MQD_EXPORT int mqs_next_communicator(mqs_process* process) {
  return client().nextCommunicator(process);
}
MQD_EXPORT int mqs_setup_operation_iterator(mqs_process* process, int op_class) {
  return client().setupOperationIterator(process, op_class);
}
MQD_EXPORT int mqs_next_operation(mqs_process* process, mqs_pending_operation* operation) {
  return client().nextOperation(process, operation);
}

MQD_EXPORT int mqs_setup_job(mqs_job* job, const mqs_job_callbacks* callbacks) {
  return client().setupJob(job, callbacks);
}
MQD_EXPORT int mqs_destroy_job_info(mqs_job_info* info) { return client().destroyJobInfo(info); }
MQD_EXPORT int mqs_setup_new_process_iterator(mqs_process* process) {
  return client().setupNewProcessIterator(process);
}
MQD_EXPORT int mqs_next_new_process(mqs_process* process, mqs_process_location* location) {
  return client().nextNewProcess(process, location);
}
MQD_EXPORT int mqs_set_process_identity(mqs_process* process, int identity) {
  return client().setProcessIdentity(process, identity);
}
MQD_EXPORT int mqs_get_comm_coll_state(mqs_process* process, int collective, int* sequence,
                                       int* active) {
  return client().getCommCollState(process, collective, sequence, active);
}
