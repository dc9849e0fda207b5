// What the server captures from the DLL's buffer, applied by the shim onto the debugger's:
// only the fields and bytes the DLL wrote may change.
#include <doctest/doctest.h>

#include <capnp/message.h>

#include <cstring>
#include <memory>

#include "OutputApply.h"
#include "OutputCapture.h"

using namespace mqd;

TEST_CASE("round trip: pending operation with untouched fields") {
  mqs_pending_operation dll;
  server::prepare(dll);
  dll.status = mqs_st_matched;
  dll.desired_local_rank = -1;
  dll.tag_wild = 1;  // desired_tag deliberately not written
  dll.desired_length = 4096;
  dll.buffer = 0x1000;
  std::strcpy(dll.extra_text[0], "Receive: 0x1000");
  dll.extra_text[3][0] = '\0';

  capnp::MallocMessageBuilder message;
  auto op = message.initRoot<wire::PendingOperation>();
  server::capture(dll, op);

  mqs_pending_operation debugger;
  std::memset(&debugger, 0x33, sizeof debugger);
  mqs_pending_operation before = debugger;
  client::apply(op.asReader(), debugger);

  CHECK(debugger.status == mqs_st_matched);
  CHECK(debugger.desired_local_rank == -1);
  CHECK(debugger.tag_wild == 1);
  CHECK(debugger.desired_tag == before.desired_tag);  // untouched
  CHECK(debugger.desired_length == 4096);
  CHECK(debugger.buffer == 0x1000);
  CHECK(debugger.actual_tag == before.actual_tag);  // untouched
  CHECK(std::strcmp(debugger.extra_text[0], "Receive: 0x1000") == 0);
  CHECK(debugger.extra_text[0][20] == 0x33);  // bytes after the NUL untouched
  CHECK(debugger.extra_text[3][0] == '\0');
  CHECK(debugger.extra_text[3][1] == 0x33);
  CHECK(std::memcmp(debugger.extra_text[4], before.extra_text[4], 64) == 0);
}

TEST_CASE("round trip: communicator and process location") {
  mqs_communicator dll;
  server::prepare(dll);
  dll.unique_id = 42;
  dll.size = 4;
  std::strcpy(dll.name, "MPI_COMM_WORLD");
  capnp::MallocMessageBuilder message;
  auto c = message.initRoot<wire::Communicator>();
  server::capture(dll, c);
  mqs_communicator debugger;
  std::memset(&debugger, 0x11, sizeof debugger);
  client::apply(c.asReader(), debugger);
  CHECK(debugger.unique_id == 42);
  CHECK(debugger.size == 4);
  mqs_tword_t untouched;  // what the DLL left alone keeps the debugger's bytes, at any width
  std::memset(&untouched, 0x11, sizeof untouched);
  CHECK(debugger.local_rank == untouched);
  CHECK(std::strcmp(debugger.name, "MPI_COMM_WORLD") == 0);
  CHECK(debugger.name[40] == 0x11);

  auto location = std::make_unique<mqs_process_location>();
  server::prepare(*location);
  std::strcpy(location->host_name, "node1");
  capnp::MallocMessageBuilder message2;
  auto l = message2.initRoot<wire::ProcessLocation>();
  server::capture(*location, l);
  auto out = std::make_unique<mqs_process_location>();
  std::memset(out.get(), 0, sizeof *out);
  out->pid = 99;
  client::apply(l.asReader(), *out);
  CHECK(out->pid == 99);  // not written by the DLL
  CHECK(std::strcmp(out->host_name, "node1") == 0);
}

TEST_CASE("round trip: group array, written elements only, bounded by the known size") {
  server::GroupBuffer buffer(8);
  buffer.data()[0] = 3;
  buffer.data()[1] = 1;
  buffer.data()[3] = 0;  // element 2 left unwritten
  capnp::MallocMessageBuilder message;
  auto results = message.initRoot<wire::Session::GetCommGroupResults>();
  buffer.capture(results);
  CHECK(results.getRanks().size() == 4);
  int debugger[6] = {-5, -5, -5, -5, -5, -5};
  client::applyGroup(results.asReader().getRanks(), results.asReader().getWritten(), debugger, 3);
  CHECK(debugger[0] == 3);
  CHECK(debugger[1] == 1);
  CHECK(debugger[2] == -5);
  CHECK(debugger[3] == -5);  // beyond the limit the debugger was told
}

TEST_CASE("round trip: int outputs") {
  int sequence;
  server::prepare(sequence);
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<wire::OutInt>();
  server::capture(sequence, out);
  int debugger = 7;
  client::apply(out.asReader(), &debugger);
  CHECK(debugger == 7);
  sequence = 0;
  server::capture(sequence, out);
  client::apply(out.asReader(), &debugger);
  CHECK(debugger == 0);
  client::apply(out.asReader(), nullptr);  // the debugger passed no buffer: nothing happens
}

TEST_CASE("GroupBuffer: sized for the reported communicator, within fixed bounds") {
  using mqd::server::GroupBuffer;
  CHECK(GroupBuffer::capacityFor(-1) == GroupBuffer::kMinCapacity);  // not reported
  CHECK(GroupBuffer::capacityFor(3) == GroupBuffer::kMinCapacity);
  CHECK(GroupBuffer::capacityFor(100000) == 100000);
  // A size read from a corrupt or hostile target is not an allocation size.
  CHECK(GroupBuffer::capacityFor(2147483647) == GroupBuffer::kMaxCapacity);
}
