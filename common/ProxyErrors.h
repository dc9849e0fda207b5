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

#include <memory>

namespace mqd {

// A chain of kj promises carries only kj::Exception from one step to the next. The steps of a
// chain that fail for a proxy reason (connecting: the address, TLS, ssh, the handshake, the
// session's opening) share one ChainFailure: `raise` keeps the code and the detail as data and
// gives back the exception to throw; whoever ends the chain asks `failureOf` for them. The
// first failure raised is the chain's: a later step that sees `raised()` passes the exception
// on. Nothing is ever read back from an exception's text.
class ChainFailure {
 public:
  static std::shared_ptr<ChainFailure> make() { return std::make_shared<ChainFailure>(); }

  kj::Exception raise(int code, const std::string& detail);
  bool raised() const { return code_ != 0; }

  // The failure raised; when none was, `fallbackCode` with the exception's description.
  ProxyError failureOf(const kj::Exception& e, int fallbackCode) const;

 private:
  int code_ = 0;
  std::string detail_;
};

// An exception for a peer to read, answering a call it made (a callback the server relayed):
// its description names the code ("MQD_PROXY_ERR_FETCH_TOO_LARGE: ...") for the peer's logs and
// the callback failure it records. Text for people: a code crosses the wire only in a
// `failure` (mqd.capnp), and nothing parses one out of a description.
kj::Exception peerException(int code, const std::string& detail);

// The code of a `failure` read from the wire: itself when it is a proxy code, otherwise
// MQD_PROXY_ERR_PROTOCOL, so that no peer can make a failed call look like a DLL's answer.
int checkedFailureCode(int wireCode);

// The code for an exception of the RPC system itself, which carries no proxy code: a broken
// connection is MQD_PROXY_ERR_SESSION_LOST, a deadline that passed (kj's timeouts are
// OVERLOADED) MQD_PROXY_ERR_TIMEOUT, anything else MQD_PROXY_ERR_PROTOCOL.
int codeOfRpcException(const kj::Exception& e);

// An exception of the RPC system as a ProxyError: codeOfRpcException's code, its description.
ProxyError rpcFailure(const kj::Exception& e);

// The failure being handled, for a catch (...) block: a ProxyError as it is, an exception of the
// RPC system as rpcFailure() makes it; any other exception is thrown on.
ProxyError currentFailure();

}  // namespace mqd
