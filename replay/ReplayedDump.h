// ReplayedDump: the message queues a replayed session shows, process by process, as the gdb
// front end's `mqd dump` (frontends/gdb/mqd_gdb/dump.py) shows them, so that a replay and a live
// dump can be compared byte for byte (DumpFormat renders them).
//
// For every process, in the order the session set them up, the front end's dump runs over
// the process's last refresh: mqs_update_communicator_list, then the queue iteration
// (common/QueueIteration.h): setup_communicator_iterator, then per communicator
// get_communicator, get_comm_group, the three queues (setup_operation_iterator, next_operation
// until it stops) and next_communicator. Its answers are the replayed ones: from
// the refresh's walk while that holds them (RecordedWalk, exactly as the shim serves a
// debugger), then from the calls the session forwarded for that process, in order and matched
// by entry point; they are applied to zeroed structs with the shim's own OutputApply, as the
// front end's fresh ctypes structs are. Error texts come from the walks and from the
// session's mqs_dll_error_string calls.
//
// What a session cannot know (gdb's inferior number and the pid; the MPI_COMM_WORLD rank as
// gdb worked it out; the host a launcher's process table named) comes from the process's
// recorded label (MQD_PROXY_RECORD_LABEL: "inferior=N pid=P rank=R [host=H]"), else the set-up
// order, 0, the rank the shim sent at set-up, and no host.
#pragma once

#include <capnp/any.h>
#include <capnp/message.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "EntryPoints.h"
#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::replay {

struct QueueView {
  int rc = 0;           // setup_operation_iterator's rc if that failed, else next_operation's last
  bool setupFailed = false;
  std::string error;    // the error text, when the front end shows one
  std::vector<mqs_pending_operation> operations;
};

struct CommunicatorView {
  mqs_communicator communicator{};
  // None: unknown (an empty communicator, or a DLL without mqs_get_comm_group), null in JSON.
  enum class Group { None, Ranks, Error } group = Group::None;
  std::vector<int> ranks;
  int groupRc = 0;
  std::string groupError;
  QueueView queues[3];  // sends, receives, unexpected (mqs_op_class order)
};

struct ProcessView {
  int inferior = 0;
  int64_t pid = 0;
  int64_t rank = MQS_INVALID_PROCESS;
  std::string host;     // empty when unknown (not attached from a launcher's table)
  std::string dll;      // the DLL's version string
  bool failed = false;  // the dump could not start: only `error` is shown
  std::string error;    // why it failed, or where it stopped
  std::vector<CommunicatorView> communicators;
};

class ReplayedDump {
 public:
  // The session's DLL (mqs_version_string, and whether it has mqs_get_comm_group).
  void setDll(const std::string& versionString, bool hasCommGroup);
  // A recorded MQD_PROXY_RECORD_LABEL of `process`.
  void label(uint64_t process, const std::string& text);
  // A Session call (its ordinal in mqd.capnp) as replayed: its results, or the proxy error
  // code it failed with (`results` null).
  void add(uint16_t method, capnp::AnyPointer::Reader params,
           const capnp::AnyPointer::Reader* results, int failedCode);

  // A recorded Debugger answer (method: its ordinal in mqd.capnp): the process's image and
  // rank, where the DLL asked for them.
  void debuggerAnswer(uint16_t method, capnp::AnyPointer::Reader params,
                      capnp::AnyPointer::Reader results);

  std::vector<ProcessView> processes() const;

 private:
  // One call kept with its results (or failure code).
  struct Call {
    EntryPoint entryPoint;
    std::shared_ptr<capnp::MallocMessageBuilder> message;  // root: a struct of two pointers
    int failedCode;
    capnp::AnyPointer::Reader params() const;
    capnp::AnyPointer::Reader results() const;
  };
  struct Refresh {
    int rc = 0;
    std::shared_ptr<Call> update;
    // -1: the update was the process's own; else the index of the process's walk in the
    // update's `refreshed` (another process's update refreshed it ahead, and the shim served
    // that at its own update, unless a later update of its own is recorded).
    int ahead = -1;
    std::vector<std::shared_ptr<Call>> forwarded;  // later calls for the process, in order
  };
  // An mqs_image_has_queues or mqs_process_has_queues answer.
  struct HasQueues {
    bool asked = false;
    int rc = 0;
    std::string message;
  };
  struct Process {
    int order = 0;
    int setupRc = 0;
    HasQueues hasQueues;
    int64_t rank = MQS_INVALID_PROCESS;  // the debugger's last answer, if the DLL asked
    uint64_t image = 0;
    std::map<std::string, std::string> label;
    std::unique_ptr<Refresh> refresh;
  };
  struct Image {
    int setupRc = 0;
    HasQueues hasQueues;
  };

  std::shared_ptr<Call> keep(EntryPoint entryPoint, capnp::AnyPointer::Reader params,
                             const capnp::AnyPointer::Reader* results, int failedCode);
  Process& process(uint64_t token);
  template <typename Results>
  static void note(HasQueues& out, const capnp::AnyPointer::Reader* results, int failedCode);
  // mqs_dll_error_string as the front end uses it: the text, else "error N".
  std::string errorText(int rc) const;
  // The front end's _explain: why `what` ("image", "process" named `name`) has no queues.
  std::string explain(const char* what, const HasQueues& answer, const std::string& name) const;
  void dumpRefresh(const Refresh& refresh, ProcessView& out) const;
  // The error texts a walk carries, for errorText.
  void keepErrorTexts(wire::Bulk::Reader walk);

  std::string dll_;
  bool hasCommGroup_ = true;
  std::map<uint64_t, Process> processes_;
  std::map<uint64_t, Image> images_;
  std::map<int, std::string> errorTexts_;  // absent: unknown; "\0" marks NULL
  int nextOrder_ = 0;
};

}  // namespace mqd::replay
