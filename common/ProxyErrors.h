// ProxyErrors: names and generic texts of the proxy's own result codes (mqd_proxy.h).
#pragma once

#include "mqd_proxy.h"

namespace mqd {

// The generic sentence for a proxy code ("the server did not answer in time"), or nullptr
// for a code outside the proxy's range. Callers add the specifics (address, call, signal).
const char* proxyErrorText(int code);

// The enumerator's name, e.g. "MQD_PROXY_ERR_TIMEOUT", or nullptr.
const char* proxyErrorName(int code);

}  // namespace mqd

#include <stdexcept>
#include <string>

namespace mqd {

// An error of the proxy itself, carrying the code the debugger will see and the full
// sentence mqs_dll_error_string() will return for it.
class ProxyError : public std::runtime_error {
 public:
  ProxyError(int code, const std::string& detail) : std::runtime_error(detail), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace mqd

#include <kj/exception.h>

namespace mqd {

// A proxy error as it crosses the wire: a kj::Exception whose description is
// "<MQD_PROXY_ERR_NAME>: <detail>" (capnp carries the description, not a code).
kj::Exception toWireException(int code, const std::string& detail);

// Recovers the code and detail from such an exception; any other exception yields
// `fallbackCode` and its whole description.
int fromWireException(const kj::Exception& e, int fallbackCode, std::string* detail);

}  // namespace mqd
