#include <doctest/doctest.h>

#include "HandleTokens.h"
#include "mqs_interface.h"

TEST_CASE("HandleTokens: pointers never leave, unknown tokens are refused") {
  mqd::client::HandleTokens<mqs_process> tokens("process");
  int a, b;
  auto* pa = reinterpret_cast<mqs_process*>(&a);
  auto* pb = reinterpret_cast<mqs_process*>(&b);
  CHECK(tokens.tokenOf(nullptr) == 0);
  uint64_t ta = tokens.tokenOf(pa);
  uint64_t tb = tokens.tokenOf(pb);
  CHECK(ta == 1);
  CHECK(tb == 2);
  CHECK(tokens.tokenOf(pa) == ta);
  CHECK(tokens.existingToken(pb) == tb);
  CHECK(tokens.existingToken(reinterpret_cast<mqs_process*>(&ta)) == 0);
  CHECK(tokens.handleOf(ta) == pa);
  CHECK(tokens.handleOf(0) == nullptr);
  try {
    tokens.handleOf(77);
    FAIL("accepted");
  } catch (const mqd::ProxyError& e) {
    CHECK(e.code() == MQD_PROXY_ERR_PROTOCOL);
    CHECK(std::string(e.what()).find("process token 77") != std::string::npos);
  }
}
