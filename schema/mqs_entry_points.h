/*
 * mqs_entry_points.h: every MQD entry point, once. Everything that lists the entry points is
 * made from this table: the shim's exports (shim/Entrypoints.cc) and its version script
 * (shim/libmqdproxy.map.in, preprocessed at build time), the client's methods
 * (proxy-client/MqsClient.h), their names and what the shim answers for a missing one
 * (common/EntryPoints.h), the server's table of the vendor DLL's entry points
 * (proxy-server/worker/VendorDll.h), the replay's map from a recorded Session method to the
 * entry point it forwards (replay/WireMethods.cc), the test harness's view of a loaded DLL
 * (testing/harness/MqsLibrary.h) and the exports test (tests/integration/check-exports.sh,
 * which reads the generated version script).
 *
 * MQS_ENTRY_POINTS(X) calls X once per entry point, in the order of mqs_interface.h:
 *
 *   X(result, name, method, parameters, arguments, absent)
 *
 *   result      its C result type
 *   name        its name without the "mqs_" prefix: the entry point is mqs_##name
 *   method      the client's method for it (MqsClient::method), and the Session method that
 *               forwards it (mqd.capnp) where there is one: every entry point but
 *               version_string, version_compatibility and dll_taddr_width, which the shim
 *               answers itself
 *   parameters  its parameter list, in parentheses
 *   arguments   the same names as an argument list, in parentheses
 *   absent      what the shim answers when the vendor DLL does not export it; this is the
 *               table in docs/transparency.md, "Optional entry points":
 *     REQUIRED        every MQD DLL exports it: the server refuses to load a DLL without it
 *     SHIM_ANSWERS    the shim's own answer, whatever the DLL has (mqs_dll_taddr_width: the
 *                     shim's sizeof(mqs_taddr_t), the ABI the debugger talks to)
 *     NO_ENTRY_POINT  MQD_PROXY_ERR_NO_ENTRY_POINT, naming the entry point and the DLL;
 *                     outputs untouched (mqs_get_comm_group and the level-3 calls)
 *     NO_INFORMATION  mqs_no_information, outputs untouched, like a DLL that cannot tell
 *                     (padb's mqs_get_comm_coll_state)
 *
 * The file defines macros only, and includes nothing, so that the version script can be made
 * from it by the C preprocessor: include mqs_interface.h before using the types.
 */
#ifndef MQS_ENTRY_POINTS_H
#define MQS_ENTRY_POINTS_H

/* clang-format off */
#define MQS_ENTRY_POINTS(X)                                                                   \
  X(void, setup_basic_callbacks, setupBasicCallbacks,                                         \
    (const mqs_basic_callbacks *callbacks), (callbacks), REQUIRED)                            \
  X(char *, version_string, versionString, (void), (), REQUIRED)                              \
  X(int, version_compatibility, versionCompatibility, (void), (), REQUIRED)                   \
  X(int, dll_taddr_width, dllTaddrWidth, (void), (), SHIM_ANSWERS)                            \
  X(char *, dll_error_string, dllErrorString, (int code), (code), REQUIRED)                   \
  X(int, setup_image, setupImage,                                                             \
    (mqs_image *image, const mqs_image_callbacks *callbacks), (image, callbacks), REQUIRED)    \
  X(int, image_has_queues, imageHasQueues, (mqs_image *image, char **message),                \
    (image, message), REQUIRED)                                                               \
  X(void, destroy_image_info, destroyImageInfo, (mqs_image_info *info), (info), REQUIRED)     \
  X(int, setup_process, setupProcess,                                                         \
    (mqs_process *process, const mqs_process_callbacks *callbacks), (process, callbacks),     \
    REQUIRED)                                                                                 \
  X(void, destroy_process_info, destroyProcessInfo, (mqs_process_info *info), (info),         \
    REQUIRED)                                                                                 \
  X(int, process_has_queues, processHasQueues, (mqs_process *process, char **message),        \
    (process, message), REQUIRED)                                                             \
  X(int, update_communicator_list, updateCommunicatorList, (mqs_process *process),            \
    (process), REQUIRED)                                                                      \
  X(int, setup_communicator_iterator, setupCommunicatorIterator, (mqs_process *process),      \
    (process), REQUIRED)                                                                      \
  X(int, get_communicator, getCommunicator,                                                   \
    (mqs_process *process, mqs_communicator *communicator), (process, communicator),          \
    REQUIRED)                                                                                 \
  X(int, next_communicator, nextCommunicator, (mqs_process *process), (process), REQUIRED)    \
  X(int, get_comm_group, getCommGroup, (mqs_process *process, int *ranks), (process, ranks),  \
    NO_ENTRY_POINT)                                                                           \
  X(int, setup_operation_iterator, setupOperationIterator,                                    \
    (mqs_process *process, int op_class), (process, op_class), REQUIRED)                      \
  X(int, next_operation, nextOperation,                                                       \
    (mqs_process *process, mqs_pending_operation *operation), (process, operation), REQUIRED) \
  X(int, setup_job, setupJob, (mqs_job *job, const mqs_job_callbacks *callbacks),             \
    (job, callbacks), NO_ENTRY_POINT)                                                         \
  X(int, destroy_job_info, destroyJobInfo, (mqs_job_info *info), (info), NO_ENTRY_POINT)      \
  X(int, setup_new_process_iterator, setupNewProcessIterator, (mqs_process *process),         \
    (process), NO_ENTRY_POINT)                                                                \
  X(int, next_new_process, nextNewProcess,                                                    \
    (mqs_process *process, mqs_process_location *location), (process, location),              \
    NO_ENTRY_POINT)                                                                           \
  X(int, set_process_identity, setProcessIdentity, (mqs_process *process, int identity),      \
    (process, identity), NO_ENTRY_POINT)                                                      \
  X(int, get_comm_coll_state, getCommCollState,                                               \
    (mqs_process *process, int collective, int *sequence, int *active),                       \
    (process, collective, sequence, active), NO_INFORMATION)
/* clang-format on */

#endif /* MQS_ENTRY_POINTS_H */
