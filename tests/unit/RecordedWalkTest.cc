#include <doctest/doctest.h>

#include <capnp/message.h>

#include <memory>

#include "Bulk.h"
#include "ProxyErrors.h"
#include "RecordedWalk.h"
#include "WalkLimits.h"
#include "mqd_proxy.h"
#include "mqs_interface.h"

using namespace mqd;
using mqd::client::RecordedWalk;

namespace {

// A walk of two communicators; the first has 2 receives, the second none, and its
// next_communicator ends the list.
void buildWalk(capnp::MessageBuilder& m) {
  auto w = m.initRoot<wire::CommunicatorWalk>();
  w.initSetup().setRc(mqs_ok);
  auto comms = w.initCommunicators(2);
  for (unsigned c = 0; c < 2; ++c) {
    comms[c].initGet().setRc(mqs_ok);
    comms[c].setHasGroup(true);
    comms[c].initGroup().setRc(mqs_ok);
    auto queues = comms[c].initQueues(3);
    for (unsigned q = 0; q < 3; ++q) {
      queues[q].initSetup().setRc(mqs_ok);
      unsigned n = (c == 0 && q == 1) ? 2 : 0;
      auto ops = queues[q].initOperations(n + 1);
      for (unsigned i = 0; i < n; ++i) ops[i].setRc(mqs_ok);
      ops[n].setRc(mqs_end_of_list);
    }
    comms[c].setHasNext(true);
    comms[c].initNext().setRc(c == 0 ? mqs_ok : mqs_end_of_list);
  }
  auto texts = w.initErrorTexts(1);
  texts[0].setCode(1);
  texts[0].initText().setText("no information");
}

wire::Bulk::Reader asBulk(capnp::MallocMessageBuilder& holder, capnp::MessageBuilder& walk) {
  auto b = holder.initRoot<wire::Bulk>();
  setBulkMessage(b, walk, true);
  return b.asReader();
}

}  // namespace

TEST_CASE("RecordedWalk: serves the recorded path, and a cursor says where the debugger left it") {
  capnp::MallocMessageBuilder walk, holder;
  buildWalk(walk);
  RecordedWalk w(asBulk(holder, walk));
  REQUIRE(w.errorTexts().size() == 1);
  CHECK(w.errorTexts()[0].getText().getText() == kj::StringPtr("no information"));

  wire::RecordedCommunicator::Reader comm;
  wire::RecordedRc::Reader rc;
  wire::RecordedOperation::Reader op;
  CHECK_FALSE(w.getCommunicator(&comm));  // before setup_communicator_iterator: not recorded
  REQUIRE(w.setupCommunicatorIterator(&rc));
  REQUIRE(w.getCommunicator(&comm));
  CHECK_FALSE(w.nextOperation(&op));  // no queue chosen: the DLL decides, not the record
  CHECK_FALSE(w.setupOperationIterator(7, &rc));
  REQUIRE(w.setupOperationIterator(mqs_pending_receives, &rc));
  REQUIRE(w.nextOperation(&op));
  CHECK(op.getRc() == mqs_ok);
  REQUIRE(w.nextOperation(&op));
  REQUIRE(w.nextOperation(&op));
  CHECK(op.getRc() == mqs_end_of_list);
  CHECK_FALSE(w.nextOperation(&op));  // past the recorded end

  capnp::MallocMessageBuilder c;
  auto cursor = c.initRoot<wire::WalkCursor>();
  w.cursor().writeTo(cursor);
  CHECK(cursor.getSetUp());
  CHECK(cursor.getCommunicator() == 0);
  CHECK(cursor.getOpClass() == mqs_pending_receives);
  CHECK(cursor.getOperations() == 3);

  REQUIRE(w.nextCommunicator(&rc));
  CHECK(rc.getRc() == mqs_ok);
  REQUIRE(w.getCommunicator(&comm));
  REQUIRE(w.nextCommunicator(&rc));
  CHECK(rc.getRc() == mqs_end_of_list);
  CHECK_FALSE(w.getCommunicator(&comm));  // past the last communicator
  REQUIRE(w.setupCommunicatorIterator(&rc));  // restarting is always on the record
  CHECK(w.getCommunicator(&comm));
}

