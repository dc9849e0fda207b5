#include "SessionSetUp.h"

namespace mqd::client {

SessionSetUp::Entry* SessionSetUp::find(Kind kind, uint64_t token) {
  for (Entry& e : entries_) {
    if (e.kind == kind && e.token == token) return &e;
  }
  return nullptr;
}

SessionSetUp::Entry& SessionSetUp::setUp(Kind kind, uint64_t token) {
  if (kind == Kind::Process) cursors_[token].reset();
  if (Entry* e = find(kind, token)) {
    // Set up again: what the debugger asked of it since starts over (its place stays).
    *e = Entry{kind, token};
    return *e;
  }
  return entries_.emplace_back(Entry{kind, token});
}

void SessionSetUp::queriedQueues(Kind kind, uint64_t token) {
  if (Entry* e = find(kind, token)) e->queriedQueues = true;
}

void SessionSetUp::updated(uint64_t process) {
  if (Entry* e = find(Kind::Process, process)) e->updated = true;
  cursors_[process].reset();
}

}  // namespace mqd::client
