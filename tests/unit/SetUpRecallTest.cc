// SetUpRecall: what a record's proof rests on (the canonical answers, the digests of look-ups
// and of a process's inputs), and the records' file: kept, found, replaced and refuted.
#include <doctest/doctest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize.h>

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

SetUpRecall::Answers answers(uint64_t symbol, uint64_t typeToken, int offset,
                             int symbolRc = mqs_ok) {
  DebuggerSide::LookupResult found = symbolAt(symbol);
  found.rc = symbolRc;
  found.written = symbolRc == mqs_ok;
  DebuggerSide::LookupResult type;
  type.type = typeToken;
  DebuggerSide::LookupResult field;
  field.value = offset;
  return {{kSymbol, found}, {kType, type}, {kField, field}};
}

// What Open MPI's image set-up consumes: types, fields, and whether a symbol exists; its
// process set-up takes the symbol's address.
const mqd::ConsumedLookups::Lookups kImageConsumed{{kField, false}, {kSymbol, false},
                                                  {kType, false}};
const mqd::ConsumedLookups::Lookups kProcessConsumed{{kSymbol, true}};

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
  r.lookupDigest = *SetUpRecall::digestOf(kImageConsumed, answers(symbol, 7, 8));
  r.lookups = recall.share(kImageConsumed);
  r.image.setUp = {mqs_ok, {}, {{SetUpRecall::Effect::PutInfo, {}},
                                {SetUpRecall::Effect::Dprints, "image set up"}}};
  r.image.hasQueues = {mqs_ok, {SetUpRecall::Message::Null, {}}, {}};
  SetUpRecall::ProcessOutcome p;
  p.lookupDigest = *SetUpRecall::digestOf(kProcessConsumed, answers(symbol, 7, 8));
  p.lookups = recall.share(kProcessConsumed);
  SetUpRecall::Read read{symbol, 1, symbol, 1};
  SetUpRecall::ProcessInputs inputs(false, DebuggerSide::TypeSizes{});
  REQUIRE(inputs.read(read, block(symbol, {byte})));
  p.digest = inputs.finish();
  p.reads = {read};
  p.setUp = {mqs_ok, {}, {{SetUpRecall::Effect::PutInfo, {}}}};
  p.hasQueues = {mqs_ok, {SetUpRecall::Message::Text, "no queues in %s"}, {}};
  p.anchor = SetUpRecall::anchorOf(kProcessConsumed, answers(symbol, 7, 8));
  r.process = p;
  return r;
}

}  // namespace

TEST_CASE("set-up records: a type's handle is the session's own, a taken address the process's") {
  // Two sessions hand out other type tokens for the same type: only whether it was found is
  // consumed. Address-space randomisation gives each process its own symbol addresses, which
  // count where the DLL took one.
  mqd::ConsumedLookups::Lookups taken{{kSymbol, true}, {kType, false}, {kField, false}};
  auto digest = SetUpRecall::digestOf(taken, answers(0x1000, 7, 8));
  REQUIRE(digest);
  CHECK(SetUpRecall::digestOf(taken, answers(0x1000, 99, 8)) == digest);
  CHECK(SetUpRecall::digestOf(taken, answers(0x1000, 0, 8)) != digest);   // not found
  CHECK(SetUpRecall::digestOf(taken, answers(0x2000, 7, 8)) != digest);   // another process
  CHECK(SetUpRecall::digestOf(taken, answers(0x1000, 7, 16)) != digest);  // another layout
  // A set-up that asked only whether the symbol exists: the same for every process, as long
  // as it is found; and never the same digest as one that took the address.
  auto rcOnly = SetUpRecall::digestOf(kImageConsumed, answers(0x1000, 7, 8));
  REQUIRE(rcOnly);
  CHECK(rcOnly != digest);
  CHECK(SetUpRecall::digestOf(kImageConsumed, answers(0x2000, 7, 8)) == rcOnly);
  CHECK(SetUpRecall::digestOf(kImageConsumed, answers(0x1000, 7, 8, 5)) != rcOnly);
  // A look-up not answered now proves nothing.
  taken[{LookupKey::SizeOf, "ompi_communicator_t", 1, ""}] = false;
  CHECK_FALSE(SetUpRecall::digestOf(taken, answers(0x1000, 7, 8)));
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
  // The image part took no address: both records answer an image of either process (or of
  // a third), in another session with its own type tokens.
  auto found = again.find(answers(0x2000, 42, 8));
  REQUIRE(found.size() == 2);
  CHECK(again.find(answers(0x3000, 7, 8)).size() == 2);
  const SetUpRecall::Record& r = *found.front();  // the newest
  CHECK(r.image.setUp.putsInfo());
  CHECK(r.image.setUp.effects[1].bytes == "image set up");
  CHECK(r.image.hasQueues.message.kind == SetUpRecall::Message::Null);
  REQUIRE(r.process);
  CHECK(r.process->reads.size() == 1);
  CHECK(r.process->reads[0].address == 0x2000);
  CHECK(r.process->hasQueues.message.text == "no queues in %s");
  // A process part serves only the process whose symbol resolved where it did.
  CHECK(SetUpRecall::lookupsProve(*r.process, answers(0x2000, 42, 8)));
  CHECK_FALSE(SetUpRecall::lookupsProve(*found.back()->process, answers(0x2000, 42, 8)));
  CHECK(SetUpRecall::lookupsProve(*found.back()->process, answers(0x1000, 42, 8)));
  CHECK_FALSE(SetUpRecall::lookupsProve(*r.process, answers(0x3000, 7, 8)));
  // An image whose symbol is missing consumed another answer.
  CHECK(again.find(answers(0x2000, 7, 8, 5)).empty());
  // Another build of the DLL has records of its own.
  CHECK(SetUpRecall(dir.path(), "build-b").find(answers(0x2000, 7, 8)).empty());
  // Without a state directory records serve the session that made them, and no file is
  // written.
  SetUpRecall none("", "build-a");
  none.keep(record(none, 0x1000, 1));
  none.save();
  CHECK(none.find(answers(0x1000, 7, 8)).size() == 1);
  // Without a build id, nothing is kept.
  SetUpRecall unknown(dir.path(), "");
  unknown.keep(record(unknown, 0x1000, 1));
  CHECK(unknown.find(answers(0x1000, 7, 8)).empty());
}

