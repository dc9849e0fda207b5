#include <doctest/doctest.h>

#include <capnp/message.h>

#include <algorithm>
#include <map>

#include "ProxyErrors.h"
#include "ReadAhead.h"
#include "mqd_proxy.h"

using mqd::client::DebuggerSide;
using mqd::client::kReadGap;
using mqd::client::ReadAhead;
using mqd::client::Window;

namespace {

// A target whose memory is readable in [base, base + size) only, each byte its address's low
// bits; it counts the debugger's reads and may refuse spans longer than `maxRead`.
struct FakeTarget {
  uint64_t base = 0x10000;
  uint64_t size = 0x10000;
  uint32_t maxRead = UINT32_MAX;
  std::vector<std::pair<uint64_t, uint32_t>> reads;

  DebuggerSide::Block read(uint64_t start, uint32_t n) {
    reads.push_back({start, n});
    DebuggerSide::Block b;
    if (start < base || start + n > base + size || n > maxRead) {
      b.rc = mqs_no_information;  // any refusal
      return b;
    }
    b.rc = mqs_ok;
    b.address = start;
    for (uint64_t a = start; a < start + n; ++a) b.bytes.push_back(static_cast<unsigned char>(a));
    return b;
  }
  mqd::client::ReadBlock reader() {
    return [this](uint64_t start, uint32_t n) { return read(start, n); };
  }
};

void checkWhole(const ReadAhead& r) {
  CHECK(r.block.rc == mqs_ok);
  CHECK(r.block.address == r.window.address);
  REQUIRE(r.block.bytes.size() == r.window.size);
  for (uint32_t i = 0; i < r.window.size; ++i) {
    CHECK(r.block.bytes[i] == static_cast<unsigned char>(r.window.address + i));
  }
}

}  // namespace

TEST_CASE("ReadAhead: neighbouring windows cost the debugger one read, each cut exactly") {
  FakeTarget target;
  std::vector<Window> windows{{0x10000, 16}, {0x10020, 8}, {0x10020 + 8 + kReadGap, 4}};
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 3);
  for (const ReadAhead& r : read) checkWhole(r);
  // The three are within kReadGap of each other: one span.
  REQUIRE(target.reads.size() == 1);
  CHECK(target.reads[0].first == 0x10000);
  CHECK(target.reads[0].second == 0x10020 + 8 + kReadGap + 4 - 0x10000);
}

TEST_CASE("ReadAhead: a gap wider than kReadGap starts another span") {
  FakeTarget target;
  std::vector<Window> windows{{0x10000, 16}, {0x10010 + kReadGap + 1, 16}};
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 2);
  for (const ReadAhead& r : read) checkWhole(r);
  CHECK(target.reads.size() == 2);  // a lone window is read alone
}

TEST_CASE("ReadAhead: a span the debugger refuses is read window by window, refusals kept") {
  FakeTarget target;
  target.maxRead = 64;  // the span is refused, the windows are not
  std::vector<Window> windows{{0x10000, 32}, {0x10040, 32}, {0x20000 - 8, 16}};
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 3);
  checkWhole(read[0]);
  checkWhole(read[1]);
  // The last runs past the readable memory: its own read's refusal, as a read of it alone.
  CHECK(read[2].block.rc == mqs_no_information);
  CHECK(read[2].window.address == 0x20000 - 8);
  // One refused span, then each window on its own.
  CHECK(target.reads.size() == 4);
}

TEST_CASE("ReadAhead: a span whose last windows fail costs the reads around them, not one each") {
  // A guess of 64 pages whose last 5 lie past the top of the heap.
  FakeTarget target;
  target.size = 59 * 4096;
  std::vector<Window> windows;
  for (uint64_t i = 0; i < 64; ++i) windows.push_back({target.base + i * 4096, 4096});
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 64);
  for (size_t i = 0; i < 64; ++i) {
    CHECK(read[i].window.address == windows[i].address);
    if (i < 59) {
      checkWhole(read[i]);
    } else {
      CHECK(read[i].block.rc == mqs_no_information);  // as a read of that page alone
    }
  }
  // The span, then halves down to the failing pages: far fewer than a read a page (65).
  CHECK(target.reads.size() <= 20);
  // Every failing page was read alone, as its answer must be its own read's.
  for (size_t i = 59; i < 64; ++i) {
    CHECK(std::find(target.reads.begin(), target.reads.end(),
                    std::make_pair(windows[i].address, 4096u)) != target.reads.end());
  }
}

TEST_CASE("ReadAhead: a span that fails throughout is read window by window") {
  FakeTarget target;
  std::vector<Window> windows;
  for (uint64_t i = 0; i < 16; ++i) windows.push_back({0x40000 + i * 64, 32});  // unreadable
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 16);
  for (const ReadAhead& r : read) CHECK(r.block.rc == mqs_no_information);
  // The span, its two halves, then each window: not twice as many as the windows.
  CHECK(target.reads.size() == 3 + 16);
}

