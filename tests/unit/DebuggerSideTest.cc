#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "DebuggerSide.h"

using mqd::client::DebuggerSide;

namespace {

// The debugger's fetch_data over memory readable in [0x10000, 0x12000) only, each byte its
// address's low bits; every read it is asked is recorded.
std::vector<std::pair<uint64_t, int>> reads;

int fetchData(mqs_process*, mqs_taddr_t address, int size, void* out) {
  reads.push_back({address, size});
  if (address < 0x10000 || address + static_cast<uint64_t>(size) > 0x12000) {
    return mqs_no_information;
  }
  auto* bytes = static_cast<unsigned char*>(out);
  for (int i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(address + i);
  return mqs_ok;
}

}  // namespace

TEST_CASE("DebuggerSide: a block that is its needed range is read once, a refusal included") {
  DebuggerSide side;
  mqs_process_callbacks table;
  std::memset(&table, 0, sizeof table);
  table.mqs_fetch_data_fp = fetchData;
  int handle = 0;
  uint64_t process = side.processes.tokenOf(reinterpret_cast<mqs_process*>(&handle));
  side.setProcessCallbacks(process, &table);

  reads.clear();
  auto refused = side.readBlock(process, 0x20000, 4096, 0x20000, 4096);
  CHECK(refused.rc == mqs_no_information);
  CHECK(refused.bytes.empty());
  CHECK(reads.size() == 1);  // the read was the answer: not asked again

  reads.clear();
  auto whole = side.readBlock(process, 0x10000, 4096, 0x10000, 4096);
  CHECK(whole.rc == mqs_ok);
  CHECK(whole.address == 0x10000);
  CHECK(whole.bytes.size() == 4096);
  CHECK(reads.size() == 1);

  // A block past the readable end, for a needed range inside it: the needed range decides,
  // and the readable pages around it come too.
  reads.clear();
  auto part = side.readBlock(process, 0x11000, 8192, 0x11010, 8);
  CHECK(part.rc == mqs_ok);
  CHECK(part.address == 0x11000);
  CHECK(part.bytes.size() == 4096);
  CHECK(reads.size() > 1);
}
