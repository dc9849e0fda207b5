// CostRule: the shim's one rule for reading target memory again through the debugger to save
// round trips to the server (a refresh ahead's proof, a peer's guessed first update): worth it
// when reading the bytes costs no more than the round trips it saves.
//
// Its inputs are times: what the debugger's reads cost (ReadCost's ReadPrice, measured by
// DebuggerSide; or a price per byte pinned by the read_cost setting, for a debugger whose
// timings mislead and for tests, whose verdicts must not depend on the machine's speed) and
// the quickest round trip to the server so far (measured by SessionLink::roundTrip). The
// decision itself reads no clock: given the same inputs it is the same on any machine.
#pragma once

#include <cstdint>
#include <optional>

#include "ReadCost.h"
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

  // Whether reading `bytes` once more, in `reads` reads, costs no more than `roundTrips` round
  // trips, with the debugger's reads priced `measured` (nullopt: nothing measured yet) unless
  // the price is pinned. Before any round trip, and before any price is known, it is.
  bool worthReading(uint64_t bytes, uint64_t reads, uint64_t roundTrips,
                    std::optional<ReadPrice> measured) const {
    std::optional<ReadPrice> price = readPrice(measured);
    double again = price ? price->of(reads, bytes) : 0;
    return fastestRoundTrip_ == 0 || again <= fastestRoundTrip_ * static_cast<double>(roundTrips) ||
           again <= kNegligibleReadSeconds;
  }

  double fastestRoundTrip() const { return fastestRoundTrip_; }  // 0: none yet

  // The price the rule takes: pinned (per byte only), else `measured`.
  std::optional<ReadPrice> readPrice(std::optional<ReadPrice> measured) const {
    if (pinned_) return ReadPrice{0, *pinned_};
    return measured;
  }

  // The rule's inputs, for the server's own bound on what a miss reads around (the bytes it
  // adds to a read: their price), which takes them until it has measured its own (mqd.capnp
  // LinkTimings).
  void describe(wire::LinkTimings::Builder out, std::optional<ReadPrice> measured) const {
    out.setRoundTripSeconds(fastestRoundTrip_);
    std::optional<ReadPrice> price = readPrice(measured);
    out.setReadCostKnown(price.has_value());
    out.setReadSecondsPerByte(price ? price->secondsPerByte : 0);
  }

 private:
  std::optional<double> pinned_;
  double fastestRoundTrip_ = 0;
};

}  // namespace mqd::client