TEST_CASE("set-up records: an older shim's file, keyed otherwise, is ignored") {
  TempDir dir;
  {
    SetUpRecall recall(dir.path(), "build-a");
    recall.keep(record(recall, 0x1000, 1));
    recall.save();
  }
  std::string path = dir / "setups-build-a.capnp";
  // The same file without the mark that its records are keyed by what each set-up consumed.
  capnp::MallocMessageBuilder older;
  {
    FILE* f = std::fopen(path.c_str(), "r");
    REQUIRE(f != nullptr);
    std::string bytes;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
    std::fclose(f);
    REQUIRE(bytes.size() % 8 == 0);
    kj::ArrayPtr<const capnp::word> words(reinterpret_cast<const capnp::word*>(bytes.data()),
                                          bytes.size() / 8);
    capnp::FlatArrayMessageReader reader(words);
    older.setRoot(reader.getRoot<mqd::wire::SetUpRecords>());
  }
  older.getRoot<mqd::wire::SetUpRecords>().setConsumedOnly(false);
  {
    kj::Array<capnp::word> flat = capnp::messageToFlatArray(older);
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fwrite(flat.begin(), sizeof(capnp::word), flat.size(), f);
    std::fclose(f);
  }
  CHECK(SetUpRecall(dir.path(), "build-a").find(answers(0x1000, 7, 8)).empty());
}

