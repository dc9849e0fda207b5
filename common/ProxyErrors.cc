#include "ProxyErrors.h"

#include <kj/string.h>

namespace mqd {
namespace detail {

struct Entry {
  int code;
  const char* name;
  const char* text;
};

constexpr Entry kEntries[] = {
    {MQD_PROXY_ERR_UNREACHABLE, "MQD_PROXY_ERR_UNREACHABLE", "cannot reach the mqd-proxy server"},
    {MQD_PROXY_ERR_SESSION_REFUSED, "MQD_PROXY_ERR_SESSION_REFUSED",
     "the mqd-proxy server refused the session"},
    {MQD_PROXY_ERR_SESSION_LOST, "MQD_PROXY_ERR_SESSION_LOST",
     "the connection to the mqd-proxy server was lost"},
    {MQD_PROXY_ERR_TIMEOUT, "MQD_PROXY_ERR_TIMEOUT",
     "the mqd-proxy server did not answer in time"},
    {MQD_PROXY_ERR_WORKER_DIED, "MQD_PROXY_ERR_WORKER_DIED",
     "the server process running the vendor DLL died"},
    {MQD_PROXY_ERR_NO_ENTRY_POINT, "MQD_PROXY_ERR_NO_ENTRY_POINT",
     "the vendor DLL does not provide this entry point"},
    {MQD_PROXY_ERR_BAD_HANDLE, "MQD_PROXY_ERR_BAD_HANDLE",
     "unknown or already destroyed handle"},
    {MQD_PROXY_ERR_ADDRESS_WIDTH, "MQD_PROXY_ERR_ADDRESS_WIDTH",
     "a target address does not fit in this debugger's mqs_taddr_t"},
    {MQD_PROXY_ERR_PROTOCOL, "MQD_PROXY_ERR_PROTOCOL", "malformed message from the peer"},
    {MQD_PROXY_ERR_REENTRANT, "MQD_PROXY_ERR_REENTRANT",
     "an mqs_* entry point was called from inside a debugger callback"},
    {MQD_PROXY_ERR_CALLBACK_FAILED, "MQD_PROXY_ERR_CALLBACK_FAILED",
     "a debugger callback could not be delivered"},
    {MQD_PROXY_ERR_FETCH_TOO_LARGE, "MQD_PROXY_ERR_FETCH_TOO_LARGE",
     "the DLL asked for more target memory at once than the proxy allows"},
    {MQD_PROXY_ERR_NOT_SET_UP, "MQD_PROXY_ERR_NOT_SET_UP",
     "called before the set-up it depends on"},
    {MQD_PROXY_ERR_AUTH_FAILED, "MQD_PROXY_ERR_AUTH_FAILED",
     "authentication with the mqd-proxy server failed"},
    {MQD_PROXY_ERR_TLS, "MQD_PROXY_ERR_TLS", "TLS with the mqd-proxy server failed"},
};

}  // namespace detail
namespace {
using detail::Entry;
using detail::kEntries;

const Entry* find(int code) {
  for (const Entry& e : kEntries) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

const char* proxyErrorText(int code) {
  const Entry* e = find(code);
  return e ? e->text : nullptr;
}

const char* proxyErrorName(int code) {
  const Entry* e = find(code);
  return e ? e->name : nullptr;
}

}  // namespace mqd

namespace mqd {

kj::Exception ChainFailure::raise(int code, const std::string& detail) {
  if (code_ == 0) {
    code_ = checkedFailureCode(code);
    detail_ = detail;
  }
  return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(detail.c_str()));
}

ProxyError ChainFailure::failureOf(const kj::Exception& e, int fallbackCode) const {
  if (code_ != 0) return ProxyError(code_, detail_);
  return ProxyError(fallbackCode, e.getDescription().cStr());
}

kj::Exception peerException(int code, const std::string& detail) {
  const char* name = proxyErrorName(code);
  return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                       kj::str(name != nullptr ? name : "MQD_PROXY_ERR_PROTOCOL", ": ",
                               detail.c_str()));
}

int checkedFailureCode(int wireCode) {
  return MQD_PROXY_IS_PROXY_ERROR(wireCode) ? wireCode : MQD_PROXY_ERR_PROTOCOL;
}

int codeOfRpcException(const kj::Exception& e) {
  switch (e.getType()) {
    case kj::Exception::Type::DISCONNECTED:
      return MQD_PROXY_ERR_SESSION_LOST;
    case kj::Exception::Type::OVERLOADED:
      return MQD_PROXY_ERR_TIMEOUT;
    default:
      return MQD_PROXY_ERR_PROTOCOL;
  }
}

ProxyError rpcFailure(const kj::Exception& e) {
  return ProxyError(codeOfRpcException(e), e.getDescription().cStr());
}

ProxyError currentFailure() {
  try {
    throw;
  } catch (const ProxyError& e) {
    return e;
  } catch (const kj::Exception& e) {
    return rpcFailure(e);
  }
}

}  // namespace mqd
