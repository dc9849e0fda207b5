// SetUpRecall: what a record's proof rests on (the canonical answers, the digests of look-ups
// and of a process's inputs), and the records' file: kept, found, replaced and refuted.
#include <doctest/doctest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ServerProcess.h"
#include "SetUpRecall.h"

using mqd::LookupKey;
using mqd::client::DebuggerSide;
using mqd::client::SetUpRecall;
using mqd::harness::TempDir;

namespace {

const LookupKey kSymbol{LookupKey::Symbol, "MPIR_debug_typedefs_sizeof", 0, ""};
const LookupKey kType{LookupKey::Type, "mca_pml_base_request_t", 1, ""};
const LookupKey kField{LookupKey::Field, "mca_pml_base_request_t", 1, "req_addr"};

DebuggerSide::LookupResult symbolAt(uint64_t address) {
  DebuggerSide::LookupResult r;
  r.rc = mqs_ok;
  r.written = true;
  r.address = address;
  return r;
}

SetUpRecall::Answers answers(uint64_t symbol, uint64_t typeToken, int offset) {
  DebuggerSide::LookupResult type;
  type.type = typeToken;
  DebuggerSide::LookupResult field;
  field.value = offset;
  return {{kSymbol, SetUpRecall::canonical(kSymbol, symbolAt(symbol))},
          {kType, SetUpRecall::canonical(kType, type)},
          {kField, SetUpRecall::canonical(kField, field)}};
}

DebuggerSide::Block block(uint64_t address, std::vector<unsigned char> bytes) {
  DebuggerSide::Block b;
  b.rc = mqs_ok;
  b.address = address;
  b.bytes = std::move(bytes);
  return b;
}

// A record of one image and process: `symbol` is where the process's symbol resolved,
// `byte` the one byte its set-up read.
SetUpRecall::Record record(SetUpRecall& recall, uint64_t symbol, unsigned char byte) {
  SetUpRecall::Record r;
  std::vector<LookupKey> keys{kField, kSymbol, kType};
  r.lookupDigest = *SetUpRecall::digestOf(keys, answers(symbol, 7, 8));
  r.lookups = recall.share(keys);
  r.image.setUp = {mqs_ok, {}, {{SetUpRecall::Effect::PutInfo, {}},
                                {SetUpRecall::Effect::Dprints, "image set up"}}};
  r.image.hasQueues = {mqs_ok, {SetUpRecall::Message::Null, {}}, {}};
  SetUpRecall::ProcessOutcome p;
  SetUpRecall::Read read{symbol, 1, symbol, 1};
  SetUpRecall::ProcessInputs inputs(false, DebuggerSide::TypeSizes{});
  REQUIRE(inputs.read(read, block(symbol, {byte})));
  p.digest = inputs.finish();
  p.reads = {read};
  p.setUp = {mqs_ok, {}, {{SetUpRecall::Effect::PutInfo, {}}}};
  p.hasQueues = {mqs_ok, {SetUpRecall::Message::Text, "no queues in %s"}, {}};
  r.process = p;
  return r;
}

}  // namespace

TEST_CASE("set-up records: a type's handle is the session's own, an address is the process's") {
  // Two sessions hand out other type tokens for the same type: only whether it was found is
  // consumed. Address-space randomisation gives each process its own symbol addresses.
  std::vector<LookupKey> keys{kSymbol, kType, kField};
  auto digest = SetUpRecall::digestOf(keys, answers(0x1000, 7, 8));
  REQUIRE(digest);
  CHECK(SetUpRecall::digestOf(keys, answers(0x1000, 99, 8)) == digest);
  CHECK(SetUpRecall::digestOf(keys, answers(0x1000, 0, 8)) != digest);   // not found
  CHECK(SetUpRecall::digestOf(keys, answers(0x2000, 7, 8)) != digest);   // another process
  CHECK(SetUpRecall::digestOf(keys, answers(0x1000, 7, 16)) != digest);  // another layout
  // A look-up not answered now proves nothing.
  keys.push_back({LookupKey::SizeOf, "ompi_communicator_t", 1, ""});
  CHECK_FALSE(SetUpRecall::digestOf(keys, answers(0x1000, 7, 8)));
}

