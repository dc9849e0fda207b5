// QueueIteration: the order in which a debugger asks a DLL for one process's message queues,
// and when it stops asking. The test harness's dump (testing/harness/QueueDump), the replayed
// dump (replay/ReplayedDump) and the server's recorded walk (CommunicatorWalker) all follow it;
// each supplies the steps: how one call is made (a DLL, a recorded session, a DLL with its
// effects captured) and what is kept of its answer.
//
// Contract of iterateQueues (after mqs_update_communicator_list, which is not part of it):
//
//   setupCommunicatorIterator()          not mqs_ok: the iteration ends
//   per communicator:
//     getCommunicator()                  not mqs_ok: the iteration ends
//     getCommGroup()                     only when asksCommGroup(); its rc changes nothing
//     getCommCollState(0 .. kCommCollectives-1)
//                                        only when asksCommCollStates(); rcs change nothing
//     for opClass 0, 1, 2 (mqs_op_class order):
//       setupOperationIterator(opClass)  not mqs_ok: on to the next opClass
//       nextOperation() until it answers other than mqs_ok, then on to the next opClass
//     nextCommunicator()                 not mqs_ok: the iteration ends
//
// A step that answers no rc (std::nullopt) stops the iteration right there: no further step is
// asked (the step knows why: a proxy error, a call the recorded session never made, a walk
// grown too large). asksCommGroup and asksCommCollStates are asked right after the
// communicator's getCommunicator answered mqs_ok, about that communicator.
//
// Limits: before a getCommunicator beyond limits.communicators, and before a nextOperation
// beyond limits.operations (counted over all queues of all communicators, whatever each one
// answered), the iteration ends as OverLimit without making that call. By default there are
// none; the server's recorded walk passes WalkLimits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace mqd {

// mqs_get_comm_coll_state's collectives: 0..13, Barrier .. Scatterv (mqs_interface.h).
constexpr int kCommCollectives = 14;

// One call each, made (or answered) by the user of the iteration, in the order above. Each
// returns the call's rc, or std::nullopt to stop the iteration before any further call.
class QueueIterationSteps {
 public:
  virtual ~QueueIterationSteps() = default;

  virtual std::optional<int> setupCommunicatorIterator() = 0;
  virtual std::optional<int> getCommunicator() = 0;
  // Whether get_comm_group is asked of the communicator just got (the DLL has it, and what
  // the communicator says of its size makes the call worth making).
  virtual bool asksCommGroup() = 0;
  virtual std::optional<int> getCommGroup() = 0;
  // Whether mqs_get_comm_coll_state is asked, for every collective; by default it is not.
  virtual bool asksCommCollStates() { return false; }
  virtual std::optional<int> getCommCollState(int /*collective*/) { return std::nullopt; }
  virtual std::optional<int> setupOperationIterator(int opClass) = 0;
  virtual std::optional<int> nextOperation() = 0;
  virtual std::optional<int> nextCommunicator() = 0;
};

struct QueueIterationLimits {
  size_t communicators = SIZE_MAX;  // getCommunicator calls
  size_t operations = SIZE_MAX;     // nextOperation calls, in all queues of all communicators
};

enum class IterationEnd {
  Ended,      // a call answered the end (setup or next_communicator or get_communicator not mqs_ok)
  Stopped,    // a step answered no rc
  OverLimit,  // the next call would have gone past a limit
};

IterationEnd iterateQueues(QueueIterationSteps& steps, const QueueIterationLimits& limits = {});

}  // namespace mqd
