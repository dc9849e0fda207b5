#include <doctest/doctest.h>

#include <capnp/message.h>

#include <cstring>

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

TEST_CASE("apply: exactly the written fields are written in place, and a refused reply leaves "
          "the debugger's struct untouched") {
  using P = mqd::wire::PendingOperation;
  capnp::MallocMessageBuilder message;
  auto op = message.initRoot<P>();
  op.setWritten(P::WRITTEN_STATUS | P::WRITTEN_DESIRED_TAG);
  op.setStatus(2);
  op.setDesiredTag(77);
  op.setActualTag(99);  // not marked written: must not be applied
  auto lines = op.initExtraText(5);
  auto run = lines[1].initRuns(1)[0];
  run.setOffset(3);
  const kj::byte text[] = {'a', 'b'};
  run.setBytes(kj::arrayPtr(text, 2));

  mqs_pending_operation out;
  std::memset(&out, 0x5a, sizeof out);
  mqs_pending_operation before = out;
  apply(op.asReader(), out);
  CHECK(out.status == 2);
  CHECK(out.desired_tag == 77);
  CHECK(out.actual_tag == before.actual_tag);
  CHECK(out.extra_text[1][3] == 'a');
  CHECK(out.extra_text[1][4] == 'b');
  CHECK(out.extra_text[1][2] == before.extra_text[1][2]);
  CHECK(std::memcmp(out.extra_text[0], before.extra_text[0], sizeof out.extra_text[0]) == 0);

  // A run past the end of its 64-byte line, after fields that would otherwise be applied.
  op.setStatus(1);
  auto bad = lines[4].initRuns(1)[0];
  bad.setOffset(sizeof out.extra_text[4] - 1);
  bad.setBytes(kj::arrayPtr(text, 2));
  mqs_pending_operation applied = out;
  CHECK_THROWS_AS(apply(op.asReader(), out), mqd::ProxyError);
  CHECK(std::memcmp(&out, &applied, sizeof out) == 0);
}

TEST_CASE("apply: a communicator or a process location is written in place, and a refused "
          "reply leaves it untouched") {
  const kj::byte text[] = {'w', 'x'};
  SUBCASE("communicator") {
    using C = mqd::wire::Communicator;
    capnp::MallocMessageBuilder message;
    auto c = message.initRoot<C>();
    c.setWritten(C::WRITTEN_SIZE | C::WRITTEN_UNIQUE_ID);
    c.setSize(4);
    c.setUniqueId(0x1000);
    c.setLocalRank(9);  // not marked written: must not be applied
    auto run = c.initName().initRuns(1)[0];
    run.setOffset(1);
    run.setBytes(kj::arrayPtr(text, 2));
    mqs_communicator out;
    std::memset(&out, 0x5a, sizeof out);
    mqs_communicator before = out;
    apply(c.asReader(), out);
    CHECK(out.size == 4);
    CHECK(out.unique_id == 0x1000);
    CHECK(out.local_rank == before.local_rank);
    CHECK(out.name[0] == before.name[0]);
    CHECK(out.name[1] == 'w');
    CHECK(out.name[2] == 'x');

    // A name run past the field, and (separately) an id too wide for this debugger's
    // mqs_taddr_t: nothing of the reply is applied.
    c.setSize(8);
    run.setOffset(sizeof out.name - 1);
    mqs_communicator applied = out;
    CHECK_THROWS_AS(apply(c.asReader(), out), mqd::ProxyError);
    CHECK(std::memcmp(&out, &applied, sizeof out) == 0);
    if (sizeof(mqs_taddr_t) < 8) {
      run.setOffset(1);
      c.setUniqueId(0x7f5a10000000ull);
      CHECK_THROWS_AS(apply(c.asReader(), out), mqd::ProxyError);
      CHECK(std::memcmp(&out, &applied, sizeof out) == 0);
    }
  }
  SUBCASE("process location") {
    using L = mqd::wire::ProcessLocation;
    capnp::MallocMessageBuilder message;
    auto l = message.initRoot<L>();
    l.setWritten(L::WRITTEN_PID);
    l.setPid(4242);
    auto image = l.initImageName().initRuns(1)[0];
    image.setOffset(0);
    image.setBytes(kj::arrayPtr(text, 2));
    mqs_process_location out;
    std::memset(&out, 0x5a, sizeof out);
    mqs_process_location before = out;
    apply(l.asReader(), out);
    CHECK(out.pid == 4242);
    CHECK(out.image_name[0] == 'w');
    CHECK(out.image_name[2] == before.image_name[2]);
    CHECK(std::memcmp(out.host_name, before.host_name, sizeof out.host_name) == 0);

    // The host name's run does not fit: the pid and the image name are not applied either.
    l.setPid(7);
    image.setOffset(5);
    auto host = l.initHostName().initRuns(1)[0];
    host.setOffset(sizeof out.host_name);
    host.setBytes(kj::arrayPtr(text, 2));
    mqs_process_location applied = out;
    CHECK_THROWS_AS(apply(l.asReader(), out), mqd::ProxyError);
    CHECK(std::memcmp(&out, &applied, sizeof out) == 0);
  }
}
