// mqd-record-tamper: a copy of a recording (MQD_PROXY_RECORD) with one thing changed, for the
// test that `mqd-proxy replay` notices (tests/e2e/e2e_replay.py):
//
//   mqd-record-tamper IN OUT memory   every byte of target memory the debugger answered is 0
//   mqd-record-tamper IN OUT result   the first recorded mqs_update_communicator_list that
//                                     returned mqs_ok says it returned mqs_no_information
//   mqd-record-tamper IN OUT damage   the first block of target memory the debugger answered
//                                     holds one byte fewer than its declared size (a damaged
//                                     recording: replay must refuse it, not crash)
//
// Exit status 0 when the copy was written (and something was changed), 1 otherwise.
#include <capnp/message.h>
#include <capnp/schema.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "Bulk.h"
#include "RecordFile.h"
#include "mqs_interface.h"

using namespace mqd;
using namespace mqd::client;

namespace {

// Debugger and Session methods, by their ordinals in mqd.capnp.
template <typename Interface>
uint16_t ordinal(const char* method) {
  return capnp::Schema::from<Interface>().getMethodByName(method).getIndex();
}
const uint16_t kFetchData = ordinal<wire::Debugger>("fetchData");
const uint16_t kFetchBlocks = ordinal<wire::Debugger>("fetchBlocks");
const uint16_t kUpdateCommunicatorList = ordinal<wire::Session>("updateCommunicatorList");

bool zeroMemory(record::DebuggerCall::Builder call) {
  auto results = call.getResults();
  if (call.getMethod() == kFetchData) {
    auto r = results.getAs<wire::Debugger::FetchDataResults>();
    auto data = r.getData();
    std::memset(data.begin(), 0, data.size());
    return data.size() > 0;
  }
  if (call.getMethod() == kFetchBlocks) {
    bool changed = false;
    for (auto block : results.getAs<wire::Debugger::FetchBlocksResults>().getBlocks()) {
      if (block.getRc() != mqs_ok) continue;
      size_t size = readBulk(block.getData().asReader()).size();
      auto zeros = kj::heapArray<kj::byte>(size);
      std::memset(zeros.begin(), 0, size);
      setBulk(block.initData(), zeros, false);
      changed |= size > 0;
    }
    return changed;
  }
  return false;
}

bool damageBlock(record::DebuggerCall::Builder call) {
  if (call.getMethod() != kFetchBlocks) return false;
  for (auto block : call.getResults().getAs<wire::Debugger::FetchBlocksResults>().getBlocks()) {
    auto data = block.getData();
    if (block.getRc() != mqs_ok || data.getSize() == 0) continue;
    data.initRaw(data.getSize() - 1);
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc == 4 ? argv[3] : "";
  if (mode != "memory" && mode != "result" && mode != "damage") {
    std::fprintf(stderr, "usage: mqd-record-tamper IN OUT memory|result|damage\n");
    return 2;
  }
  try {
    RecordReader in(argv[1]);
    RecordWriter out(argv[2]);
    capnp::MallocMessageBuilder header;
    header.setRoot(in.header());
    out.add(header);
    size_t changed = 0;
    for (const record::Entry::Reader& e : in.entries()) {
      capnp::MallocMessageBuilder message;
      message.setRoot(e);
      auto entry = message.getRoot<record::Entry>();
      if (mode == "memory" && entry.isDebuggerCall()) {
        if (zeroMemory(entry.getDebuggerCall())) ++changed;
      } else if (mode == "damage" && changed == 0 && entry.isDebuggerCall()) {
        if (damageBlock(entry.getDebuggerCall())) ++changed;
      } else if (mode == "result" && changed == 0 && entry.isSessionReturn() &&
                 entry.getSessionReturn().getMethod() == kUpdateCommunicatorList &&
                 !entry.getSessionReturn().hasFailure()) {
        auto r = entry.getSessionReturn().getResults()
                     .getAs<wire::Session::UpdateCommunicatorListResults>();
        if (r.getRc() == mqs_ok) {
          r.setRc(mqs_no_information);
          ++changed;
        }
      }
      out.add(message);
      if (out.pendingMessages() >= 1024) out.flush();
    }
    out.flush();
    std::printf("mqd-record-tamper: %s: %zu entries changed\n", argv[2], changed);
    return changed > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mqd-record-tamper: %s\n", e.what());
    return 1;
  }
}
