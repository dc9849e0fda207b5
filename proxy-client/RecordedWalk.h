// RecordedWalk: a CommunicatorWalk the server recorded at mqs_update_communicator_list, and
// where the debugger's iteration stands in it.
//
// Each method serves one iteration call from the record and returns true, with the recorded
// result and the effects to replay; or returns false when the call leaves the recorded path
// (e.g. next_operation past the recorded end, an op class the walk did not visit, a call before
// setup_communicator_iterator). The shim then hands the server cursor() so it can bring the
// DLL to the same place, forwards the call, and stops using the walk.
#pragma once

#include <cstdint>
#include <memory>

#include "Bulk.h"
#include "IterationCursor.h"
#include "mqd.capnp.h"

namespace mqd::client {

class RecordedWalk {
 public:
  // Throws ProxyError(PROTOCOL) if the payload is malformed or exceeds WalkLimits.
  explicit RecordedWalk(wire::Bulk::Reader walk);

  // The same walk with the debugger at its start, sharing the record: for a later epoch that
  // read exactly what this one read (RefreshAhead::hold).
  std::unique_ptr<RecordedWalk> fromStart() const;

  using Effects = capnp::List<wire::Effect>::Reader;

  bool setupCommunicatorIterator(wire::RecordedRc::Reader* out);
  bool getCommunicator(wire::RecordedCommunicator::Reader* out);
  bool getCommGroup(wire::RecordedGroup::Reader* out);
  bool nextCommunicator(wire::RecordedRc::Reader* out);
  bool setupOperationIterator(int opClass, wire::RecordedRc::Reader* out);
  bool nextOperation(wire::RecordedOperation::Reader* out);
  bool getCommCollState(int collective, wire::RecordedCollState::Reader* out);

  // The DLL's error texts for the codes the walk met (see wire CommunicatorWalk).
  capnp::List<wire::ErrorText>::Reader errorTexts() const { return walk_.getErrorTexts(); }

  // Where the debugger stands in the walk.
  const IterationCursor& cursor() const { return at_; }

 private:
  // Cap'n Proto charges every pointer traversal against the reader's limit, so list readers
  // are taken once (a walk of N operations would otherwise cost N^2).
  explicit RecordedWalk(BulkMessageReader message);  // a record already checked

  bool onCommunicator() const { return at_.setUp && at_.communicator < communicators_.size(); }
  wire::WalkedCommunicator::Reader current() const { return communicators_[at_.communicator]; }
  // Takes the current communicator's lists (after comm_ changed).
  void enterCommunicator();

  BulkMessageReader message_;
  wire::CommunicatorWalk::Reader walk_;
  capnp::List<wire::WalkedCommunicator>::Reader communicators_;
  capnp::List<wire::WalkedQueue>::Reader queues_;
  capnp::List<wire::RecordedCollState>::Reader collStates_;
  capnp::List<wire::RecordedOperation>::Reader operations_;
  IterationCursor at_;
};

}  // namespace mqd::client
