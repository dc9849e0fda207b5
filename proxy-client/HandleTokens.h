// HandleTokens: the wire names of the debugger's own objects.
//
// The debugger's mqs_image*, mqs_process*, mqs_job* and mqs_type* values never leave its
// process: each distinct non-NULL pointer gets a small token (1, 2, ...) on first sight, and
// only tokens are sent. A token coming back that was never issued is refused, so a peer cannot
// make the shim hand the debugger a pointer of its own invention. Only the debugger's calling
// thread touches these tables (under the client's call lock).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "ProxyErrors.h"

namespace mqd::client {

template <typename T>
class HandleTokens {
 public:
  explicit HandleTokens(const char* kind) : kind_(kind) {}

  // The token for `handle`, issued on first sight; 0 for NULL.
  uint64_t tokenOf(T* handle) {
    if (handle == nullptr) return 0;
    auto it = tokens_.find(handle);
    if (it != tokens_.end()) return it->second;
    uint64_t token = handles_.size() + 1;
    tokens_.emplace(handle, token);
    handles_.emplace(token, handle);
    return token;
  }

  // The token already issued for `handle`, or 0 if there is none.
  uint64_t existingToken(T* handle) const {
    auto it = tokens_.find(handle);
    return it == tokens_.end() ? 0 : it->second;
  }

  // The handle behind a token; NULL for 0. Throws ProxyError(PROTOCOL) for unknown tokens.
  T* handleOf(uint64_t token) const {
    if (token == 0) return nullptr;
    auto it = handles_.find(token);
    if (it == handles_.end()) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                       std::string("server named an unknown ") + kind_ + " token " +
                           std::to_string(token));
    }
    return it->second;
  }

 private:
  const char* kind_;
  std::unordered_map<T*, uint64_t> tokens_;
  std::unordered_map<uint64_t, T*> handles_;
};

}  // namespace mqd::client
