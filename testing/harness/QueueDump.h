// QueueDump: one full message-queue dump of a process, as a debugger's refresh makes it, in a
// canonical text form that a native load and a proxied load can be compared by.
//
// The dump is mqs_update_communicator_list, then the queue iteration (common/QueueIteration.h):
// for every communicator get_communicator, get_comm_group and the three operation queues. It
// stops at the first proxy error (mqd_proxy.h: "the proxy failed, clearly"), or at a DLL error
// where a debugger could not go on (update, iterator set-up, get_communicator,
// next_communicator), and says which call that was and what it returned. Other DLL answers are part of the text, compared like the rest.
#pragma once

#include <string>

#include "MqsLibrary.h"
#include "mqs_interface.h"

namespace mqd::harness {

struct QueueDump {
  std::string text;       // canonical rendering of everything the DLL answered
  int failedRc = 0;       // mqs_ok when the dump ran to its end
  std::string failedCall; // the entry point that returned failedRc
  int calls = 0;          // mqs_* calls made
  int operations = 0;

  bool complete() const { return failedRc == 0; }
};

// Dumps `process` through `dll`. With `update` false there is no new epoch: the dump starts at
// setup_communicator_iterator.
QueueDump dumpQueues(MqsLibrary& dll, mqs_process* process, bool update = true);

}  // namespace mqd::harness
