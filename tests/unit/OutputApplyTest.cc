#include <doctest/doctest.h>

#include "OutputApply.h"
#include "ProxyErrors.h"

using namespace mqd::client;

TEST_CASE("narrowing: addresses that do not fit are an error, never truncated") {
  CHECK(narrowAddressAs<uint32_t>(0xffffffffull, "x") == 0xffffffffu);
  try {
    narrowAddressAs<uint32_t>(0x7f5a10000000ull, "buffer address");
    FAIL("truncated");
  } catch (const mqd::ProxyError& e) {
    CHECK(e.code() == MQD_PROXY_ERR_ADDRESS_WIDTH);
    CHECK(std::string(e.what()).find("buffer address 0x7f5a10000000") != std::string::npos);
    CHECK(std::string(e.what()).find("MQD_TADDR64") != std::string::npos);
  }
  CHECK(narrowAddressAs<unsigned long long>(0x7f5a10000000ull, "x") == 0x7f5a10000000ull);
}

TEST_CASE("narrowing: words wrap modulo 2^N, as a C conversion does") {
  CHECK(narrowWordAs<int32_t>(4294967295LL) == -1);  // Open MPI's unsigned ANY_SOURCE
  CHECK(narrowWordAs<int32_t>(-1) == -1);
  CHECK(narrowWordAs<int32_t>(0x100000005LL) == 5);
  CHECK(narrowWordAs<int32_t>(2147483648LL) == INT32_MIN);
  CHECK(narrowWordAs<long long>(4294967295LL) == 4294967295LL);
}

TEST_CASE("has_queues messages: only one %s survives, every other % is escaped") {
  CHECK(safePrintfFormat("plain") == "plain");
  CHECK(safePrintfFormat("image %s has no queues") == "image %s has no queues");
  CHECK(safePrintfFormat("%s and %s") == "%s and %%s");
  CHECK(safePrintfFormat("%n%x%p") == "%%n%%x%%p");
  CHECK(safePrintfFormat("100%% sure") == "100%% sure");
  CHECK(safePrintfFormat("trailing %") == "trailing %%");
  CHECK(safePrintfFormat("%.1000s") == "%%.1000s");
}
