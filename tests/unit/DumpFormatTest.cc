// DumpFormat: `mqd-proxy replay` writes a dump exactly as the gdb front end does, in JSON and
// in text (tests/unit/data/replay-dump.*, made by the front end itself: see
// make-replay-dump.py), and reads char arrays as Python's "replace" decoding does.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "DumpFormat.h"

using namespace mqd::replay;

namespace {

std::string data(const char* name) {
  std::ifstream in(std::string(MQD_UNIT_DATA) + "/" + name, std::ios::binary);
  REQUIRE(in);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

mqs_pending_operation operation() {
  mqs_pending_operation op;
  std::memset(&op, 0, sizeof op);
  op.status = mqs_st_pending;
  op.desired_local_rank = op.desired_global_rank = op.actual_local_rank =
      op.actual_global_rank = 1;
  op.desired_tag = op.actual_tag = 7;
  op.desired_length = op.actual_length = 64;
  op.buffer = 0x7f001000;
  std::strcpy(op.extra_text[0], "Send: 0x1");
  return op;
}

QueueView queue(int rc, std::vector<mqs_pending_operation> ops, const char* error = "") {
  QueueView q;
  q.rc = rc;
  q.operations = std::move(ops);
  q.error = error;
  return q;
}

// The dump of make-replay-dump.py.
std::vector<ProcessView> sample() {
  ProcessView p;
  p.inferior = 2;
  p.pid = 1234;
  p.rank = 1;
  p.host = "node7";
  p.dll = "caf\xc3\xa9 \xff";
  CommunicatorView world;
  world.communicator.unique_id = 5;
  std::strcpy(world.communicator.name, "MPI_COMM_WORLD");
  world.communicator.local_rank = 1;
  world.communicator.size = 2;
  world.group = CommunicatorView::Group::Ranks;
  world.ranks = {0, 1};
  mqs_pending_operation matched = operation();
  matched.status = mqs_st_matched;
  matched.desired_local_rank = -1;
  matched.tag_wild = 1;
  matched.system_buffer = 1;
  std::memset(matched.extra_text, 0, sizeof matched.extra_text);
  std::strcpy(matched.extra_text[1], "x");
  world.queues[0] = queue(mqs_end_of_list, {operation()});
  world.queues[1] = queue(mqs_end_of_list, {matched});
  world.queues[2] = queue(mqs_no_information, {}, "no info");
  world.queues[2].setupFailed = true;
  CommunicatorView other;
  other.communicator.unique_id = 6;
  std::strcpy(other.communicator.name, "c");
  other.communicator.size = 1;
  other.group = CommunicatorView::Group::Error;
  other.groupRc = 9;
  other.groupError = "bad";
  other.queues[0] = queue(9, {}, "boom");
  other.queues[0].setupFailed = true;
  other.queues[1] = queue(9, {operation()}, "late");
  other.queues[2] = queue(mqs_end_of_list, {});
  CommunicatorView unknown;  // as MPICH's DLL shows communicators and unexpected messages
  unknown.communicator.unique_id = 7;
  std::strcpy(unknown.communicator.name, "--unnamed--");
  unknown.communicator.size = 4;
  mqs_pending_operation eager = operation();
  eager.status = mqs_st_complete;
  eager.desired_global_rank = eager.actual_global_rank = -1;
  eager.desired_length = 0;
  eager.actual_length = -1;
  eager.buffer = 0;
  std::memset(eager.extra_text, 0, sizeof eager.extra_text);
  unknown.queues[0] = queue(mqs_end_of_list, {});
  unknown.queues[1] = queue(mqs_end_of_list, {});
  unknown.queues[2] = queue(mqs_end_of_list, {eager});
  p.communicators = {world, other, unknown};
  p.error = "mqs_get_communicator: oops";
  ProcessView failed;
  failed.inferior = 3;
  failed.pid = 99;
  failed.failed = true;
  failed.error = "mqs_update_communicator_list failed: \"x\" (3)";
  return {p, failed};
}

}  // namespace

TEST_CASE("DumpFormat: JSON and text byte for byte as the gdb front end writes them") {
  CHECK(dumpJson(sample()) == data("replay-dump.json"));
  CHECK(dumpText(sample()) == data("replay-dump.txt"));
}

TEST_CASE("DumpFormat: bytes decoded as Python's bytes.decode(\"utf-8\", \"replace\")") {
  auto decode = [](const std::string& s) { return decodeLikePython(s.data(), s.size()); };
  // Expected values printed by CPython 3.11.
  CHECK(decode("caf\xc3\xa9") == U"caf\u00e9");
  CHECK(decode("\xe2\x82") == U"\uFFFD");                      // cut short: one replacement
  CHECK(decode("\xe2\x82" "A") == U"\uFFFD" "A");
  CHECK(decode("\xed\xa0\x80") == U"\uFFFD\uFFFD\uFFFD");      // a surrogate
  CHECK(decode("\xf0\x80") == U"\uFFFD\uFFFD");
  CHECK(decode("\xff\xfe") == U"\uFFFD\uFFFD");
  CHECK(decode("\xf0\x9f\x98\x80!") == U"\U0001F600!");
  CHECK(decode("\xf4\x90\x80\x80") == U"\uFFFD\uFFFD\uFFFD\uFFFD");  // above U+10FFFF
  CHECK(decode("\xe0\x80\x80") == U"\uFFFD\uFFFD\uFFFD");            // overlong
}