TEST_CASE("RecordedWalk: a malformed record is a protocol error") {
  capnp::MallocMessageBuilder walk, holder;
  auto w = walk.initRoot<wire::CommunicatorWalk>();
  w.initSetup().setRc(mqs_ok);
  w.initCommunicators(1)[0].initQueues(2);  // a communicator has 0 or 3 queues
  int code = 0;
  try {
    RecordedWalk r(asBulk(holder, walk));
  } catch (const ProxyError& e) {
    code = e.code();
  }
  CHECK(code == MQD_PROXY_ERR_PROTOCOL);

  capnp::MallocMessageBuilder empty;
  auto b = empty.initRoot<wire::Bulk>();
  b.setSize(0);
  code = 0;
  try {
    RecordedWalk r(b.asReader());
  } catch (const ProxyError& e) {
    code = e.code();
  }
  CHECK(code == MQD_PROXY_ERR_PROTOCOL);
}

TEST_CASE("RecordedWalk: a walk larger than any a server records is a protocol error") {
  capnp::MallocMessageBuilder walk, holder;
  auto w = walk.initRoot<wire::CommunicatorWalk>();
  w.initSetup().setRc(mqs_ok);
  w.initCommunicators(static_cast<unsigned>(kMaxWalkCommunicators) + 1);
  int code = 0;
  try {
    RecordedWalk r(asBulk(holder, walk));
  } catch (const ProxyError& e) {
    code = e.code();
  }
  CHECK(code == MQD_PROXY_ERR_PROTOCOL);
}

TEST_CASE("RecordedWalk: a walk of tens of thousands of operations is served to its end") {
  // Cap'n Proto charges each traversal against a limit: serving must not re-traverse lists.
  constexpr unsigned kOps = 40000;
  capnp::MallocMessageBuilder walk, holder;
  auto w = walk.initRoot<wire::CommunicatorWalk>();
  w.initSetup().setRc(mqs_ok);
  auto comm = w.initCommunicators(1)[0];
  comm.initGet().setRc(mqs_ok);
  auto queues = comm.initQueues(3);
  for (unsigned q = 0; q < 3; ++q) {
    queues[q].initSetup().setRc(mqs_ok);
    auto ops = queues[q].initOperations(kOps + 1);
    for (unsigned i = 0; i < kOps; ++i) {
      ops[i].setRc(mqs_ok);
      ops[i].initOperation().setDesiredTag(static_cast<int64_t>(i));
    }
    ops[kOps].setRc(mqs_end_of_list);
  }
  auto r = std::make_unique<RecordedWalk>(asBulk(holder, walk));
  auto serve = [](RecordedWalk& from) {
    wire::RecordedRc::Reader rc;
    wire::RecordedOperation::Reader op;
    REQUIRE(from.setupCommunicatorIterator(&rc));
    unsigned served = 0;
    for (int q = 0; q < 3; ++q) {
      REQUIRE(from.setupOperationIterator(q, &rc));
      while (from.nextOperation(&op) && op.getRc() == mqs_ok) {
        if (op.getOperation().getDesiredTag() != static_cast<int64_t>(served % kOps)) {
          FAIL("operation out of order");
        }
        ++served;
      }
    }
    return served;
  };
  CHECK(serve(*r) == 3 * kOps);

  SUBCASE("served again from its start, epoch after epoch, after the first is gone") {
    // Each serving traverses the record once: sixty of them, through one reader, would pass
    // the traversal limit (64 Mi words); each copy has its own.
    std::unique_ptr<RecordedWalk> again = r->fromStart();
    r.reset();
    for (int epoch = 0; epoch < 60; ++epoch) {
      std::unique_ptr<RecordedWalk> next = again->fromStart();
      REQUIRE(serve(*again) == 3 * kOps);
      again = std::move(next);
    }
  }
}
