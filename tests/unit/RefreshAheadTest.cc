#include <doctest/doctest.h>

#include <capnp/message.h>

#include "Bulk.h"
#include "RefreshAhead.h"

using mqd::client::CostRule;
using mqd::client::RefreshAhead;
using mqd::client::Window;

// The plan alone, with the cost rule's inputs pinned: the same verdicts on any machine.

namespace {

const mqd::client::ReadPrice kFree{0, 0};    // reading again costs nothing: always worth it
const mqd::client::ReadPrice kDear{0, 1.0};  // a second a byte: never worth a 10 ms round trip

RefreshAhead planWithRoundTrip(double seconds) {
  RefreshAhead plan;
  CostRule rule;
  rule.roundTripTook(seconds);
  plan.setCostRule(rule);
  return plan;
}

std::vector<Window> windows(uint64_t address, uint32_t size) { return {{address, size}}; }

// A refresh waiting whose proof reads `size` bytes (a block sent whole, its bytes not needed
// by the plan).
RefreshAhead::Refreshed waiting(uint32_t size) {
  return RefreshAhead::madeFrom(nullptr, {}, {{{0x1000, size}, {}}}, std::nullopt);
}

// `n` blocks of `size` bytes from `address` on, each sent whole, as read ahead.
std::vector<mqd::client::ReadAhead> sentBlocks(uint64_t address, uint32_t size, int n) {
  std::vector<mqd::client::ReadAhead> out;
  for (int i = 0; i < n; ++i) {
    mqd::client::DebuggerSide::Block b;
    b.rc = mqs_ok;
    b.address = address + uint64_t(i) * size;
    b.bytes.assign(size, static_cast<uint8_t>(i));
    out.push_back({{b.address, size}, std::move(b)});
  }
  return out;
}

// A debugger refreshing processes 1..n in order once.
void refreshInOrder(RefreshAhead& plan, uint64_t n) {
  for (uint64_t p = 1; p <= n; ++p) {
    plan.beginUpdate(p);
    plan.keepNextEpoch(p, windows(0x1000 * p, 64), false, false);
    plan.visited(p);
  }
}

}  // namespace

TEST_CASE("RefreshAhead: the next to be refreshed, in the debugger's order, by the cost rule") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  refreshInOrder(plan, 4);
  // The debugger comes back to 1: 2, 3 and 4 were refreshed as often and after it.
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{2, 3, 4});
  // Refreshing 3 next: only 4 is after it.
  CHECK(plan.candidates(3, kFree) == std::vector<uint64_t>{4});
  // Reading again costs more than the round trip it saves: none.
  CHECK(plan.candidates(1, kDear).empty());
  // Read cost not measured yet: worth it.
  CHECK(plan.candidates(1, std::nullopt) == std::vector<uint64_t>{2, 3, 4});
}

TEST_CASE("RefreshAhead: never offered: read on the node, no next epoch, a refresh waiting") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  refreshInOrder(plan, 5);
  plan.keepNextEpoch(2, windows(0x2000, 64), false, true);  // the server reads 2 on its node
  CHECK(plan.readOnNode(2));
  plan.keepNextEpoch(3, {}, false, false);                  // 3's reply named nothing
  CHECK(plan.nextEpoch(3) == nullptr);
  plan.keep(4, waiting(64));                                // 4 has a refresh waiting
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{5});
  // 4's refresh taken (served or dropped): offered again.
  CHECK(plan.take(4).has_value());
  CHECK_FALSE(plan.take(4).has_value());
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{4, 5});
}

TEST_CASE("RefreshAhead: refreshes ahead stay within what the server takes in one update") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  const uint32_t big = mqd::wire::MAX_REFRESH_AHEAD_BYTES / 2;
  for (uint64_t p = 1; p <= 8; ++p) {
    plan.keepNextEpoch(p, windows(0x10000000 * p, big), false, false);
    plan.visited(p);
  }
  // A server that does not say: maxRefreshAheadBytes, two halves.
  CHECK(plan.requestBytes() == mqd::wire::MAX_REFRESH_AHEAD_BYTES);
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{2, 3});
  plan.keep(2, waiting(big));  // one waiting, its proof the whole half
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{3});
  CHECK(plan.take(2).has_value());
  // A server that offers three times as much: six halves, the refreshes waiting included.
  plan.setRequestBytes(3 * mqd::wire::MAX_REFRESH_AHEAD_BYTES);
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{2, 3, 4, 5, 6, 7});
  plan.keep(2, waiting(big));
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{3, 4, 5, 6, 7});
  // Never more than the ceiling, whatever a server says.
  plan.setRequestBytes(UINT32_MAX);
  CHECK(plan.requestBytes() == mqd::wire::REFRESH_AHEAD_BYTES_CEILING);
  plan.setRequestBytes(0);
  CHECK(plan.requestBytes() == mqd::wire::MAX_REFRESH_AHEAD_BYTES);
}

