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

TEST_CASE("ProxyErrors: codes survive the wire as exception descriptions") {
  kj::Exception e = toWireException(MQD_PROXY_ERR_BAD_HANDLE, "process 3 was destroyed");
  std::string detail;
  CHECK(fromWireException(e, 0, &detail) == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(detail == "process 3 was destroyed");
  // capnp prefixes remote descriptions; the code is still found.
  kj::Exception remote(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                       kj::str("remote exception: ", e.getDescription()));
  CHECK(fromWireException(remote, 0, &detail) == MQD_PROXY_ERR_BAD_HANDLE);
  kj::Exception other(kj::Exception::Type::DISCONNECTED, __FILE__, __LINE__,
                      kj::str("Peer disconnected."));
  CHECK(fromWireException(other, MQD_PROXY_ERR_SESSION_LOST, &detail) ==
        MQD_PROXY_ERR_SESSION_LOST);
  CHECK(detail == "Peer disconnected.");
}
