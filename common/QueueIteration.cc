#include "QueueIteration.h"

#include "mqs_interface.h"

namespace mqd {

IterationEnd iterateQueues(QueueIterationSteps& steps, const QueueIterationLimits& limits) {
  std::optional<int> rc = steps.setupCommunicatorIterator();
  if (!rc) return IterationEnd::Stopped;
  if (*rc != mqs_ok) return IterationEnd::Ended;
  size_t communicators = 0;
  size_t operations = 0;
  for (;;) {
    if (communicators >= limits.communicators) return IterationEnd::OverLimit;
    ++communicators;
    if (!(rc = steps.getCommunicator())) return IterationEnd::Stopped;
    if (*rc != mqs_ok) return IterationEnd::Ended;
    if (steps.asksCommGroup() && !steps.getCommGroup()) return IterationEnd::Stopped;
    if (steps.asksCommCollStates()) {
      for (int k = 0; k < kCommCollectives; ++k) {
        if (!steps.getCommCollState(k)) return IterationEnd::Stopped;
      }
    }
    for (int opClass = mqs_pending_sends; opClass <= mqs_unexpected_messages; ++opClass) {
      if (!(rc = steps.setupOperationIterator(opClass))) return IterationEnd::Stopped;
      while (*rc == mqs_ok) {
        if (operations >= limits.operations) return IterationEnd::OverLimit;
        ++operations;
        if (!(rc = steps.nextOperation())) return IterationEnd::Stopped;
      }
    }
    if (!(rc = steps.nextCommunicator())) return IterationEnd::Stopped;
    if (*rc != mqs_ok) return IterationEnd::Ended;
  }
}

}  // namespace mqd
