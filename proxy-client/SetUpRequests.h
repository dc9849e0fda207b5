// SetUpRequests: the set-up requests of images and processes, as the shim sends them: with
// what it asked or read ahead for them, and, for a set-up answered from a set-up record
// (SetUpRecords), the info token the debugger was given. Building a request and nothing else:
// when to send it, and what its reply means, is MqsClient's and SetUpRecords'.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CostRule.h"
#include "DebuggerSide.h"
#include "LookupKey.h"
#include "ReadAhead.h"
#include "SessionLink.h"
#include "SetUpRecall.h"

namespace mqd::client {

// The look-ups answered ahead with an image's set-up (under the epoch policy): their keys and
// the debugger's answers for this image, in the same order.
struct LookupsAhead {
  std::vector<LookupKey> keys;
  std::vector<DebuggerSide::LookupResult> answers;

  // As a set-up record keys them (SetUpRecall::canonical).
  SetUpRecall::Answers answersByKey() const;
};

// A process's facts sent with its set-up, which every DLL asks for during it (two round trips a
// process otherwise); `globalRank` for a server that reads on its node, which finds the process
// by it.
struct ProcessFacts {
  uint64_t image = 0;
  DebuggerSide::TypeSizes sizes;
  std::optional<int> globalRank;
};

// mqs_setup_image, sent without waiting for its reply; `recalled`: the debugger was answered
// from a set-up record, with `infoToken` for the image's info (0: none).
std::shared_ptr<PendingCall> startSetupImage(SessionLink& link, uint64_t image,
                                             const LookupsAhead& ahead, uint64_t infoToken,
                                             bool recalled);
// A process set-up's proof of identity made late (wire setupProcess' proveLate and redoesLate):
// the windows the shim reads while the request travels, and whether this set-up replaces one so
// proved that the debugger's bytes contradicted.
struct LateProof {
  std::vector<Window> windows;
  bool redoes = false;
};
// The same for mqs_setup_process, with the process's facts when known (null: the DLL asks for
// them), what was read ahead for it, and the inputs of the shim's cost rule (`rule`, with the
// debugger's measured read cost) for the server's bound on reads around a miss.
std::shared_ptr<PendingCall> startSetupProcess(SessionLink& link, uint64_t process,
                                               bool bigEndian, const ProcessFacts* facts,
                                               const std::vector<ReadAhead>& ahead,
                                               uint64_t infoToken, bool recalled,
                                               const CostRule& rule,
                                               std::optional<ReadPrice> measuredReadCost,
                                               const LateProof& late = {});
// mqs_image_has_queues or mqs_process_has_queues of `token`, sent behind its object's set-up
// (the server skips it when the set-up did not answer mqs_ok).
std::shared_ptr<PendingCall> startHasQueuesBehind(SessionLink& link, EntryPoint entryPoint,
                                                  uint64_t token);

// A set-up reply's byte-order warning, given to the debugger (empty: none). The one line the
// shim adds to what the debugger sees (docs/transparency.md, "What the shim adds").
void warnOfByteOrder(DebuggerSide& side, const std::string& warning);

}  // namespace mqd::client
