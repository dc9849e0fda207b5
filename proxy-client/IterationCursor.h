// IterationCursor: where an iteration over one process's communicators and their queues
// stands, in calls made since mqs_setup_communicator_iterator: enough for the server to bring a
// fresh DLL to the same place (wire WalkCursor). The one cursor type of the shim: the
// debugger's position (SessionSetUp) and a recorded walk's (RecordedWalk) both move by its
// rules.
#pragma once

#include <cstdint>

#include "mqd.capnp.h"

namespace mqd::client {

struct IterationCursor {
  bool setUp = false;        // mqs_setup_communicator_iterator was called
  uint32_t communicator = 0; // mqs_next_communicator calls since
  int opClass = -1;          // last mqs_setup_operation_iterator on this communicator
  uint32_t operations = 0;   // mqs_next_operation calls since

  void setupCommunicatorIterator() { *this = IterationCursor{true, 0, -1, 0}; }
  void nextCommunicator() {
    ++communicator;
    opClass = -1;
    operations = 0;
  }
  void setupOperationIterator(int c) {
    opClass = c;
    operations = 0;
  }
  void nextOperation() { ++operations; }
  // For the calls that leave the position where it is (get_communicator, get_comm_group,
  // get_comm_coll_state).
  static void stay(IterationCursor&) {}
  void reset() { *this = IterationCursor{}; }

  void writeTo(wire::WalkCursor::Builder out) const {
    out.setSetUp(setUp);
    out.setCommunicator(communicator);
    out.setOpClass(opClass);
    out.setOperations(operations);
  }
};

}  // namespace mqd::client
