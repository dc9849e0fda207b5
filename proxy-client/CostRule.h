// CostRule: the shim's one rule for reading target memory again through the debugger to save
// round trips to the server (a refresh ahead's proof, a peer's guessed first update): worth it
// when reading the bytes costs no more than the round trips it saves.
//
// Its two inputs are times: what the debugger's reads cost per byte (ReadCost, measured by
// DebuggerSide; or pinned by the read_cost setting, for a debugger whose timings mislead and
// for tests, whose verdicts must not depend on the machine's speed) and the quickest round trip
// to the server so far (measured by SessionLink::roundTrip). The decision itself reads no clock:
// given the same inputs it is the same on any machine.
#pragma once

#include <cstdint>
#include <optional>

#include "mqd.capnp.h"

namespace mqd::client {

class CostRule {
 public:
  // Reads this short never decide against reading: timings that small are the scheduler's,
  // not the debugger link's (one preemption of the debugger's thread outweighs a small read).
  static constexpr double kNegligibleReadSeconds = 1e-3;

  // `pinnedSecondsPerByte`: the read_cost setting (ClientConfig::readCost); nullopt: measured.
  explicit CostRule(std::optional<double> pinnedSecondsPerByte = std::nullopt)
      : pinned_(pinnedSecondsPerByte) {}

  // One round trip to the server took `seconds`, the callbacks it served included.
  void roundTripTook(double seconds) {
    if (fastestRoundTrip_ == 0 || seconds < fastestRoundTrip_) fastestRoundTrip_ = seconds;
  }

  // Whether reading `bytes` once more costs no more than `roundTrips` round trips, with the
  // debugger's reads costing `measuredSecondsPerByte` (nullopt: nothing measured yet) unless
  // the cost is pinned. Before any round trip, and before any read cost is known, it is.
  bool worthReading(uint64_t bytes, uint64_t roundTrips,
                    std::optional<double> measuredSecondsPerByte) const {
    std::optional<double> perByte = readCost(measuredSecondsPerByte);
    double again = perByte ? static_cast<double>(bytes) * *perByte : 0;
    return fastestRoundTrip_ == 0 || again <= fastestRoundTrip_ * static_cast<double>(roundTrips) ||
           again <= kNegligibleReadSeconds;
  }

  double fastestRoundTrip() const { return fastestRoundTrip_; }  // 0: none yet

  // The read cost the rule takes: pinned, else `measuredSecondsPerByte`.
  std::optional<double> readCost(std::optional<double> measuredSecondsPerByte) const {
    return pinned_ ? pinned_ : measuredSecondsPerByte;
  }

  // The rule's inputs, for the server's own bound on what a miss reads around, which takes
  // them until it has measured its own (mqd.capnp LinkTimings).
  void describe(wire::LinkTimings::Builder out,
                std::optional<double> measuredSecondsPerByte) const {
    out.setRoundTripSeconds(fastestRoundTrip_);
    std::optional<double> perByte = readCost(measuredSecondsPerByte);
    out.setReadCostKnown(perByte.has_value());
    out.setReadSecondsPerByte(perByte.value_or(0));
  }

 private:
  std::optional<double> pinned_;
  double fastestRoundTrip_ = 0;
};

}  // namespace mqd::client
