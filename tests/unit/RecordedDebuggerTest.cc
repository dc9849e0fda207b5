// RecordedDebugger: the server's Debugger requests during a replay are answered from the
// recording by content: memory by address range within the process's epoch, look-ups in
// whichever form they were recorded; what was not recorded is refused the recorded way, and
// counted.
#include <doctest/doctest.h>

#include <capnp/schema.h>

#include <capnp/message.h>
#include <kj/async.h>

#include <functional>
#include <string>

#include "Bulk.h"
#include "RecordFile.h"
#include "RecordedDebugger.h"
#include "ServerProcess.h"
#include "mqs_interface.h"

using namespace mqd;
using namespace mqd::client;
using namespace mqd::replay;

namespace {

constexpr int kRefused = 1002;  // what the recorded debugger answered for unreadable memory
// Methods by their ordinals in mqd.capnp.
template <typename Interface>
uint16_t ordinal(const char* method) {
  return capnp::Schema::from<Interface>().getMethodByName(method).getIndex();
}
const uint16_t kUpdate = ordinal<wire::Session>("updateCommunicatorList");
const uint16_t kFindSymbol = ordinal<wire::Debugger>("findSymbol");
const uint16_t kFetchData = ordinal<wire::Debugger>("fetchData");
const uint16_t kFetchBlocks = ordinal<wire::Debugger>("fetchBlocks");
const uint16_t kLookUp = ordinal<wire::Debugger>("lookUp");

// Writes a recording of the given entries (each filled in by a function).
class RecordingBuilder {
 public:
  explicit RecordingBuilder(const std::string& path) : writer_(path) {
    capnp::MallocMessageBuilder header;
    header.initRoot<record::Header>().setFormatVersion(record::FORMAT_VERSION);
    writer_.add(header);
  }
  void add(const std::function<void(record::Entry::Builder)>& fill) {
    capnp::MallocMessageBuilder message;
    fill(message.initRoot<record::Entry>());
    writer_.add(message);
  }
  void update(uint64_t process) {
    add([&](record::Entry::Builder e) {
      auto call = e.initSessionCall();
      call.setMethod(kUpdate);
      call.getParams().initAs<wire::Session::UpdateCommunicatorListParams>().setProcess(process);
    });
  }
  // A block the debugger read whole, its bytes `first`, `first`+1, ...
  void block(uint64_t process, uint64_t address, uint32_t size, unsigned char first) {
    add([&](record::Entry::Builder e) {
      auto call = e.initDebuggerCall();
      call.setMethod(kFetchBlocks);
      auto p = call.getParams().initAs<wire::Debugger::FetchBlocksParams>();
      p.setProcess(process);
      auto b = p.initBlocks(1)[0];
      b.setAddress(address);
      b.setSize(size);
      b.setNeededAddress(address);
      b.setNeededSize(8);
      auto answer = call.getResults().initAs<wire::Debugger::FetchBlocksResults>().initBlocks(1)[0];
      answer.setRc(mqs_ok);
      answer.setAddress(address);
      std::vector<unsigned char> bytes(size);
      for (uint32_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(first + i);
      setBulk(answer.initData(), kj::arrayPtr(bytes.data(), bytes.size()), true);
    });
  }
  void refusedRead(uint64_t process, uint64_t address, int32_t size) {
    add([&](record::Entry::Builder e) {
      auto call = e.initDebuggerCall();
      call.setMethod(kFetchData);
      auto p = call.getParams().initAs<wire::Debugger::FetchDataParams>();
      p.setProcess(process);
      p.setAddress(address);
      p.setSize(size);
      call.getResults().initAs<wire::Debugger::FetchDataResults>().setRc(kRefused);
    });
  }
  // A block answered with mqs_ok whose raw bytes are fewer than the size it declares: what a
  // damaged or forged recording can hold, never what the shim writes.
  void damagedBlock(uint64_t process, uint64_t address) {
    add([&](record::Entry::Builder e) {
      auto call = e.initDebuggerCall();
      call.setMethod(kFetchBlocks);
      auto p = call.getParams().initAs<wire::Debugger::FetchBlocksParams>();
      p.setProcess(process);
      p.initBlocks(1)[0].setAddress(address);
      auto answer = call.getResults().initAs<wire::Debugger::FetchBlocksResults>().initBlocks(1)[0];
      answer.setRc(mqs_ok);
      answer.setAddress(address);
      auto data = answer.initData();
      data.setSize(64);
      data.initRaw(8);
    });
  }
  void flush() { writer_.flush(); }

 private:
  RecordWriter writer_;
};

// A recording of process 1 over two epochs, with look-ups in both forms.
std::string makeRecording(harness::TempDir& dir) {
  std::string path = dir / "r.mqdrec";
  RecordingBuilder r(path);
  r.update(1);
  r.block(1, 0x10000, 0x1000, 0);
  r.refusedRead(1, 0x50000, 4);
  r.add([](record::Entry::Builder e) {
    auto call = e.initDebuggerCall();
    call.setMethod(kFindSymbol);
    auto p = call.getParams().initAs<wire::Debugger::FindSymbolParams>();
    p.setImage(1);
    p.setName("MPIR_Ignore_queues");
    p.setWantAddress(true);
    auto a = call.getResults().initAs<wire::Debugger::FindSymbolResults>();
    a.setRc(mqs_ok);
    a.initAddress().setValue(0x4242);
  });
  r.add([](record::Entry::Builder e) {
    auto call = e.initDebuggerCall();
    call.setMethod(kLookUp);
    auto p = call.getParams().initAs<wire::Debugger::LookUpParams>();
    p.setImage(1);
    auto l = p.initLookups(3);
    l[0].initType().setName("opal_list_t");
    auto field = l[1].initField();
    field.initType().setName("opal_list_t");
    field.setField("opal_list_length");
    l[2].initSizeOf().setName("opal_list_t");
    auto answers = call.getResults().initAs<wire::Debugger::LookUpResults>().initAnswers(3);
    for (auto a : answers) a.initAddress().setUntouched();
    answers[0].setType(7);
    answers[1].setValue(24);
    answers[2].setValue(40);
  });
  r.update(1);
  r.block(1, 0x10000, 0x1000, 100);
  r.flush();
  return path;
}

}  // namespace

TEST_CASE("RecordedDebugger: memory by range and epoch, look-ups in any recorded form") {
  harness::TempDir dir;
  RecordReader recording(makeRecording(dir));
  RecordedDebugger answers(recording);
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  wire::Debugger::Client debugger = answers.capability(false);

  auto fetch = [&](uint64_t address, int size, int* rc) {
    auto request = debugger.fetchDataRequest();
    request.setProcess(1);
    request.setAddress(address);
    request.setSize(size);
    auto response = request.send().wait(ws);
    *rc = response.getRc();
    auto data = response.getData();
    return std::vector<unsigned char>(data.begin(), data.end());
  };
  int rc = -1;

  answers.beginEpoch(1);  // the replay's first update of process 1
  auto bytes = fetch(0x10100, 4, &rc);
  CHECK(rc == mqs_ok);
  CHECK(bytes == std::vector<unsigned char>{0x00, 0x01, 0x02, 0x03});
  fetch(0x50000, 4, &rc);
  CHECK(rc == kRefused);                 // refused as recorded
  CHECK(answers.counts().unrecorded == 0);
  fetch(0x90000, 4, &rc);
  CHECK(rc == kRefused);                 // never asked: refused the way the debugger refused
  CHECK(answers.counts().unrecorded == 1);

  answers.beginEpoch(1);  // the second update: the memory of the second epoch
  bytes = fetch(0x10100, 4, &rc);
  CHECK(rc == mqs_ok);
  CHECK(bytes == std::vector<unsigned char>{100, 101, 102, 103});

  // A bigger block than was recorded: the recorded window that holds the needed range.
  auto blocks = debugger.fetchBlocksRequest();
  blocks.setProcess(1);
  auto b = blocks.initBlocks(1)[0];
  b.setAddress(0);
  b.setSize(0x40000);
  b.setNeededAddress(0x10ff8);
  b.setNeededSize(8);
  auto blocksAnswer = blocks.send().wait(ws);
  auto got = blocksAnswer.getBlocks()[0];
  CHECK(got.getRc() == mqs_ok);
  CHECK(got.getAddress() == 0x10000);
  CHECK(readBulk(got.getData()).size() == 0x1000);

  // Recorded as a batch, asked one by one (and the other way round).
  auto type = debugger.findTypeRequest();
  type.setImage(1);
  type.setName("opal_list_t");
  uint64_t token = type.send().wait(ws).getType();
  CHECK(token == 7);
  auto field = debugger.fieldOffsetRequest();
  field.setType(token);
  field.setField("opal_list_length");
  CHECK(field.send().wait(ws).getOffset() == 24);
  auto size = debugger.sizeOfRequest();
  size.setType(token);
  CHECK(size.send().wait(ws).getSize() == 40);
  auto batch = debugger.lookUpRequest();
  batch.setImage(1);
  batch.initLookups(1)[0].setSymbol("MPIR_Ignore_queues");
  auto batchAnswer = batch.send().wait(ws);
  auto symbol = batchAnswer.getAnswers()[0];
  CHECK(symbol.getRc() == mqs_ok);
  CHECK(symbol.getAddress().getValue() == 0x4242);

  // Nothing recorded at all for this kind of request: an error that names it.
  auto error = debugger.errorStringRequest();
  error.setCode(5);
  CHECK_THROWS_WITH_AS(error.send().wait(ws), doctest::Contains("no answer to errorString"),
                       kj::Exception);
  CHECK(answers.counts().unrecorded == 2);
  CHECK(answers.counts().otherEpoch == 0);
}

TEST_CASE("RecordedDebugger: a damaged recorded answer is the recording's error, naming the entry") {
  harness::TempDir dir;
  std::string path = dir / "damaged.mqdrec";
  {
    RecordingBuilder r(path);
    r.update(1);
    r.block(1, 0x10000, 0x100, 0);
    r.damagedBlock(1, 0x20000);
    r.flush();
  }
  RecordReader recording(path);
  // Entries: the header is not one; update, the good block, then the damaged one (entry 3).
  CHECK_THROWS_WITH_AS(RecordedDebugger{recording},
                       doctest::Contains("entry 3 (the debugger's answer to fetchBlocks) is "
                                         "damaged: bulk size mismatch"),
                       RecordFileError);
}
