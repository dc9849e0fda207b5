#include <doctest/doctest.h>

#include "ReadCost.h"

using mqd::client::ReadCost;

namespace {

// What reading `bytes` costs by the estimate (0 when there is none).
double costOf(const ReadCost& cost, uint64_t bytes) {
  return cost.secondsPerByte().value_or(0) * static_cast<double>(bytes);
}

}  // namespace

TEST_CASE("ReadCost: nothing is known before a read that returned bytes") {
  ReadCost cost;
  CHECK_FALSE(cost.secondsPerByte().has_value());
  cost.add(0.001, 0);  // a failed read
  CHECK_FALSE(cost.secondsPerByte().has_value());
  cost.add(0.002, 1000);
  REQUIRE(cost.secondsPerByte().has_value());
  CHECK(*cost.secondsPerByte() == doctest::Approx(0.002 / 1000));
}

TEST_CASE("ReadCost: reads that failed price no byte, however many") {
  // A first update's miss reads 4 MiB around an executable's data: most of those blocks are
  // unmapped, and each failure (two reads through gdb's Python) costs a fraction of a
  // millisecond. Counted, 60 of them over 4 blocks priced a 1.4 MiB guess at 0.2 s.
  ReadCost cost;
  for (int i = 0; i < 2; ++i) cost.add(40e-6, 65536);
  for (int i = 0; i < 60; ++i) cost.add(0.6e-3, 0);
  for (int i = 0; i < 2; ++i) cost.add(40e-6, 65536);
  CHECK(costOf(cost, 65536) == doctest::Approx(40e-6));
  // And they do not push the reads that returned bytes out of the samples.
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(1e-3, 0);
  CHECK(costOf(cost, 65536) == doctest::Approx(40e-6));
}

TEST_CASE("ReadCost: words and blocks read by a fast debugger price a block as a block") {
  // A local debugger (as a sanitized build's harness): a word in a few microseconds, a 64 KiB
  // block in tens. By time alone every block read is over ten times the median read, a word;
  // left out, the words' fixed cost would price a block at 65 ms, more than a 20 ms round trip.
  ReadCost cost;
  for (int i = 0; i < 5; ++i) cost.add(4e-6, 4);
  for (int i = 0; i < 2; ++i) cost.add(45e-6, 66788);
  CHECK(costOf(cost, 66792) < 1e-3);
  CHECK(costOf(cost, 66792) > 40e-6);
}

TEST_CASE("ReadCost: a preemption is left out, a slow link is not") {
  ReadCost fast;
  for (int i = 0; i < 20; ++i) fast.add(40e-6, 65536);
  fast.add(0.050, 65536);  // the debugger's thread preempted for 50 ms
  CHECK(costOf(fast, 65536) == doctest::Approx(40e-6));
  fast.add(0.050, 4);  // and in a word's read
  CHECK(costOf(fast, 65536) == doctest::Approx(40e-6));

  // gdbserver behind 20 ms: a word is one exchange, a 64 KiB block eight.
  ReadCost remote;
  for (int i = 0; i < 10; ++i) remote.add(0.020, 4);
  for (int i = 0; i < 3; ++i) remote.add(0.160, 65536);
  CHECK(costOf(remote, 66792) > 0.020);  // not worth reading again against a 20 ms round trip
}

TEST_CASE("ReadCost: only the last kSamples reads count") {
  ReadCost cost;
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(0.160, 65536);
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(40e-6, 65536);
  CHECK(costOf(cost, 65536) == doctest::Approx(40e-6));
}
