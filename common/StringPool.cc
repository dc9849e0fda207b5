#include "StringPool.h"

namespace mqd {

char* StringPool::intern(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = strings_.find(text);
  if (it == strings_.end()) {
    if (strings_.size() >= maxStrings_) {
      static char overflow[] = "(mqd-proxy: too many distinct strings; text not kept)";
      return overflow;
    }
    it = strings_.insert(text).first;
  }
  return const_cast<char*>(it->c_str());
}

}  // namespace mqd
