// Transcript: a debugger's conversation with an MQD DLL, written down.
//
// Each method makes one mqs_* call through a DebuggerHarness and records the call, its result
// and everything it produced: output structs field by field (character arrays byte for byte),
// has_queues messages (or that the DLL left them untouched), group arrays including elements
// past the communicator's size. Output buffers are pre-filled with a pattern that changes at
// every call, so bytes a DLL leaves alone are visible and distinguishable. Two transcripts of
// the same conversation, one with the vendor DLL loaded natively and one through
// libmqdproxy.so, must be identical.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "DebuggerHarness.h"

namespace mqd::harness {

class Transcript {
 public:
  explicit Transcript(DebuggerHarness& debugger) : d_(debugger) {}

  std::vector<std::string>& lines() { return lines_; }
  void note(const std::string& line) { lines_.push_back(line); }

  // One entry point each; the result is returned as well as recorded.
  // withTaddrWidth: ask mqs_dll_taddr_width (an optional entry point).
  void versions(bool withTaddrWidth);
  void setupBasicCallbacks();
  int setupImage(DebuggerHarness::Image* image);
  int imageHasQueues(DebuggerHarness::Image* image);
  int setupProcess(DebuggerHarness::Process* process);
  int processHasQueues(DebuggerHarness::Process* process);
  int updateCommunicatorList(DebuggerHarness::Process* process);
  int setupCommunicatorIterator(DebuggerHarness::Process* process);
  int getCommunicator(DebuggerHarness::Process* process, long* size);
  int getCommGroup(DebuggerHarness::Process* process, long size);
  int nextCommunicator(DebuggerHarness::Process* process);
  int setupOperationIterator(DebuggerHarness::Process* process, int opClass);
  int nextOperation(DebuggerHarness::Process* process);
  int getCommCollState(DebuggerHarness::Process* process, int collective);
  int setupJob(DebuggerHarness::Job* job);
  int setProcessIdentity(DebuggerHarness::Process* process, int identity);
  int setupNewProcessIterator(DebuggerHarness::Process* process);
  int nextNewProcess(DebuggerHarness::Process* process);
  void dllErrorString(int code);
  void destroyProcessInfo(DebuggerHarness::Process* process);
  void destroyImageInfo(DebuggerHarness::Image* image);
  int destroyJobInfo(DebuggerHarness::Job* job);

  // Every non-zero result seen so far (their texts are asked for at the end).
  const std::set<int>& resultsSeen() const { return results_; }

  // Appends the debugger's logged effects.
  void appendEffects();

 private:
  int record(const std::string& call, int rc);
  unsigned char pattern() { return static_cast<unsigned char>(0x40 + (step_++ % 61)); }

  DebuggerHarness& d_;
  std::vector<std::string> lines_;
  std::set<int> results_;
  unsigned step_ = 0;
};

// Which optional entry points a conversation uses. A debugger decides this once per DLL; the
// comparison runs the same conversation natively and through the shim (which exports every
// entry point and answers for the missing ones as documented), so it is fixed per test case.
struct Capabilities {
  bool optional = true;  // mqs_dll_taddr_width, mqs_get_comm_group, mqs_get_comm_coll_state
  bool level3 = true;    // jobs, process identity, new processes
};

// A whole refresh as a debugger does it: update the list, then for every communicator its
// group, its three queues and its collective state (when used).
void refresh(Transcript& t, DebuggerHarness::Process* process, const Capabilities& caps);

// The standard conversation: versions, set-up, level-3 calls, two refreshes, error texts,
// tear-down.
void fullConversation(Transcript& t, DebuggerHarness::Image* image,
                      DebuggerHarness::Process* process, DebuggerHarness::Job* job,
                      const Capabilities& caps);

// Calls in orders a careful debugger would not make: iterators used before set-up, past their
// end, with invalid queue classes, set-ups repeated.
void unusualOrders(Transcript& t, DebuggerHarness::Image* image, DebuggerHarness::Process* process,
                   const Capabilities& caps);

// The text of a character array, printable bytes as they are and others as \xNN.
std::string renderBytes(const char* bytes, size_t size);

}  // namespace mqd::harness