TEST_CASE("ReadAhead: overlapping windows in address order are one span, each cut exactly") {
  // A proof's windows may overlap: a part of a block sent and a block fetched around it.
  FakeTarget target;
  std::vector<Window> windows{{0x10000, 0x100}, {0x10010, 32}, {0x10080, 0x200},
                              {0x10400, 16}};  // inside, running past, then within kReadGap
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(read[i].window.address == windows[i].address);
    checkWhole(read[i]);
  }
  CHECK(target.reads.size() == 1);
  CHECK(target.reads[0] == std::make_pair<uint64_t, uint32_t>(0x10000, 0x410));

  SUBCASE("a span past the readable end: each half read, each window exactly") {
    FakeTarget edge;
    edge.size = 0x180;  // readable in [0x10000, 0x10180)
    auto cut = mqd::client::readWindows(windows, edge.reader());
    REQUIRE(cut.size() == 4);
    checkWhole(cut[0]);
    checkWhole(cut[1]);
    CHECK(cut[2].block.rc == mqs_no_information);
    CHECK(cut[3].block.rc == mqs_no_information);
  }
}

TEST_CASE("ReadAhead: windows out of address order or wrapping are never joined into a span") {
  FakeTarget target;
  std::vector<Window> windows{{0x10010, 32}, {0x10000, 32}};  // the second starts before
  auto read = mqd::client::readWindows(windows, target.reader());
  REQUIRE(read.size() == 2);
  for (const ReadAhead& r : read) checkWhole(r);
  CHECK(target.reads.size() == 2);
  FakeTarget wrapping;
  auto wrapped = mqd::client::readWindows({{0x10000, 32}, {UINT64_MAX - 8, 32}, {0x10020, 8}},
                                          wrapping.reader());
  REQUIRE(wrapped.size() == 3);
  REQUIRE(wrapping.reads.size() == 3);  // the wrapping window read alone, as asked
  CHECK(wrapping.reads[1] == std::make_pair<uint64_t, uint32_t>(UINT64_MAX - 8, 32));
}

TEST_CASE("ReadAhead: a debugger that cannot be asked gives nothing read ahead") {
  std::vector<Window> windows{{0x10000, 16}, {0x30000, 16}};
  int calls = 0;
  auto read = mqd::client::readWindows(windows, [&](uint64_t, uint32_t) -> DebuggerSide::Block {
    if (++calls == 2) throw mqd::ProxyError(MQD_PROXY_ERR_REENTRANT, "in a callback");
    DebuggerSide::Block b;
    b.rc = mqs_ok;
    b.address = 0x10000;
    b.bytes.assign(16, 0);
    return b;
  });
  CHECK(read.empty());  // not half a list: the server asks for what it needs
  CHECK(calls == 2);
}

TEST_CASE("ReadAhead: sameReads proves a refresh ahead only by identical reads") {
  FakeTarget target;
  std::vector<Window> windows{{0x10000, 16}, {0x10100, 16}};
  auto then = mqd::client::readWindows(windows, target.reader());
  auto now = mqd::client::readWindows(mqd::client::windowsOf(then), target.reader());
  CHECK(mqd::client::sameReads(then, now));
  now[1].block.bytes[3] ^= 1;  // one byte changed
  CHECK_FALSE(mqd::client::sameReads(then, now));
  now = then;
  now[0].block.rc = mqs_no_information;  // refused now
  CHECK_FALSE(mqd::client::sameReads(then, now));
  now = then;
  now.pop_back();  // one read missing
  CHECK_FALSE(mqd::client::sameReads(then, now));
  CHECK(mqd::client::bytesOf(windows) == 32);
}

TEST_CASE("ReadAhead: a refresh ahead is proved by what its update read of what was sent") {
  // Sent: two blocks whole, one the debugger refused, one readable in part. The update read
  // two ranges of the first block (one running past its end, into memory never sent), one
  // range spanning the gap between the first two blocks, and nothing of the last two.
  FakeTarget target;  // readable in [0x10000, 0x20000)
  auto sent = mqd::client::readWindows(
      {{0x10000, 0x1000}, {0x12000, 0x1000}, {0x1ff00, 0x200}, {0x30000, 0x100}},
      target.reader());
  REQUIRE(sent.size() == 4);
  sent[2].block = target.read(0x1ff00, 0x100);  // the readable part, as the debugger gave it
  std::vector<Window> read{{0x10010, 0x20}, {0x10f00, 0x1200}, {0x40000, 8}};
  auto proof = mqd::client::readOf(sent, read);
  // Of the first block, the two ranges inside it; of the second, the start of the range that
  // spans the gap; the partial and the refused block whole, touched or not.
  REQUIRE(proof.size() == 5);
  CHECK(proof[0].window.address == 0x10010);
  CHECK(proof[0].window.size == 0x20);
  CHECK(proof[1].window.address == 0x10f00);
  CHECK(proof[1].window.size == 0x100);
  CHECK(proof[2].window.address == 0x12000);
  CHECK(proof[2].window.size == 0x100);
  for (int i = 0; i < 3; ++i) checkWhole(proof[static_cast<size_t>(i)]);
  CHECK(proof[3].window.address == 0x1ff00);
  CHECK(proof[3].window.size == 0x200);
  CHECK(proof[4].window.address == 0x30000);
  CHECK(proof[4].block.rc == mqs_no_information);
  // The proof: the same reads now, and a changed byte inside what was read makes it stale.
  auto now = mqd::client::readWindows(mqd::client::windowsOf(proof), target.reader());
  now[3] = sent[2];  // the partial block still partial
  now[4] = sent[3];  // the refused one still refused
  CHECK(mqd::client::sameReads(proof, now));
  now[1].block.bytes[0] ^= 1;
  CHECK_FALSE(mqd::client::sameReads(proof, now));
  // Lists out of address order leave nothing out.
  std::vector<ReadAhead> reversed{sent[1], sent[0]};
  CHECK(mqd::client::readOf(reversed, read).size() == 2);
  CHECK(mqd::client::readOf(reversed, read)[0].window.size == 0x1000);
}