TEST_CASE("RefreshAhead: a refresh keeps only what its proof reads, and counts only that") {
  // Four blocks of 4 KiB sent; the update read 100 bytes of the second and the whole fourth.
  auto sent = sentBlocks(0x10000, 4096, 4);
  std::vector<Window> used{{0x11000 + 8, 100}, {0x13000, 4096}};
  RefreshAhead::Refreshed made = RefreshAhead::madeFrom(nullptr, {}, sent, used);
  CHECK_FALSE(made.whole);
  REQUIRE(made.proof.size() == 2);
  CHECK(made.proof[0].window.address == 0x11008);
  CHECK(made.proof[0].window.size == 100);
  CHECK(made.proof[0].block.bytes == std::vector<uint8_t>(100, 1));
  CHECK(made.proof[1].window.address == 0x13000);
  CHECK(made.proof[1].block.bytes == std::vector<uint8_t>(4096, 3));
  // Blocks sent out of address order (a set-up's blocks, then the blocks around them): the
  // same proof.
  auto unordered = sent;
  std::swap(unordered[0], unordered[3]);
  std::swap(unordered[1], unordered[2]);
  RefreshAhead::Refreshed same = RefreshAhead::madeFrom(nullptr, {}, unordered, used);
  CHECK_FALSE(same.whole);
  CHECK(sameReads(same.proof, made.proof));
  // A server that did not say, or an update that read none of it: every block, whole.
  CHECK(RefreshAhead::madeFrom(nullptr, {}, sent, std::nullopt).proof.size() == 4);
  CHECK(RefreshAhead::madeFrom(nullptr, {}, sent, std::nullopt).whole);
  CHECK(RefreshAhead::madeFrom(nullptr, {}, sent, std::vector<Window>{}).whole);

  // Held, it takes 4196 bytes of the budget, not the 16 KiB sent.
  RefreshAhead plan = planWithRoundTrip(0.010);
  const uint64_t budget = mqd::wire::MAX_REFRESH_AHEAD_BYTES;
  plan.keepNextEpoch(1, windows(0x100000, 64), false, false);
  plan.visited(1);
  plan.keepNextEpoch(3, windows(0x300000, static_cast<uint32_t>(budget - 4196)), false, false);
  plan.visited(3);
  plan.keep(2, std::move(made));
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{3});
  plan.keepNextEpoch(3, windows(0x300000, static_cast<uint32_t>(budget - 4195)), false, false);
  CHECK(plan.candidates(1, kFree).empty());
}

TEST_CASE("RefreshAhead: a refresh that fetched blocks is proved by them as by those sent") {
  // Two blocks of 4 KiB sent at 0x10000; the server fetched a block at 0x40000 for a miss
  // (listed first: fetched in the order the misses came) and was refused 8 bytes at 0x90000.
  // The update read 16 bytes of the first block sent, 32 of the fetched one, and the refusal.
  auto sent = sentBlocks(0x10000, 4096, 2);
  std::vector<mqd::client::ReadAhead> fetched = sentBlocks(0x40000, 65536, 1);
  mqd::client::DebuggerSide::Block refused;
  refused.rc = -5;
  fetched.push_back({{0x90000, 8}, refused});
  std::vector<Window> used{{0x10010, 16}, {0x40100, 32}};
  RefreshAhead::Refreshed made = RefreshAhead::madeFrom(nullptr, {}, sent, used, fetched);
  CHECK_FALSE(made.whole);
  // In address order: the part of the block sent, the part of the block fetched, the refusal
  // whole (a read that failed is in no window read, yet its failure was the answer).
  REQUIRE(made.proof.size() == 3);
  CHECK(made.proof[0].window.address == 0x10010);
  CHECK(made.proof[0].window.size == 16);
  CHECK(made.proof[1].window.address == 0x40100);
  CHECK(made.proof[1].window.size == 32);
  CHECK(made.proof[1].block.bytes == std::vector<uint8_t>(32, 0));
  CHECK(made.proof[2].window.address == 0x90000);
  CHECK(made.proof[2].block.rc == -5);
  // Without the fetched blocks the read at 0x40100 would go unproved.
  CHECK(RefreshAhead::madeFrom(nullptr, {}, sent, used).proof.size() == 1);
}