TEST_CASE("set-up records: a process's inputs are its byte order, type sizes and every byte") {
  SetUpRecall::Read read{0x1000, 4, 0x1000, 4};
  auto digestOf = [&](bool bigEndian, int pointerSize, std::vector<unsigned char> bytes) {
    DebuggerSide::TypeSizes sizes{};
    sizes[0] = pointerSize;
    SetUpRecall::ProcessInputs inputs(bigEndian, sizes);
    REQUIRE(inputs.read(read, block(0x1000, bytes)));
    return inputs.finish();
  };
  auto digest = digestOf(false, 8, {1, 2, 3, 4});
  CHECK(digestOf(false, 8, {1, 2, 3, 4}) == digest);
  CHECK(digestOf(true, 8, {1, 2, 3, 4}) != digest);
  CHECK(digestOf(false, 4, {1, 2, 3, 4}) != digest);
  CHECK(digestOf(false, 8, {1, 2, 3, 5}) != digest);
  // A read that failed or came back short is no proof: the set-up is not recorded.
  SetUpRecall::ProcessInputs inputs(false, DebuggerSide::TypeSizes{});
  CHECK_FALSE(inputs.read(read, block(0x1000, {1, 2})));
  DebuggerSide::Block failed = block(0x1000, {1, 2, 3, 4});
  failed.rc = 5;
  CHECK_FALSE(inputs.read(read, failed));
}

TEST_CASE("set-up records: kept in the state directory per DLL build, found by their answers") {
  TempDir dir;
  {
    SetUpRecall recall(dir.path(), "build-a");
    recall.keep(record(recall, 0x1000, 1));
    recall.keep(record(recall, 0x2000, 2));
    recall.save();
  }
  CHECK(::access((dir / "setups-build-a.capnp").c_str(), F_OK) == 0);
  SetUpRecall again(dir.path(), "build-a");
  auto found = again.find(answers(0x2000, 42, 8));  // another session's type token
  REQUIRE(found.size() == 1);
  const SetUpRecall::Record& r = *found.front();
  CHECK(r.image.setUp.putsInfo());
  CHECK(r.image.setUp.effects[1].bytes == "image set up");
  CHECK(r.image.hasQueues.message.kind == SetUpRecall::Message::Null);
  REQUIRE(r.process);
  CHECK(r.process->reads.size() == 1);
  CHECK(r.process->reads[0].address == 0x2000);
  CHECK(r.process->hasQueues.message.text == "no queues in %s");
  CHECK(again.find(answers(0x3000, 7, 8)).empty());  // a process never recorded
  // Another build of the DLL has records of its own.
  CHECK(SetUpRecall(dir.path(), "build-b").find(answers(0x2000, 7, 8)).empty());
  // Without a state directory nothing is kept.
  SetUpRecall none("", "build-a");
  none.keep(record(none, 0x1000, 1));
  CHECK(none.find(answers(0x1000, 7, 8)).empty());
}

TEST_CASE("set-up records: one per process part; an image's alone never hides them") {
  TempDir dir;
  SetUpRecall recall(dir.path(), "build-a");
  recall.keep(record(recall, 0x1000, 1));
  recall.keep(record(recall, 0x1000, 1));  // the same process again: replaced
  CHECK(recall.find(answers(0x1000, 7, 8)).size() == 1);
  recall.keep(record(recall, 0x1000, 2));  // processes sharing their addresses: both kept
  auto both = recall.find(answers(0x1000, 7, 8));
  REQUIRE(both.size() == 2);
  CHECK(both[0]->process->digest != both[1]->process->digest);
  SetUpRecall::Record imageOnly = record(recall, 0x1000, 1);
  imageOnly.process.reset();
  recall.keep(imageOnly);
  CHECK(recall.find(answers(0x1000, 7, 8)).size() == 2);
}

TEST_CASE("set-up records: a refuted record removes them all, for good") {
  TempDir dir;
  SetUpRecall recall(dir.path(), "build-a");
  recall.keep(record(recall, 0x1000, 1));
  recall.save();
  REQUIRE(::access((dir / "setups-build-a.capnp").c_str(), F_OK) == 0);
  recall.refute();
  CHECK(::access((dir / "setups-build-a.capnp").c_str(), F_OK) != 0);
  CHECK(recall.find(answers(0x1000, 7, 8)).empty());
  recall.keep(record(recall, 0x1000, 1));
  recall.save();
  CHECK(recall.find(answers(0x1000, 7, 8)).empty());
  CHECK(::access((dir / "setups-build-a.capnp").c_str(), F_OK) != 0);
}

TEST_CASE("set-up records: a damaged file is ignored and rewritten") {
  TempDir dir;
  {
    FILE* f = std::fopen((dir / "setups-build-a.capnp").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("not a message at all", f);
    std::fclose(f);
  }
  SetUpRecall recall(dir.path(), "build-a");
  CHECK(recall.find(answers(0x1000, 7, 8)).empty());
  recall.keep(record(recall, 0x1000, 1));
  recall.save();
  CHECK(SetUpRecall(dir.path(), "build-a").find(answers(0x1000, 7, 8)).size() == 1);
}
