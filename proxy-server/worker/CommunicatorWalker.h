// CommunicatorWalker: records a debugger's whole refresh of one process, and puts the DLL back
// where the debugger believes it is when the shim stops serving from the record.
//
// record() runs, right after a successful mqs_update_communicator_list, what every debugger
// does next (the queue iteration, common/QueueIteration.h): setup_communicator_iterator, then
// for each communicator get_communicator, get_comm_group, get_comm_coll_state(0..13) (when the
// DLL has them), the three queues (setup_operation_iterator and next_operation until it stops
// answering mqs_ok) and next_communicator, as long as the DLL answers mqs_ok. Every call is captured exactly as the
// unrecorded call would have been (OutputCapture), with the debugger-visible effects it caused.
// The shim then answers the debugger's calls from the record for as long as they follow it.
//
// Rule for equivalence (docs/round-trips.md, "When the debugger leaves the recorded path"):
// a debugger that (re)starts its iterations with
// mqs_setup_communicator_iterator / mqs_setup_operation_iterator, as the interface prescribes,
// sees exactly what it would see unrecorded. get_communicator, get_comm_group and
// get_comm_coll_state are taken to have no effect on the DLL's state. The walk also carries the
// DLL's text for each error code it met (mqs_dll_error_string is taken to depend only on the
// code), so that showing such a result costs no round trip either.
#pragma once

#include <capnp/message.h>

#include <set>

#include "DebuggerObjects.h"
#include "DllCall.h"
#include "VendorDll.h"
#include "mqd.capnp.h"

namespace mqd::server {

class CommunicatorWalker {
 public:
  CommunicatorWalker(VendorDll& dll, RemoteProcess& process, DllCall& call)
      : dll_(dll), process_(process), call_(call) {}

  // A walk is not recorded past this size (it must stay well inside the wire's bulk limit).
  static constexpr size_t kMaxWalkBytes = 96u << 20;

  // Records the walk into the root of `message`; false when it grew past the limits (then the
  // shim gets no walk and forwards every call): kMaxWalkBytes of message, the WalkLimits
  // counts, and kMaxWalkBytes of group buffers beyond their minimum size.
  bool record(capnp::MessageBuilder& message);

  // Replays the cursor's calls, their effects discarded (the debugger saw them already), up to
  // the first one that does not answer mqs_ok.
  void reposition(wire::WalkCursor::Reader cursor);

 private:
  // The calls themselves; `codes` collects every result code they returned.
  bool recordCalls(capnp::MessageBuilder& message, wire::CommunicatorWalk::Builder out,
                   std::set<int>& codes);

  mqs_process* handle() { return reinterpret_cast<mqs_process*>(&process_); }

  VendorDll& dll_;
  RemoteProcess& process_;
  DllCall& call_;
};

}  // namespace mqd::server