TEST_CASE("RefreshAhead: at a first update, the learned first epochs of the never-updated") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  plan.keepNextEpoch(1, windows(0x1000, 64), true, false);
  plan.keepNextEpoch(2, windows(0x2000, 64), true, false);
  plan.keepNextEpoch(3, windows(0x3000, 64), false, false);  // named, not learned
  CHECK(plan.beginUpdate(1).size() == 1);                     // 1's own epoch, taken
  CHECK(plan.nextEpoch(1) == nullptr);
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{2});
  plan.offered(2);  // sent ahead once: not offered again
  CHECK(plan.candidates(1, kFree).empty());
}

TEST_CASE("RefreshAhead: a peer's guess is taken when it is worth the round trips it saves") {
  capnp::MallocMessageBuilder message;
  auto peers = message.initRoot<mqd::wire::Session::UpdateCommunicatorListResults>().initPeers(4);
  auto guess = [&](unsigned i, uint64_t process, uint32_t size, uint32_t callbacks) {
    peers[i].setProcess(process);
    peers[i].setCallbacks(callbacks);
    auto w = peers[i].initNextEpoch(1);
    w[0].setAddress(0x1000 * process);
    w[0].setSize(size);
  };
  guess(0, 2, 1000, 1);   // 1000 bytes against one 10 ms round trip
  guess(1, 3, 5000, 1);   // 5000 bytes: dearer than one round trip
  guess(2, 4, 5000, 10);  // but worth ten
  guess(3, 5, 1000, 1);   // already updated by the debugger
  RefreshAhead plan = planWithRoundTrip(0.010);
  plan.visited(5);
  const mqd::client::ReadPrice price{0.002, 3e-6};  // 2 ms a read, 3 ms per 1000 bytes
  CHECK(plan.takePeerGuesses(peers.asReader(), price) == 2);
  CHECK(plan.nextEpoch(2) != nullptr);
  CHECK(plan.nextEpoch(3) == nullptr);
  CHECK(plan.nextEpoch(4) != nullptr);
  CHECK(plan.nextEpoch(5) == nullptr);
  // Taken guesses are candidates like learned first epochs.
  CHECK(plan.candidates(1, price) == std::vector<uint64_t>{2});  // 4's 5000 bytes: too dear
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{2, 4});
}

TEST_CASE("RefreshAhead: a process set up again starts over; a new session forgets all") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  refreshInOrder(plan, 3);
  plan.keep(3, waiting(64));
  plan.forget(3);
  CHECK_FALSE(plan.take(3).has_value());
  CHECK(plan.nextEpoch(3) == nullptr);
  CHECK(plan.candidates(1, kFree) == std::vector<uint64_t>{2});
  plan.forgetRefreshes();  // the refresh order is gone: nothing to follow
  CHECK(plan.candidates(1, kFree).empty());
  CHECK(plan.nextEpoch(2) != nullptr);  // what the replies named stands
  plan.clear();
  CHECK(plan.nextEpoch(2) == nullptr);
}

