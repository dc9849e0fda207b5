#include <doctest/doctest.h>

#include "ProxyErrors.h"

using namespace mqd;

TEST_CASE("ProxyErrors: every code has a name and a sentence, outside any DLL's range") {
  for (int code = MQD_PROXY_ERR_FIRST + 1; code <= MQD_PROXY_ERR_LAST; ++code) {
    INFO(code);
    CHECK(proxyErrorName(code) != nullptr);
    CHECK(proxyErrorText(code) != nullptr);
    CHECK(MQD_PROXY_IS_PROXY_ERROR(code));
  }
  CHECK_FALSE(MQD_PROXY_IS_PROXY_ERROR(0));
  CHECK_FALSE(MQD_PROXY_IS_PROXY_ERROR(146));  // Open MPI's last code
  CHECK(proxyErrorText(146) == nullptr);
}

TEST_CASE("ProxyErrors: inside a process, codes pass through kj promises as exceptions") {
  kj::Exception e = proxyException(MQD_PROXY_ERR_BAD_HANDLE, "process 3 was destroyed");
  std::string detail;
  CHECK(proxyCodeOf(e, 0, &detail) == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(detail == "process 3 was destroyed");
  // Context put in front (a connection step naming its endpoint) keeps the code.
  kj::Exception wrapped(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                        kj::str("unix:/run/x: ", e.getDescription()));
  CHECK(proxyCodeOf(wrapped, 0, &detail) == MQD_PROXY_ERR_BAD_HANDLE);
  kj::Exception other(kj::Exception::Type::DISCONNECTED, __FILE__, __LINE__,
                      kj::str("Peer disconnected."));
  CHECK(proxyCodeOf(other, MQD_PROXY_ERR_SESSION_LOST, &detail) == MQD_PROXY_ERR_SESSION_LOST);
  CHECK(detail == "Peer disconnected.");
}

TEST_CASE("ProxyErrors: a failure from the wire is a proxy code, or a protocol error") {
  CHECK(checkedFailureCode(MQD_PROXY_ERR_FETCH_TOO_LARGE) == MQD_PROXY_ERR_FETCH_TOO_LARGE);
  // A peer must not make a failed call look like an answer of the DLL (mqs_ok, a DLL's code).
  CHECK(checkedFailureCode(0) == MQD_PROXY_ERR_PROTOCOL);
  CHECK(checkedFailureCode(146) == MQD_PROXY_ERR_PROTOCOL);
  CHECK(checkedFailureCode(MQD_PROXY_ERR_FIRST) == MQD_PROXY_ERR_PROTOCOL);
}

TEST_CASE("ProxyErrors: the RPC system's own exceptions map by their type, not their text") {
  auto ofType = [](kj::Exception::Type type, const char* text) {
    return codeOfRpcException(kj::Exception(type, __FILE__, __LINE__, kj::str(text)));
  };
  CHECK(ofType(kj::Exception::Type::DISCONNECTED, "Peer disconnected.") ==
        MQD_PROXY_ERR_SESSION_LOST);
  CHECK(ofType(kj::Exception::Type::OVERLOADED, "operation timed out") == MQD_PROXY_ERR_TIMEOUT);
  // A description that names a code is not believed: only a `failure` carries one.
  CHECK(ofType(kj::Exception::Type::FAILED, "MQD_PROXY_ERR_BAD_HANDLE: forged") ==
        MQD_PROXY_ERR_PROTOCOL);
}
