#include "WriteTracking.h"

#include <cstring>
#include <vector>

#include "ProxyErrors.h"

namespace mqd {

void fillScalar(void* p, size_t size) { std::memset(p, kScalarFill, size); }

bool scalarWritten(const void* p, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < size; ++i) {
    if (bytes[i] != kScalarFill) return true;
  }
  return false;
}

void fillChars(char* p, size_t size) { std::memset(p, kCharFill, size); }

void captureChars(const char* p, size_t size, wire::WrittenChars::Builder out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(p);
  struct Run {
    size_t begin, end;
  };
  std::vector<Run> runs;
  size_t i = 0;
  while (i < size) {
    if (bytes[i] == kCharFill) {
      ++i;
      continue;
    }
    size_t begin = i;
    while (i < size && bytes[i] != kCharFill) ++i;
    runs.push_back({begin, i});
  }
  auto list = out.initRuns(static_cast<unsigned>(runs.size()));
  for (size_t r = 0; r < runs.size(); ++r) {
    list[r].setOffset(static_cast<uint32_t>(runs[r].begin));
    list[r].setBytes(kj::arrayPtr(bytes + runs[r].begin, runs[r].end - runs[r].begin));
  }
}

void checkChars(wire::WrittenChars::Reader in, size_t size) {
  for (auto run : in.getRuns()) {
    size_t offset = run.getOffset();
    auto bytes = run.getBytes();
    if (offset > size || bytes.size() > size - offset) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                       "character run [" + std::to_string(offset) + ", +" +
                           std::to_string(bytes.size()) + ") exceeds a " + std::to_string(size) +
                           "-byte field");
    }
  }
}

void applyChars(wire::WrittenChars::Reader in, char* dst, size_t size) {
  checkChars(in, size);
  for (auto run : in.getRuns()) {
    auto bytes = run.getBytes();
    // An empty run may come with no bytes at all (a null pointer), which memcpy must not see.
    if (bytes.size() != 0) std::memcpy(dst + run.getOffset(), bytes.begin(), bytes.size());
  }
}

}  // namespace mqd
