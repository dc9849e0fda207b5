#include <doctest/doctest.h>

#include "CostRule.h"

using mqd::client::CostRule;

// The rule alone, for pinned inputs: the same verdicts on any machine, however loaded.

TEST_CASE("CostRule: before a round trip or a read cost is known, reading again is worth it") {
  CostRule measured;
  CHECK(measured.worthReading(1 << 20, 1, 1.0));  // no round trip yet
  measured.roundTripTook(0.020);
  CHECK(measured.worthReading(1 << 20, 1, std::nullopt));  // no read measured yet
}

TEST_CASE("CostRule: reading again against the round trips it saves, by the measured cost") {
  CostRule rule;
  rule.roundTripTook(0.050);
  rule.roundTripTook(0.020);  // the quickest counts
  rule.roundTripTook(0.030);
  CHECK(rule.fastestRoundTrip() == doctest::Approx(0.020));
  const double perByte = 1e-6;                           // 1 MB/s: a debugger over a network
  CHECK(rule.worthReading(20000, 1, perByte));           // 20 ms: as much as a round trip
  CHECK_FALSE(rule.worthReading(20001, 1, perByte));     // more
  CHECK(rule.worthReading(60000, 3, perByte));           // three round trips saved
  CHECK_FALSE(rule.worthReading(60001, 3, perByte));
  // Reads under a millisecond never decide against it, however quick the round trip.
  CostRule beside;
  beside.roundTripTook(1e-4);
  CHECK(beside.worthReading(1000, 1, perByte));          // 1 ms
  CHECK_FALSE(beside.worthReading(1001, 1, perByte));
}

TEST_CASE("CostRule: a pinned read cost decides, whatever the reads measured") {
  CostRule free(0.0);
  free.roundTripTook(1e-4);
  CHECK(free.worthReading(64 << 20, 1, 1.0));  // measured: a second a byte; pinned: free
  CostRule costly(1e6 / (1024.0 * 1024.0));  // the tests' "never worth it": 1e6 s per MiB
  costly.roundTripTook(10.0);                // even a 10 s round trip
  CHECK_FALSE(costly.worthReading(1024, 1, 0.0));
  CHECK_FALSE(costly.worthReading(1024, 10, std::nullopt));
}
