// StringPool: strings handed across the C ABI that must outlive the call that produced them.
//
// MQD hands out char* it never frees: version strings and error texts are "owned by the DLL",
// has_queues messages likewise, errorstring answers are "owned by the debugger". The proxy
// keeps one copy of each distinct string for its own lifetime. The number of distinct strings
// is bounded so that a misbehaving peer cannot grow it without limit; past the bound, intern()
// returns a fixed notice instead.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_set>

namespace mqd {

class StringPool {
 public:
  explicit StringPool(size_t maxStrings = 4096) : maxStrings_(maxStrings) {}

  // A NUL-terminated copy of `text`, stable until the pool is destroyed. Thread-safe.
  char* intern(const std::string& text);

 private:
  std::mutex mutex_;
  size_t maxStrings_;
  std::unordered_set<std::string> strings_;
};

}  // namespace mqd
