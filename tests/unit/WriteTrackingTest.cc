#include <doctest/doctest.h>

#include <capnp/message.h>

#include <cstring>

#include "ProxyErrors.h"
#include "WriteTracking.h"

using namespace mqd;

TEST_CASE("WriteTracking: scalars") {
  long v;
  fillScalar(v);
  CHECK_FALSE(scalarWritten(v));
  v = 0;
  CHECK(scalarWritten(v));
  v = -1;
  CHECK(scalarWritten(v));
  int partial;
  fillScalar(partial);
  reinterpret_cast<unsigned char*>(&partial)[2] = 0;
  CHECK(scalarWritten(partial));
}

TEST_CASE("WriteTracking: character arrays travel as runs of written bytes") {
  capnp::MallocMessageBuilder message;
  auto chars = message.initRoot<wire::WrittenChars>();
  char dll[16];

  SUBCASE("untouched: no runs, destination unchanged") {
    fillChars(dll, sizeof dll);
    captureChars(dll, sizeof dll, chars);
    CHECK(chars.getRuns().size() == 0);
    char dst[16];
    std::memset(dst, 'z', sizeof dst);
    applyChars(chars.asReader(), dst, sizeof dst);
    CHECK(std::string(dst, 16) == std::string(16, 'z'));
  }
  SUBCASE("a C string without padding: one run including the NUL") {
    fillChars(dll, sizeof dll);
    std::memcpy(dll, "MPI_", 5);
    captureChars(dll, sizeof dll, chars);
    REQUIRE(chars.getRuns().size() == 1);
    CHECK(chars.getRuns()[0].getOffset() == 0);
    CHECK(chars.getRuns()[0].getBytes().size() == 5);
    char dst[16];
    std::memset(dst, 'z', sizeof dst);
    applyChars(chars.asReader(), dst, sizeof dst);
    CHECK(std::memcmp(dst, "MPI_\0zzzzzzzzzzz", 16) == 0);
  }
  SUBCASE("scattered writes: several runs") {
    fillChars(dll, sizeof dll);
    dll[0] = 0;
    dll[5] = 'a';
    dll[6] = 'b';
    dll[15] = 'c';
    captureChars(dll, sizeof dll, chars);
    CHECK(chars.getRuns().size() == 3);
    char dst[16];
    std::memset(dst, '.', sizeof dst);
    applyChars(chars.asReader(), dst, sizeof dst);
    CHECK(std::memcmp(dst, "\0....ab........c", 16) == 0);
  }
  SUBCASE("a run that does not fit is refused and nothing past the array is touched") {
    auto runs = chars.initRuns(1);
    runs[0].setOffset(14);
    runs[0].setBytes(kj::StringPtr("abc").asBytes());
    char dst[20];
    std::memset(dst, '.', sizeof dst);
    try {
      applyChars(chars.asReader(), dst, 16);
      FAIL("accepted");
    } catch (const ProxyError& e) {
      CHECK(e.code() == MQD_PROXY_ERR_PROTOCOL);
    }
    CHECK(dst[16] == '.');
  }
}
