#include <doctest/doctest.h>

#include "CostRule.h"

using mqd::client::CostRule;
using mqd::client::ReadPrice;

// The rule alone, for pinned inputs: the same verdicts on any machine, however loaded.

TEST_CASE("CostRule: before a round trip or a read cost is known, reading again is worth it") {
  CostRule measured;
  CHECK(measured.worthReading(1 << 20, 1, 1, ReadPrice{1.0, 1.0}));  // no round trip yet
  measured.roundTripTook(0.020);
  CHECK(measured.worthReading(1 << 20, 1, 1, std::nullopt));  // no read measured yet
}

TEST_CASE("CostRule: reading again against the round trips it saves, by the measured cost") {
  CostRule rule;
  rule.roundTripTook(0.050);
  rule.roundTripTook(0.020);  // the quickest counts
  rule.roundTripTook(0.030);
  CHECK(rule.fastestRoundTrip() == doctest::Approx(0.020));
  const ReadPrice network{0, 1e-6};                     // 1 MB/s: a debugger over a network
  CHECK(rule.worthReading(20000, 1, 1, network));        // 20 ms: as much as a round trip
  CHECK_FALSE(rule.worthReading(20001, 1, 1, network));  // more
  CHECK(rule.worthReading(60000, 1, 3, network));        // three round trips saved
  CHECK_FALSE(rule.worthReading(60001, 1, 3, network));
  // Each read has its price too: gdbserver's exchange.
  const ReadPrice exchanges{0.010, 1e-6};
  CHECK(rule.worthReading(10000, 1, 1, exchanges));
  CHECK_FALSE(rule.worthReading(100, 2, 1, exchanges));  // two exchanges and 100 bytes
  CHECK(rule.worthReading(100, 2, 2, exchanges));
  // Reads under a millisecond never decide against it, however quick the round trip.
  CostRule beside;
  beside.roundTripTook(1e-4);
  CHECK(beside.worthReading(1000, 1, 1, network));  // 1 ms
  CHECK_FALSE(beside.worthReading(1001, 1, 1, network));
}

TEST_CASE("CostRule: a pinned read cost decides, whatever the reads measured") {
  CostRule free(0.0);
  free.roundTripTook(1e-4);
  CHECK(free.worthReading(64 << 20, 100, 1, ReadPrice{1.0, 1.0}));  // measured: slow; pinned: free
  CostRule costly(1e6 / (1024.0 * 1024.0));  // the tests' "never worth it": 1e6 s per MiB
  costly.roundTripTook(10.0);                // even a 10 s round trip
  CHECK_FALSE(costly.worthReading(1024, 1, 1, ReadPrice{}));
  CHECK_FALSE(costly.worthReading(1024, 1, 10, std::nullopt));
}
