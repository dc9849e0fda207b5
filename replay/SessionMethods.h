// SessionMethods: the Session methods of mqd.capnp by ordinal, as the recording names them
// (record::SessionCall.method), for the replay. checkSessionMethods() fails loudly when the
// schema no longer matches this list.
#pragma once

#include <cstdint>

namespace mqd::client {

enum SessionMethod : uint16_t {
  kSetupBasicCallbacks = 0,
  kDllErrorString = 1,
  kSetupImage = 2,
  kImageHasQueues = 3,
  kDestroyImageInfo = 4,
  kSetupProcess = 5,
  kProcessHasQueues = 6,
  kDestroyProcessInfo = 7,
  kUpdateCommunicatorList = 8,
  kSetupCommunicatorIterator = 9,
  kGetCommunicator = 10,
  kGetCommGroup = 11,
  kNextCommunicator = 12,
  kSetupOperationIterator = 13,
  kNextOperation = 14,
  kSetupJob = 15,
  kDestroyJobInfo = 16,
  kSetupNewProcessIterator = 17,
  kNextNewProcess = 18,
  kSetProcessIdentity = 19,
  kGetCommCollState = 20,
  kReposition = 21,
};

// Throws (KJ_REQUIRE) if mqd.capnp's Session does not have these methods at these ordinals.
void checkSessionMethods();

// The mqs_* entry point a Session method serves ("mqs_next_operation"), or its schema name.
const char* entryPointOf(uint16_t method);

}  // namespace mqd::client
