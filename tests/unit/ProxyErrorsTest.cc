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

TEST_CASE("ProxyErrors: a chain's first failure is its failure, kept as data") {
  auto failure = ChainFailure::make();
  kj::Exception other(kj::Exception::Type::DISCONNECTED, __FILE__, __LINE__,
                      kj::str("Peer disconnected."));
  // Nothing raised: the fallback code and the exception's own sentence.
  ProxyError none = failure->failureOf(other, MQD_PROXY_ERR_UNREACHABLE);
  CHECK(none.code() == MQD_PROXY_ERR_UNREACHABLE);
  CHECK(std::string(none.what()) == "Peer disconnected.");
  CHECK_FALSE(failure->raised());

  kj::Exception thrown = failure->raise(MQD_PROXY_ERR_AUTH_FAILED, "unix:/run/x: wrong token");
  CHECK(failure->raised());
  // The exception says the detail for people, not the code's name: nothing reads it back.
  CHECK(std::string(thrown.getDescription().cStr()) == "unix:/run/x: wrong token");
  // A later step's failure (the deadline that then fires, a wrapping step) does not replace
  // the cause; whatever exception ends the chain, the failure is the one raised first.
  failure->raise(MQD_PROXY_ERR_TIMEOUT, "no answer within 10 ms");
  ProxyError got = failure->failureOf(other, MQD_PROXY_ERR_UNREACHABLE);
  CHECK(got.code() == MQD_PROXY_ERR_AUTH_FAILED);
  CHECK(std::string(got.what()) == "unix:/run/x: wrong token");
  // A code from the wire (a handshake's REFUSED line) is checked like any failure's.
  auto forged = ChainFailure::make();
  forged->raise(0, "looks like mqs_ok");
  CHECK(forged->failureOf(other, MQD_PROXY_ERR_UNREACHABLE).code() == MQD_PROXY_ERR_PROTOCOL);
}

TEST_CASE("ProxyErrors: the failure being handled, whatever threw it") {
  auto handled = [](auto thrower) {
    try {
      thrower();
    } catch (...) {
      return currentFailure();
    }
    return ProxyError(0, "nothing thrown");
  };
  ProxyError proxy = handled([] { throw ProxyError(MQD_PROXY_ERR_TLS, "bad certificate"); });
  CHECK(proxy.code() == MQD_PROXY_ERR_TLS);
  CHECK(std::string(proxy.what()) == "bad certificate");
  ProxyError rpc = handled([] {
    throw kj::Exception(kj::Exception::Type::DISCONNECTED, __FILE__, __LINE__,
                        kj::str("Peer disconnected."));
  });
  CHECK(rpc.code() == MQD_PROXY_ERR_SESSION_LOST);
  CHECK(std::string(rpc.what()) == "Peer disconnected.");
  // Anything else is not a failure of the proxy's: it goes on to whoever handles bugs.
  CHECK_THROWS_AS(handled([] { throw std::logic_error("a bug"); }), std::logic_error);
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
