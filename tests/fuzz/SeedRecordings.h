// SeedRecordings: what fuzz_parsers and the recording seeds make-corpus writes must agree on.
//
// fuzz_parsers reads recordings within these limits, scaled down from the real ones
// (RecordLimits, RecordFile.h) so that inputs of a few KB reach each of them: at the real ones
// each compression bomb would cost the fuzzer a quarter of a GB and a second. make-corpus
// writes one seed past each (corpus/fuzz_parsers/limit-recording-*).
#pragma once

#include "RecordFile.h"

namespace mqd::fuzz {

inline client::RecordLimits fuzzRecordLimits() {
  client::RecordLimits limits;
  limits.chunkBytes = 4u << 20;
  limits.chunkMessages = 4096;
  limits.totalBytes = 16u << 20;
  limits.messages = 16384;
  limits.traversalWords = 4u << 20;
  return limits;
}

}  // namespace mqd::fuzz