TEST_CASE("RefreshAhead: an epoch held is marked so, bounded, and forgotten with the process") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  plan.setRequestBytes(1000);
  plan.hold(1, waiting(600));
  CHECK(plan.holds(1));
  plan.hold(2, waiting(600));  // 1,200 bytes of proofs in all: past what the refreshes may keep
  CHECK_FALSE(plan.holds(2));
  plan.hold(1, waiting(300));  // a later epoch of the same process replaces its last
  plan.hold(2, waiting(600));
  CHECK(plan.holds(2));
  std::optional<RefreshAhead::Refreshed> held = plan.takeHeld(1);
  REQUIRE(held.has_value());
  CHECK(held->held);
  CHECK(held->proof.front().window.size == 300);
  CHECK_FALSE(plan.holds(1));
  CHECK_FALSE(plan.takeHeld(1).has_value());
  // Kept again as the process's refresh ahead (an update found it unchanged): taken as one.
  plan.keep(1, std::move(*held));
  std::optional<RefreshAhead::Refreshed> kept = plan.take(1);
  REQUIRE(kept.has_value());
  CHECK(kept->held);
  CHECK_FALSE(waiting(64).held);  // a refresh the server made
  plan.forget(2);
  CHECK_FALSE(plan.holds(2));
  plan.hold(3, waiting(900));  // 2's bytes were given back
  CHECK(plan.holds(3));
  plan.forgetRefreshes();
  CHECK_FALSE(plan.holds(3));
}

TEST_CASE("RefreshAhead: processes read on their node go with another such one's update") {
  RefreshAhead plan = planWithRoundTrip(0.010);
  // 1-3 read on the node (their checks named), 4 not; none updated yet.
  for (uint64_t p = 1; p <= 3; ++p) plan.keepNextEpoch(p, windows(0x1000 * p, 64), false, true);
  plan.keepNextEpoch(4, windows(0x4000, 64), true, false);
  plan.beginUpdate(1);
  // At 1's first update: every other one never updated on the node, whatever reading costs
  // (the shim reads only their checks, at their own updates); not 4.
  CHECK(plan.candidates(1, kDear) == std::vector<uint64_t>{2, 3});
  plan.offered(2);
  plan.offered(3);
  CHECK(plan.candidates(1, kDear).empty());  // offered once at first updates
  // 4's first update offers no process read on the node.
  CHECK(plan.candidates(4, kFree).empty());
  plan.visited(1);
  for (uint64_t p = 2; p <= 3; ++p) {
    plan.beginUpdate(p);
    plan.keepNextEpoch(p, windows(0x1000 * p, 64), false, true);
    plan.visited(p);
  }
  plan.keepNextEpoch(1, windows(0x1000, 64), false, true);
  // The debugger comes back to 1: 2 and 3, as for processes read through it.
  CHECK(plan.candidates(1, kDear) == std::vector<uint64_t>{2, 3});
}

TEST_CASE("RefreshAhead: a refresh made on the node is proved by its check's node bytes") {
  capnp::MallocMessageBuilder message;
  auto blocks = message.initRoot<mqd::wire::RefreshedAhead>().initNodeBytes(2);
  const std::vector<Window> check{{0x1000, 4}, {0x3000, 2}};
  const unsigned char first[] = {1, 2, 3, 4};
  const unsigned char second[] = {5, 6};
  blocks[0].setRc(mqs_ok);
  blocks[0].setAddress(0x1000);
  mqd::setBulk(blocks[0].initData(), kj::arrayPtr(first, sizeof first), false);
  blocks[1].setRc(mqs_ok);
  blocks[1].setAddress(0x3000);
  mqd::setBulk(blocks[1].initData(), kj::arrayPtr(second, sizeof second), false);
  std::optional<RefreshAhead::Refreshed> made =
      RefreshAhead::madeOnNode(nullptr, check, check, blocks.asReader());
  REQUIRE(made.has_value());
  CHECK(made->onNode);
  REQUIRE(made->proof.size() == 2);
  CHECK(made->proof[1].window.address == 0x3000);
  CHECK(made->proof[1].block.bytes == std::vector<unsigned char>{5, 6});
  // Not one block a window, in order, whole: no refresh.
  CHECK_FALSE(RefreshAhead::madeOnNode(nullptr, {}, {check[0]}, blocks.asReader()));
  const std::vector<Window> longer{{0x1000, 4}, {0x3000, 3}};
  CHECK_FALSE(RefreshAhead::madeOnNode(nullptr, {}, longer, blocks.asReader()));
  blocks[0].setRc(mqs_no_information);
  CHECK_FALSE(RefreshAhead::madeOnNode(nullptr, {}, check, blocks.asReader()));
  // Never held as the process's last epoch: its proof is its check alone.
  RefreshAhead plan = planWithRoundTrip(0.010);
  plan.hold(1, std::move(*made));
  CHECK_FALSE(plan.holds(1));
}
