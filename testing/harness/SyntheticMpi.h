// SyntheticMpi: a small MPI-like library state, laid out in a TargetModel for the test DLL.
//
// The layout uses the target's pointer size, byte order and natural alignment, and publishes
// its structure types (tmpi_comm, tmpi_group, tmpi_request, tmpi_newproc) with field offsets,
// so the test DLL must go through find_type / field_offset / sizeof / get_type_sizes /
// fetch_data / target_to_host exactly as a real MQD DLL does. Symbols:
//   tmpi_comm_list        pointer to the first communicator
//   tmpi_comm_sequence    int, changes whenever the communicator list changes
//   tmpi_new_processes    pointer to an array of tmpi_newproc, tmpi_new_process_count: int
//   tmpi_debugger_hook    a function (looked up with a NULL out-pointer)
//   tmpi_ignore_queues    present only when Job::ignoreQueues (the DLL then refuses politely)
//   tmpi_warn_stderr      present only when Job::warnOnStderr (the DLL prints to stderr)
//   tmpi_late_identity    present only when Job::lateIdentity (the DLL asks for the process's
//                         rank, job and identity at every update instead of at its set-up, as
//                         Open MPI's does)
//   tmpi_no_identity      present only when Job::noIdentity (the DLL never asks who the process
//                         is, as Open MPI's never does in a dump: its set-ups and updates ask
//                         the debugger nothing but look-ups and memory)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "TargetModel.h"

namespace mqd::harness {

struct Operation {
  int kind = 0;    // 0 send, 1 receive, 2 unexpected; 99 makes the DLL fail mid-iteration,
                   // 98 makes it crash (SIGSEGV), 97 makes it abort()
  int status = 0;  // enum mqs_status
  int peer = 0;    // local rank in the communicator, -1 for any source
  int tag = 0;     // -1 for any tag
  int64_t length = 0;
  uint64_t buffer = 0;
  int actualPeer = 0;
  int actualTag = 0;
  int64_t actualLength = 0;
  std::string note;  // shown in extra_text
};

struct Communicator {
  int64_t id = 0;
  int rank = 0;
  std::vector<int> worldRanks;  // group: local rank -> world rank
  std::string name;
  std::array<std::vector<Operation>, 3> queues;  // indexed by mqs_op_class
};

struct NewProcess {
  int64_t pid = 0;
  std::string host;
  std::string image;
};

struct Job {
  std::vector<Communicator> communicators;
  int sequence = 1;
  std::vector<NewProcess> newProcesses;
  bool ignoreQueues = false;
  bool warnOnStderr = false;
  bool lateIdentity = false;
  bool noIdentity = false;
  bool brokenCommunicatorList = false;  // the list head points at unmapped memory
};

// A deterministic job: world of `worldSize`, this process rank `rank`, five communicators
// (WORLD, SELF, a dup, an even/odd split, a named one) with `opsPerQueue` operations in each
// of their three queues, covering wildcard sources and tags, matched and complete requests.
Job standardJob(size_t opsPerQueue, int worldSize = 4, int rank = 0);

// Writes `job` into `target`, with types and symbols.
void layOut(TargetModel& target, const Job& job);

// What a running program does to its memory between two stops, in place: symbols stay where
// they are, as in a real process.
//
// replaceCommunicators writes `job`'s communicators into fresh memory, points tmpi_comm_list at
// them and stores job.sequence (a DLL that caches the list by sequence notices the change only
// if the sequence differs). progressRequests rewrites every request already in the queues
// (tag, status, actual length, note; different for each `step`) and unlinks every third one;
// it returns how many requests it changed.
void replaceCommunicators(TargetModel& target, const Job& job);
size_t progressRequests(TargetModel& target, int step);
// The same for one request alone, the one at the highest address in any queue (the heap's
// last, of a job laid out once); returns its address.
uint64_t progressLastRequest(TargetModel& target, int step);

// Rewrites the kind of every request of kind `from` to `to` (e.g. cures a request that makes the
// DLL crash); returns how many it changed.
size_t rewriteRequestKinds(TargetModel& target, int from, int to);

}  // namespace mqd::harness
