#include "SessionSetUp.h"

namespace mqd::client {

void IterationCursor::writeTo(wire::WalkCursor::Builder out) const {
  out.setSetUp(setUp);
  out.setCommunicator(communicator);
  out.setOpClass(opClass);
  out.setOperations(operations);
}

SessionSetUp::Entry* SessionSetUp::find(Kind kind, uint64_t token) {
  for (Entry& e : entries_) {
    if (e.kind == kind && e.token == token) return &e;
  }
  return nullptr;
}

void SessionSetUp::setUp(Kind kind, uint64_t token) {
  if (Entry* e = find(kind, token)) {
    // Set up again: what the debugger asked of it since starts over.
    e->queriedQueues = false;
    e->updated = false;
    e->newProcessIteration = false;
    e->newProcessesLost = false;
  } else {
    entries_.push_back(Entry{kind, token});
  }
  if (kind == Kind::Process) cursors_[token].reset();
}

void SessionSetUp::queriedQueues(Kind kind, uint64_t token) {
  if (Entry* e = find(kind, token)) e->queriedQueues = true;
}

void SessionSetUp::updated(uint64_t process) {
  if (Entry* e = find(Kind::Process, process)) e->updated = true;
  cursors_[process].reset();
}

}  // namespace mqd::client