TEST_CASE("set-up records: one per process part; an image's alone never hides them") {
  TempDir dir;
  SetUpRecall recall(dir.path(), "build-a");
  recall.keep(record(recall, 0x1000, 1));
  recall.keep(record(recall, 0x1000, 1));  // the same process again: replaced
  CHECK(recall.find(answers(0x1000, 7, 8)).size() == 1);
  {
    SetUpRecall job(dir.path(), "build-b");  // two ranks of one job: one image part, two kept
    job.keep(record(job, 0x1000, 1));
    job.keep(record(job, 0x2000, 1));
    CHECK(job.find(answers(0x3000, 7, 8)).size() == 2);
  }
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

TEST_CASE("set-up records: a process part moved to another rank of the program") {
  // Rank 1's symbol lies a whole number of pages from rank 0's: its answers prove rank 0's
  // process part moved by that distance, and its reads are proved there; any other difference
  // (a look-up answered otherwise, a distance within a page, a record whose outcome carries a
  // text) proves nothing.
  SetUpRecall recall("", "build-a");
  SetUpRecall::Record r = record(recall, 0x7f0000001000, 1);
  SetUpRecall::ProcessOutcome& p = *r.process;
  p.hasQueues.message = {SetUpRecall::Message::Null, {}};
  REQUIRE(p.anchor);
  CHECK(*p.anchor == 0x7f0000001000);
  CHECK_FALSE(SetUpRecall::shiftTo(p, answers(0x7f0000001000, 7, 8)));  // not moved: as it is
  auto shift = SetUpRecall::shiftTo(p, answers(0x7f0000046000 + 0x1000, 9, 8));
  REQUIRE(shift);
  CHECK(*shift == 0x46000);
  auto down = SetUpRecall::shiftTo(p, answers(0x7effff000000 + 0x1000, 9, 8));
  REQUIRE(down);
  CHECK(*down == uint64_t{0x7effff000000} - 0x7f0000000000);  // modulo 2^64
  CHECK_FALSE(SetUpRecall::shiftTo(p, answers(0x7f0000046010, 7, 8)));      // within a page
  CHECK_FALSE(SetUpRecall::shiftTo(p, answers(0x7f0000047000, 7, 8, 5)));   // not found
  // The moved reads: the bytes at the moved address, digested as the record's.
  SetUpRecall::ProcessInputs same(false, DebuggerSide::TypeSizes{});
  REQUIRE(same.read(p.reads[0], block(0x7f0000047000, {1}), *shift));
  CHECK(same.finish() == p.digest);
  SetUpRecall::ProcessInputs other(false, DebuggerSide::TypeSizes{});
  REQUIRE(other.read(p.reads[0], block(0x7f0000047000, {2}), *shift));
  CHECK(other.finish() != p.digest);
  SetUpRecall::ProcessInputs elsewhere(false, DebuggerSide::TypeSizes{});
  CHECK_FALSE(elsewhere.read(p.reads[0], block(0x7f0000001000, {1}), *shift));
  // A text may print an address: such a record serves its own process only.
  SetUpRecall::ProcessOutcome texted = p;
  texted.hasQueues.message = {SetUpRecall::Message::Text, "no queues in %s"};
  CHECK_FALSE(SetUpRecall::shiftTo(texted, answers(0x7f0000047000, 7, 8)));
  texted = p;
  texted.setUp.effects.push_back({SetUpRecall::Effect::Dprints, "set up at 0x7f0000001000"});
  CHECK_FALSE(SetUpRecall::shiftTo(texted, answers(0x7f0000047000, 7, 8)));
  texted = p;
  texted.warning = "byte order";
  CHECK_FALSE(SetUpRecall::shiftTo(texted, answers(0x7f0000047000, 7, 8)));
  // Two addresses taken: both must have moved by the same distance.
  const LookupKey kOther{LookupKey::Symbol, "ompi_mpi_communicators", 0, ""};
  SetUpRecall::ProcessOutcome two = p;
  mqd::ConsumedLookups::Lookups both{{kSymbol, true}, {kOther, true}};
  two.lookups = recall.share(both);
  auto withOther = [&](uint64_t symbol, uint64_t other) {
    SetUpRecall::Answers a = answers(symbol, 7, 8);
    a[kOther] = symbolAt(other);
    return a;
  };
  two.lookupDigest = *SetUpRecall::digestOf(both, withOther(0x7f0000001000, 0x7f0000201000));
  two.anchor = SetUpRecall::anchorOf(both, withOther(0x7f0000001000, 0x7f0000201000));
  CHECK(SetUpRecall::shiftTo(two, withOther(0x7f0000047000, 0x7f0000247000)) == *shift);
  CHECK_FALSE(SetUpRecall::shiftTo(two, withOther(0x7f0000047000, 0x7f0000248000)));
  // Without an anchor (an older file's record, or a set-up that took no address) nothing moves.
  SetUpRecall::ProcessOutcome unanchored = p;
  unanchored.anchor.reset();
  CHECK_FALSE(SetUpRecall::shiftTo(unanchored, answers(0x7f0000047000, 7, 8)));
}

TEST_CASE("set-up records: the anchor is kept in the file") {
  TempDir dir;
  {
    SetUpRecall recall(dir.path(), "build-a");
    recall.keep(record(recall, 0x7f0000001000, 1));
    recall.save();
  }
  SetUpRecall again(dir.path(), "build-a");
  auto found = again.find(answers(0x2000, 42, 8));
  REQUIRE(found.size() == 1);
  REQUIRE(found.front()->process);
  REQUIRE(found.front()->process->anchor);
  CHECK(*found.front()->process->anchor == 0x7f0000001000);
}
