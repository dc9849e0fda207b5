// ReadCost: what the debugger's reads of target memory cost, in seconds per byte, from its
// last kSamples reads. The shim's cost rule (CostRule.h) weighs reading bytes
// again against a round trip to the server with it: a debugger whose own link to its target
// is slow (gdbserver over a network) takes seconds per MiB, a local one milliseconds.
//
// The estimate is the samples' seconds over their bytes, leaving out a read whose seconds per
// byte are over kOutlier times the median read's: a preemption of the debugger's thread,
// whose milliseconds would otherwise outweigh every fast read. A read that failed prices no
// byte and is left out too: the blocks a first update reads around a miss run into unmapped
// memory by the dozen, and their time, spread over the few bytes read beside them, once
// priced a guess of a peer's first update above the round trips it saved (what the cost rule
// weighs is reading memory that was read before). Reads of a few bytes and of
// whole blocks mix in the samples; it is their cost per byte that is compared, not their
// time, else a block read (tens of times a word's time, yet a thousandth of its time per
// byte) would be taken for a preemption and the words' fixed cost priced per byte.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mqd::client {

class ReadCost {
 public:
  static constexpr size_t kSamples = 64;
  static constexpr double kOutlier = 10;

  // One read of `bytes` bytes that took `seconds`; a failed read (0 bytes) is not counted.
  void add(double seconds, uint64_t bytes) {
    if (bytes != 0) samples_[count_++ % kSamples] = {seconds, bytes};
  }

  // nullopt before a read that returned bytes.
  std::optional<double> secondsPerByte() const {
    size_t n = std::min(count_, kSamples);
    if (n == 0) return std::nullopt;
    std::vector<double> rates;
    for (size_t i = 0; i < n; ++i) rates.push_back(rateOf(samples_[i]));
    std::nth_element(rates.begin(), rates.begin() + static_cast<long>(n / 2), rates.end());
    double limit = rates[n / 2] * kOutlier;
    double seconds = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rateOf(samples_[i]) > limit) continue;
      seconds += samples_[i].seconds;
      bytes += samples_[i].bytes;
    }
    return seconds / static_cast<double>(bytes);
  }

 private:
  struct Sample {
    double seconds;
    uint64_t bytes;  // never 0
  };
  static double rateOf(const Sample& s) { return s.seconds / static_cast<double>(s.bytes); }

  std::array<Sample, kSamples> samples_{};  // a ring: the last kSamples reads that returned bytes
  size_t count_ = 0;                        // in all
};

}  // namespace mqd::client
