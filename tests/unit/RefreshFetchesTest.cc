#include <doctest/doctest.h>

#include "RefreshFetches.h"

using mqd::client::DebuggerSide;
using mqd::client::RefreshFetches;

// The listener alone: reads told to DebuggerSide::onRead as readBlock tells them.

namespace {

DebuggerSide::Block readOk(uint64_t address, uint32_t size) {
  DebuggerSide::Block b;
  b.rc = mqs_ok;
  b.address = address;
  b.bytes.assign(size, 7);
  return b;
}

}  // namespace

TEST_CASE("RefreshFetches: keeps the fetches of its processes, not aside, within its bound, and "
          "gives the listener back") {
  DebuggerSide side;
  int earlier = 0;
  side.onRead = [&](uint64_t, uint64_t, uint32_t, uint64_t, uint32_t, bool,
                    const DebuggerSide::Block&) { ++earlier; };
  {
    RefreshFetches fetched(side, {2, 3}, 8192);
    // Process 2: a block of 4 KiB whole, a block that ran into unmapped memory (its readable
    // pages), a refusal of the 8 bytes the server needed, and a read aside (not kept).
    side.onRead(2, 0x10000, 4096, 0x10010, 8, false, readOk(0x10000, 4096));
    side.onRead(2, 0x20000, 8192, 0x21000, 8, false, readOk(0x21000, 1024));
    DebuggerSide::Block refused;
    refused.rc = -5;
    side.onRead(2, 0x30000, 4096, 0x30040, 8, false, refused);
    side.onRead(2, 0x40000, 8, 0x40000, 8, true, readOk(0x40000, 8));
    // Process 1 is not one of them; process 3 meets the bound.
    side.onRead(1, 0x10000, 4096, 0x10000, 8, false, readOk(0x10000, 4096));
    side.onRead(3, 0x50000, 4096, 0x50000, 8, false, readOk(0x50000, 4096));
    CHECK(earlier == 6);  // the listener before it hears every read

    CHECK_FALSE(fetched.incomplete(2));
    CHECK(fetched.incomplete(3));
    CHECK(fetched.take(3).empty());
    CHECK(fetched.take(1).empty());
    auto two = fetched.take(2);
    REQUIRE(two.size() == 3);
    CHECK(two[0].window.address == 0x10000);
    CHECK(two[0].window.size == 4096);
    CHECK(two[1].window.address == 0x21000);  // the window it holds, whole
    CHECK(two[1].window.size == 1024);
    CHECK(two[2].window.address == 0x30040);  // the range the refusal answered
    CHECK(two[2].window.size == 8);
    CHECK(two[2].block.rc == -5);
    CHECK(fetched.take(2).empty());  // taken out
  }
  REQUIRE(side.onRead);
  side.onRead(2, 0x10000, 4096, 0x10000, 8, false, readOk(0x10000, 4096));
  CHECK(earlier == 7);
}
