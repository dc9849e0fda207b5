#include <doctest/doctest.h>

#include "ReadCost.h"

using mqd::client::ReadCost;
using mqd::client::ReadPrice;

namespace {

// What `reads` reads of `bytes` bytes in all cost by the estimate (0 when there is none).
double costOf(const ReadCost& cost, uint64_t reads, uint64_t bytes) {
  return cost.price().value_or(ReadPrice{}).of(reads, bytes);
}

}  // namespace

TEST_CASE("ReadCost: nothing is known before a read that returned bytes") {
  ReadCost cost;
  CHECK_FALSE(cost.price().has_value());
  cost.add(0.001, 0);  // a failed read
  CHECK_FALSE(cost.price().has_value());
  cost.add(0.002, 8);  // a word: the price of a read; a byte's is not known yet
  REQUIRE(cost.price().has_value());
  CHECK(cost.price()->secondsPerRead == doctest::Approx(0.002));
  CHECK(cost.price()->secondsPerByte == 0);
  cost.add(0.012, 10000);  // a block: what it took beyond a read's price, per byte
  CHECK(cost.price()->secondsPerRead == doctest::Approx(0.002));
  CHECK(cost.price()->secondsPerByte == doctest::Approx(0.010 / 10000));
}

TEST_CASE("ReadCost: reads that failed price no byte, however many") {
  // A first update's miss reads 4 MiB around an executable's data: most of those blocks are
  // unmapped, and each failure (two reads through gdb's Python) costs a fraction of a
  // millisecond. Counted, 60 of them over 4 blocks priced a 1.4 MiB guess at 0.2 s.
  ReadCost cost;
  for (int i = 0; i < 2; ++i) cost.add(40e-6, 65536);
  for (int i = 0; i < 60; ++i) cost.add(0.6e-3, 0);
  for (int i = 0; i < 2; ++i) cost.add(40e-6, 65536);
  CHECK(costOf(cost, 1, 65536) == doctest::Approx(40e-6));
  // And they do not push the reads that returned bytes out of the samples.
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(1e-3, 0);
  CHECK(costOf(cost, 1, 65536) == doctest::Approx(40e-6));
}

TEST_CASE("ReadCost: a set-up's words do not price a guess's bytes") {
  // A job never seen on a local gdb: a block or two read around the first rank's misses, then
  // hundreds of set-ups' words (a few tens of microseconds each, the callback's cost) before
  // the reply naming the other ranks' guesses (1.4 MB each, about 20 reads, two round trips of
  // 25 ms saved). Priced by the byte from the last 64 reads alone, the guess cost the words'
  // rate: seconds, and no guess was taken.
  ReadCost cost;
  cost.add(60e-6, 65536);
  for (int i = 0; i < 1000; ++i) cost.add(i % 2 ? 20e-6 : 30e-6, 8);
  ReadPrice price = *cost.price();
  CHECK(price.secondsPerRead == doctest::Approx(30e-6));
  CHECK(price.secondsPerByte == doctest::Approx(30e-6 / 65536));
  CHECK(price.of(20, 1400000) < 0.002);
  CHECK(price.of(20, 1400000) > 20 * 30e-6);
}

TEST_CASE("ReadCost: words and blocks read by a fast debugger price a block as a block") {
  // A local debugger (as a sanitized build's harness): a word in a few microseconds, a 64 KiB
  // block in tens.
  ReadCost cost;
  for (int i = 0; i < 5; ++i) cost.add(4e-6, 4);
  for (int i = 0; i < 2; ++i) cost.add(45e-6, 66788);
  CHECK(costOf(cost, 1, 66792) == doctest::Approx(45e-6).epsilon(0.01));
  CHECK(costOf(cost, 100, 4) == doctest::Approx(100 * 4e-6));  // a hundred words
}

TEST_CASE("ReadCost: a preemption is left out, a slow link is not") {
  ReadCost fast;
  for (int i = 0; i < 20; ++i) fast.add(40e-6, 65536);
  fast.add(0.050, 65536);  // the debugger's thread preempted for 50 ms
  CHECK(costOf(fast, 1, 65536) == doctest::Approx(40e-6));
  for (int i = 0; i < 20; ++i) fast.add(5e-6, 8);
  fast.add(0.050, 8);  // and in a word's read
  CHECK(costOf(fast, 1, 8) == doctest::Approx(5e-6));

  // gdbserver behind 20 ms: a word is one exchange, a 64 KiB block eight.
  ReadCost remote;
  for (int i = 0; i < 10; ++i) remote.add(0.020, 4);
  for (int i = 0; i < 3; ++i) remote.add(0.160, 65536);
  CHECK(costOf(remote, 1, 65536) == doctest::Approx(0.160));  // not worth a 20 ms round trip
  CHECK(costOf(remote, 3, 24) == doctest::Approx(0.060).epsilon(0.01));  // three exchanges
}

TEST_CASE("ReadCost: only the last kSamples reads of each kind count") {
  ReadCost cost;
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(0.160, 65536);
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(40e-6, 65536);
  CHECK(costOf(cost, 1, 65536) == doctest::Approx(40e-6));
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(0.020, 8);
  for (size_t i = 0; i < ReadCost::kSamples; ++i) cost.add(10e-6, 8);
  CHECK(cost.price()->secondsPerRead == doctest::Approx(10e-6));
  CHECK(cost.price()->secondsPerByte == doctest::Approx(30e-6 / 65536));
}
