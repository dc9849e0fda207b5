// SessionSetUp: what the debugger has set up in the session so far, in order, so that a lost
// session can be re-established on a new connection by replaying it.
//
// The vendor DLL's state lives in the server's worker; when the connection (or the worker)
// is lost, so is that state. MqsClient records here every set-up call the debugger made
// (mqs_setup_basic_callbacks is kept by DebuggerSide), and for each process where its
// iterations stood. After reconnecting, it replays, in the original order:
//   mqs_setup_image [+ mqs_image_has_queues], mqs_setup_job,
//   mqs_setup_process [+ mqs_process_has_queues] [+ mqs_update_communicator_list],
// and then brings each process's communicator iteration back to its cursor (Session
// reposition), so that an iteration the failure interrupted goes on where it stood.
// Only calls that reached the DLL are recorded. Lives on the debugger's calling thread,
// under MqsClient's call lock.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "IterationCursor.h"

namespace mqd::client {

class SessionSetUp {
 public:
  enum class Kind { Image, Process, Job };
  struct Entry {
    Kind kind;
    uint64_t token;
    bool queriedQueues = false;  // image: mqs_image_has_queues; process: mqs_process_has_queues
    bool updated = false;        // process: mqs_update_communicator_list
    bool targetBigEndian = false;   // process: the byte order probed at set-up
    bool newProcessIteration = false;  // process: mqs_setup_new_process_iterator was called
    bool newProcessesLost = false;  // process: that iteration was cut by a lost session
  };

  // A set-up call reached the DLL. The first set-up of an object fixes its place in the order.
  // Returns the object's entry.
  Entry& setUp(Kind kind, uint64_t token);
  void queriedQueues(Kind kind, uint64_t token);
  void updated(uint64_t process);

  // The process's cursor (created on first use).
  IterationCursor& cursor(uint64_t process) { return cursors_[process]; }

  const std::vector<Entry>& entries() const { return entries_; }
  Entry* find(Kind kind, uint64_t token);

 private:
  std::vector<Entry> entries_;
  std::map<uint64_t, IterationCursor> cursors_;
};

}  // namespace mqd::client
