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

// Between processes a proxy error travels as a number: the `failure` every Session result
// carries (mqd.capnp). Inside one process, a kj promise chain carries only kj::Exception, so a
// proxy error passing through one (connecting, the handshake, TLS, ssh) is an exception whose
// description starts with the code's name. These two functions are the only writer and the
// only reader of that form; nothing that came over the wire is read with them.
kj::Exception proxyException(int code, const std::string& detail);

// The code and detail of an exception made by proxyException (perhaps with context put in
// front of it); any other exception yields `fallbackCode` and its whole description.
int proxyCodeOf(const kj::Exception& e, int fallbackCode, std::string* detail);

// The code of a `failure` read from the wire: itself when it is a proxy code, otherwise
// MQD_PROXY_ERR_PROTOCOL, so that no peer can make a failed call look like a DLL's answer.
int checkedFailureCode(int wireCode);

// The code for an exception of the RPC system itself, which carries no proxy code: a broken
// connection is MQD_PROXY_ERR_SESSION_LOST, a deadline that passed (kj's timeouts are
// OVERLOADED) MQD_PROXY_ERR_TIMEOUT, anything else MQD_PROXY_ERR_PROTOCOL.
int codeOfRpcException(const kj::Exception& e);

}  // namespace mqd