TEST_CASE("ReadAhead: written into a request and compared with the node's bytes") {
  FakeTarget target;
  std::vector<Window> windows{{0x10000, 16}, {0x10100, 16}};
  auto read = mqd::client::readWindows(windows, target.reader());
  for (bool compress : {false, true}) {
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<mqd::wire::Session::UpdateCommunicatorListParams>();
    mqd::client::writeAhead(read, compress, root);
    auto reader = root.asReader();
    REQUIRE(reader.getAhead().size() == 2);
    CHECK(reader.getAhead()[1].getAddress() == 0x10100);
    CHECK(reader.getAhead()[1].getSize() == 16);
    // The same bytes as the node's: what a late check compares.
    CHECK(mqd::client::sameAsNode(read, reader.getBlocks()));
    auto other = read;
    other[0].block.bytes[0] ^= 1;
    CHECK_FALSE(mqd::client::sameAsNode(other, reader.getBlocks()));
  }
  capnp::MallocMessageBuilder empty;
  auto root = empty.initRoot<mqd::wire::Session::UpdateCommunicatorListParams>();
  mqd::client::writeAhead({}, false, root);
  CHECK_FALSE(root.asReader().hasAhead());  // nothing read: nothing sent
}

TEST_CASE("ReadAhead: what a proof needs, unpacked from what a request carried") {
  // The same blocks as above, packed as a refresh ahead travels (compressed and not); what the
  // shim keeps of them for the proof must give the proof readOf gives from the blocks read.
  FakeTarget target;
  auto sent = mqd::client::readWindows(
      {{0x10000, 0x1000}, {0x12000, 0x1000}, {0x14000, 0x1000}, {0x1ff00, 0x200},
       {0x30000, 0x100}},
      target.reader());
  REQUIRE(sent.size() == 5);
  sent[3].block = target.read(0x1ff00, 0x100);  // readable in part
  for (bool compress : {false, true}) {
    capnp::MallocMessageBuilder message;
    auto packed = message.initRoot<mqd::wire::RefreshAhead>();
    mqd::client::writeAhead(sent, compress, packed);
    auto windows = packed.asReader().getAhead();
    auto blocks = packed.asReader().getBlocks();
    // The update read inside the first and third blocks: those two and the partial one; the
    // second, untouched and whole, is left packed, and the refused one too: the server kept
    // nothing of it, so it answered nothing.
    std::optional<std::vector<Window>> used{{{0x10010, 0x20}, {0x14800, 0x10}}};
    auto kept = mqd::client::unpackFor(windows, blocks, used);
    REQUIRE(kept.size() == 3);
    CHECK(kept[0].window.address == 0x10000);
    CHECK(kept[1].window.address == 0x14000);
    CHECK(kept[2].window.address == 0x1ff00);
    checkWhole(kept[0]);
    checkWhole(kept[1]);
    CHECK(kept[2].block.bytes == sent[3].block.bytes);
    auto proof = mqd::client::readOf(kept, *used);
    std::vector<ReadAhead> answered(sent.begin(), sent.begin() + 4);  // not the refusal
    auto expected = mqd::client::readOf(answered, *used);
    CHECK(mqd::client::sameReads(proof, expected));
    // A server that does not say, or an update that read none of it: every block.
    auto all = mqd::client::unpackFor(windows, blocks, std::nullopt);
    CHECK(mqd::client::sameReads(all, sent));
    auto none = mqd::client::unpackFor(windows, blocks, std::vector<Window>{{0x50000, 8}});
    CHECK(mqd::client::sameReads(none, sent));
  }
  // Lists that do not pair are no blocks to prove by.
  capnp::MallocMessageBuilder bad;
  auto root = bad.initRoot<mqd::wire::RefreshAhead>();
  root.initAhead(2);
  root.initBlocks(1);
  CHECK_THROWS_AS(mqd::client::unpackFor(root.asReader().getAhead(), root.asReader().getBlocks(),
                                         std::nullopt),
                  mqd::ProxyError);
}
