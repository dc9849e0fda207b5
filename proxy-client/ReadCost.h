// ReadCost: what the debugger's reads of target memory cost, from its recent reads: a price
// per read and a price per byte (ReadPrice). The shim's cost rule (CostRule.h) weighs reading
// bytes again against round trips to the server with it: a debugger whose own link to its
// target is slow (gdbserver over a network) takes an exchange per read and seconds per MiB, a
// local one microseconds per read and milliseconds per MiB.
//
// Both prices, because a read's time is mostly one or the other: a word's read is its fixed
// cost (a callback into the debugger, an exchange with gdbserver), a block's adds its bytes.
// Priced by the byte alone, from a mix of both, the estimate followed the mix: a first update
// of a job never seen, after hundreds of set-ups' word reads, priced a peer's 1.4 MB guess at
// seconds on a local gdb, or at tens of milliseconds, against 50 ms saved, as the last 64 reads
// happened to hold a block or not (262 round trips instead of 15 at 256 ranks, in one run).
//
// So the two are measured apart, each from its own reads, so that neither pushes the other's
// out: the price of a read is the median time of the last kSamples reads under kBlockBytes; the
// price of a byte is what the last kSamples reads of kBlockBytes or more took beyond a read's
// price, over their bytes, leaving out a read whose seconds per byte are over kOutlier times
// the median's (a preemption of the debugger's thread). Until a block has been read, a byte is
// priced at nothing (the cost rule's "before a read cost is known, reading again is worth it";
// a first update reads blocks before any guess or refresh ahead is weighed). A read that failed
// is not counted: the blocks a first update reads around a miss run into unmapped memory by
// the dozen, and it is reading memory that was read before that the rule weighs.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mqd::client {

// What reading costs: `reads` reads of `bytes` bytes in all cost
// reads * secondsPerRead + bytes * secondsPerByte.
struct ReadPrice {
  double secondsPerRead = 0;
  double secondsPerByte = 0;
  double of(uint64_t reads, uint64_t bytes) const {
    return static_cast<double>(reads) * secondsPerRead +
           static_cast<double>(bytes) * secondsPerByte;
  }
};

class ReadCost {
 public:
  static constexpr size_t kSamples = 64;
  static constexpr double kOutlier = 10;
  static constexpr uint64_t kBlockBytes = 1024;  // a read this large prices bytes

  // One read of `bytes` bytes that took `seconds`; a failed read (0 bytes) is not counted.
  void add(double seconds, uint64_t bytes) {
    if (bytes == 0) return;
    Ring& ring = bytes < kBlockBytes ? words_ : blocks_;
    ring.samples[ring.count++ % kSamples] = {seconds, bytes};
  }

  // nullopt before a read that returned bytes.
  std::optional<ReadPrice> price() const {
    if (words_.count == 0 && blocks_.count == 0) return std::nullopt;
    ReadPrice p;
    if (words_.count != 0) {
      std::vector<double> seconds;
      for (size_t i = 0; i < words_.size(); ++i) seconds.push_back(words_.samples[i].seconds);
      p.secondsPerRead = median(seconds);
    }
    if (blocks_.count != 0) {
      std::vector<double> rates;
      for (size_t i = 0; i < blocks_.size(); ++i) rates.push_back(rateOf(blocks_.samples[i]));
      double limit = median(rates) * kOutlier;
      double seconds = 0;
      uint64_t bytes = 0;
      for (size_t i = 0; i < blocks_.size(); ++i) {
        const Sample& s = blocks_.samples[i];
        if (rateOf(s) > limit) continue;
        seconds += std::max(0.0, s.seconds - p.secondsPerRead);
        bytes += s.bytes;
      }
      p.secondsPerByte = seconds / static_cast<double>(bytes);
    }
    return p;
  }

 private:
  struct Sample {
    double seconds;
    uint64_t bytes;  // never 0
  };
  // The last kSamples reads of one kind.
  struct Ring {
    std::array<Sample, kSamples> samples{};
    size_t count = 0;  // in all
    size_t size() const { return std::min(count, kSamples); }
  };
  static double rateOf(const Sample& s) { return s.seconds / static_cast<double>(s.bytes); }
  static double median(std::vector<double>& values) {
    auto middle = values.begin() + static_cast<long>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
  }

  Ring words_;   // reads under kBlockBytes: the price of a read
  Ring blocks_;  // the others: the price of a byte
};

}  // namespace mqd::client
