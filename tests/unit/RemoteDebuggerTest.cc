// RemoteDebugger's caches against a fake debugger: what each cache policy keeps, for how long,
// and how many round trips it costs. The fake is a Cap'n Proto Debugger served in this process;
// RemoteDebugger waits for it on a kj fiber, as in a DLL call of the server.
#include <doctest/doctest.h>

#include <capnp/message.h>
#include <kj/async.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <cmath>
#include <cstring>
#include <vector>

#include "Bulk.h"
#include "DebuggerObjects.h"
#include "DllCall.h"
#include "RemoteDebugger.h"
#include "RunAsDllCall.h"
#include "SessionBoard.h"

using namespace mqd::server;
namespace wire = mqd::wire;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint32_t kBlock = 64 * 1024;
constexpr int kUnreadable = 1002;  // the fake debugger's error for memory it cannot read

uint8_t byteAt(uint64_t address) { return static_cast<uint8_t>(address * 7 + (address >> 12)); }

// What the fake debugger was asked.
struct Asked {
  int fetchData = 0;
  int fetchBlocks = 0;  // round trips
  std::vector<std::pair<uint64_t, uint32_t>> blocks;  // every block asked for
  int findSymbol = 0;
};

// A target whose memory [readableStart, readableEnd) (page-aligned) reads as byteAt(), and
// which has one symbol, "known", at 0x1000. fetchBlocks answers as the debugger side must
// (mqd.capnp, BlockRequest): the block if it can, else the largest readable page-aligned
// window of it that holds what is needed, and the needed range decides the result code.
class FakeDebugger final : public wire::Debugger::Server {
 public:
  FakeDebugger(uint64_t readableStart, uint64_t readableEnd, Asked& asked)
      : start_(readableStart), end_(readableEnd), asked_(asked) {}

 protected:
  kj::Promise<void> fetchData(FetchDataContext context) override {
    ++asked_.fetchData;
    auto p = context.getParams();
    auto r = context.getResults();
    if (!readable(p.getAddress(), static_cast<uint32_t>(p.getSize()))) {
      r.setRc(kUnreadable);
      return kj::READY_NOW;
    }
    auto data = r.initData(static_cast<unsigned>(p.getSize()));
    for (size_t i = 0; i < data.size(); ++i) data[i] = byteAt(p.getAddress() + i);
    r.setRc(0);
    return kj::READY_NOW;
  }

  kj::Promise<void> fetchBlocks(FetchBlocksContext context) override {
    ++asked_.fetchBlocks;
    auto requests = context.getParams().getBlocks();
    auto out = context.getResults().initBlocks(requests.size());
    for (unsigned i = 0; i < requests.size(); ++i) {
      auto q = requests[i];
      asked_.blocks.push_back({q.getAddress(), q.getSize()});
      auto b = out[i];
      if (!readable(q.getNeededAddress(), q.getNeededSize())) {
        b.setRc(kUnreadable);
        continue;
      }
      uint64_t from = std::max(q.getAddress(), start_);
      uint64_t to = std::min(q.getAddress() + q.getSize(), end_);
      std::vector<kj::byte> bytes(to - from);
      for (size_t j = 0; j < bytes.size(); ++j) bytes[j] = byteAt(from + j);
      b.setRc(0);
      b.setAddress(from);
      mqd::setBulk(b.initData(), kj::arrayPtr(bytes.data(), bytes.size()), false);
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> findSymbol(FindSymbolContext context) override {
    ++asked_.findSymbol;
    auto p = context.getParams();
    auto r = context.getResults();
    bool known = p.getName() == kj::StringPtr("known");
    r.setRc(known ? 0 : kUnreadable);
    if (known && p.getWantAddress()) r.initAddress().setValue(0x1000);
    return kj::READY_NOW;
  }

 private:
  bool readable(uint64_t address, uint32_t size) const {
    return address >= start_ && address + size <= end_;
  }
  uint64_t start_, end_;
  Asked& asked_;
};


// One process of a target readable in [start, end), under a cache policy.
struct Rig {
  kj::EventLoop loop;
  kj::WaitScope waitScope{loop};
  Asked asked;
  test::CacheHost host;
  RemoteProcess& process;
  RemoteImage& image;

  // `around`: the bound on the blocks read around a miss (none unless a test asks; nullopt:
  // from the timings, as --read-around measured).
  Rig(wire::CachePolicy policy, uint64_t start, uint64_t end,
      std::optional<uint64_t> around = 0)
      : host(kj::heap<FakeDebugger>(start, end, asked), options(policy, around)),
        process(host.objects().process(7)),
        image(host.objects().image(3)) {}

  static RemoteDebugger::Options options(wire::CachePolicy policy,
                                         std::optional<uint64_t> around) {
    RemoteDebugger::Options o;
    o.policy = policy;
    o.blockSize = kBlock;
    o.aroundBytes = around;
    return o;
  }

  // Runs `body` as the body of one mqs_* call (a fresh call for the caches, on a fiber).
  template <typename Body>
  void call(Body&& body) {
    test::runAsDllCall(host, waitScope, kj::fwd<Body>(body));
  }

  // What the session counted (Proxy.stats, the server's session summary, the benchmarks).
  uint64_t counted(Count c) { return host.metrics().get(c); }

  // Reads [address, address + size) as the DLL's fetch_data; checks the bytes when it worked.
  int read(DllCall& call, uint64_t address, int size) {
    std::vector<uint8_t> buf(static_cast<size_t>(size));
    int rc = host.remote().fetchData(call, process, address, size, buf.data());
    if (rc == 0) {
      for (int i = 0; i < size; ++i) REQUIRE(buf[static_cast<size_t>(i)] == byteAt(address + i));
    }
    return rc;
  }
};

}  // namespace

TEST_CASE("RemoteDebugger, policy off: every fetch_data is a round trip of its own") {
  Rig rig(wire::CachePolicy::OFF, 0x10000, 0x40000);
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process);  // keeps nothing in policy off
    CHECK(rig.read(call, 0x10010, 8) == 0);
    CHECK(rig.read(call, 0x10010, 8) == 0);
    CHECK(rig.read(call, 0x50000, 4) == kUnreadable);
  });
  CHECK(rig.asked.fetchData == 3);
  CHECK(rig.asked.fetchBlocks == 0);
  CHECK(rig.counted(Count::Callbacks) == 3);  // every round trip counted, once
  CHECK(rig.counted(Count::MemoryHits) + rig.counted(Count::MemoryMisses) == 0);  // no cache
}

TEST_CASE("RemoteDebugger, policy call: memory is read in blocks and kept for one mqs_* call") {
  Rig rig(wire::CachePolicy::CALL, 0x10000, 0x40000);
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process);
    CHECK(rig.read(call, 0x10010, 8) == 0);
    CHECK(rig.read(call, 0x1fff0, 16) == 0);  // same 64 KiB block: no round trip
  });
  CHECK(rig.asked.fetchBlocks == 1);
  REQUIRE(rig.asked.blocks.size() == 1);
  CHECK(rig.asked.blocks[0] == std::make_pair(uint64_t{0x10000}, kBlock));
  rig.call([&](DllCall& call) { CHECK(rig.read(call, 0x10010, 8) == 0); });
  CHECK(rig.asked.fetchBlocks == 2);  // a new call asks again
  CHECK(rig.asked.fetchData == 0);
}

TEST_CASE("RemoteDebugger, policy epoch: memory is kept across calls, and the next epoch "
          "asks again for what the DLL read, in one round trip") {
  Rig rig(wire::CachePolicy::EPOCH, 0x10000, 0x80000);
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process);
    CHECK(rig.read(call, 0x10010, 8) == 0);
    CHECK(rig.read(call, 0x30010, 8) == 0);
  });
  rig.call([&](DllCall& call) { CHECK(rig.read(call, 0x30020, 4) == 0); });
  CHECK(rig.asked.fetchBlocks == 2);  // one per block, none for the second call
  rig.asked.blocks.clear();
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process);  // mqs_update_communicator_list
    CHECK(rig.asked.fetchBlocks == 3);               // ahead, in one round trip
    // The bytes the DLL read, not their blocks: the two reads 8 bytes apart are one window.
    REQUIRE(rig.asked.blocks.size() == 2);
    CHECK(rig.asked.blocks[0] == std::make_pair(uint64_t{0x10010}, uint32_t{8}));
    CHECK(rig.asked.blocks[1] == std::make_pair(uint64_t{0x30010}, uint32_t{0x14}));
    CHECK(rig.read(call, 0x10010, 8) == 0);
    CHECK(rig.read(call, 0x30010, 8) == 0);
    CHECK(rig.read(call, 0x30020, 4) == 0);
  });
  CHECK(rig.asked.fetchBlocks == 3);
  // Counted as they happened: two demand reads in the first epoch, then the second call's read
  // and the new epoch's three reads from what was kept; four blocks, two of them ahead.
  CHECK(rig.counted(Count::Callbacks) == 3);
  CHECK(rig.counted(Count::MemoryMisses) == 2);
  CHECK(rig.counted(Count::MemoryHits) == 4);
  CHECK(rig.counted(Count::BlocksFetched) == 4);
  CHECK(rig.counted(Count::BlocksPrefetched) == 2);
  CHECK(rig.counted(Count::BlockBytes) == 2 * kBlock + 8 + 0x14);
  // A read beside what was read before misses, and brings its whole block.
  rig.call([&](DllCall& call) { CHECK(rig.read(call, 0x10040, 8) == 0); });
  CHECK(rig.asked.fetchBlocks == 4);
  CHECK(rig.asked.blocks.back() == std::make_pair(uint64_t{0x10000}, kBlock));
}

TEST_CASE("RemoteDebugger, policy epoch: an epoch's n-th miss reads 2^(n-1) - 1 blocks "
          "around its own, within the bound") {
  // Readable from 0x100000 to 0x400000; a walk that misses at 0x200000, 0x280000, 0x300000
  // and then at 0x180000.
  Rig rig(wire::CachePolicy::EPOCH, 0x100000, 0x400000, 4 * kBlock);
  using Blocks = std::vector<std::pair<uint64_t, uint32_t>>;
  std::vector<Blocks> requests;
  auto miss = [&](uint64_t address) {
    rig.asked.blocks.clear();
    rig.call([&](DllCall& call) { CHECK(rig.read(call, address + 8, 8) == 0); });
    requests.push_back(rig.asked.blocks);
  };
  rig.call([&](DllCall& call) { rig.host.remote().newEpoch(call, rig.process); });
  miss(0x200000);  // the first: its block alone
  miss(0x280000);  // the second: one more, above
  miss(0x300000);  // the third: three, one below and two above
  miss(0x180000);  // the fourth: seven, bounded to four: two below, two above
  auto block = [](uint64_t at) { return std::make_pair(at, kBlock); };
  CHECK(requests[0] == Blocks{block(0x200000)});
  CHECK(requests[1] == Blocks{block(0x280000), block(0x290000)});
  CHECK(requests[2] == Blocks{block(0x300000), block(0x2f0000), block(0x310000),
                                             block(0x320000)});
  CHECK(requests[3] == Blocks{block(0x180000), block(0x160000), block(0x170000),
                                             block(0x190000), block(0x1a0000)});
  // What was read around serves the walk: no round trip.
  int before = rig.asked.fetchBlocks;
  rig.call([&](DllCall& call) {
    CHECK(rig.read(call, 0x290000, 8) == 0);
    CHECK(rig.read(call, 0x2f0100, 8) == 0);
    CHECK(rig.read(call, 0x1a0000, 8) == 0);
  });
  CHECK(rig.asked.fetchBlocks == before);
  // A new epoch starts counting again; blocks around it that cannot be read are left out.
  rig.call([&](DllCall& call) { rig.host.remote().newEpoch(call, rig.process); });
  miss(0x3e0000);
  rig.asked.blocks.clear();
  rig.call([&](DllCall& call) { CHECK(rig.read(call, 0x3f0008, 8) == 0); });
  CHECK(rig.asked.blocks ==
        Blocks{block(0x3f0000), block(0x400000)});  // past the end
  rig.call([&](DllCall& call) { CHECK(rig.read(call, 0x400008, 8) == kUnreadable); });
}

TEST_CASE("RemoteDebugger, policy epoch: an epoch nothing guided reads the whole bound around "
          "from its first miss") {
  // A job never seen: its first rank's set-up has nothing learned and no peer, and its first
  // update has nothing learned. Readable from 0x100000 to 0x400000; the bound four blocks.
  using Blocks = std::vector<std::pair<uint64_t, uint32_t>>;
  auto block = [](uint64_t at) { return std::make_pair(at, kBlock); };
  for (bool learnedBefore : {false, true}) {
    CAPTURE(learnedBefore);
    Rig rig(wire::CachePolicy::EPOCH, 0x100000, 0x400000, 4 * kBlock);
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process, {}, {}, RemoteDebugger::EpochKind::SetUp);
      rig.process.memory->setUnguided();  // SessionService's call: nothing learned, no peer
      CHECK(rig.read(call, 0x200010, 8) == 0);
      // Its first miss: the block and two blocks on each side.
      CHECK(rig.asked.blocks == Blocks{block(0x200000), block(0x1e0000), block(0x1f0000),
                                       block(0x210000), block(0x220000)});
      // What its first update is sent ahead: the set-up's blocks, and the blocks around them
      // its first miss would read (none held yet past those).
      std::vector<TargetMemory::Window> learned;
      if (learnedBefore) learned = {{0x300000, 16}};
      std::vector<TargetMemory::Window> next =
          rig.host.remote().firstEpochWindows(rig.process, learned);
      std::vector<uint64_t> starts;
      for (const auto& w : next) starts.push_back(w.address);
      bool widened = std::find(starts.begin(), starts.end(), 0x230000) != starts.end();
      CHECK(widened == !learnedBefore);
    });
    std::vector<TargetMemory::Window> learned;
    if (learnedBefore) learned = {{0x300000, 16}};
    rig.asked.blocks.clear();
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process, learned);  // the first update
      rig.asked.blocks.clear();
      CHECK(rig.read(call, 0x380010, 8) == 0);
    });
    // Guided by what was learned: the block alone. Else the whole bound around.
    CHECK(rig.asked.blocks ==
          (learnedBefore ? Blocks{block(0x380000)}
                         : Blocks{block(0x380000), block(0x360000), block(0x370000),
                                  block(0x390000), block(0x3a0000)}));
    // The next update is guided by what the first read: its first miss reads its block alone.
    rig.asked.blocks.clear();
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process);
      rig.asked.blocks.clear();
      CHECK(rig.read(call, 0x150010, 8) == 0);
    });
    CHECK(rig.asked.blocks == Blocks{block(0x150000)});
  }
}

TEST_CASE("RemoteDebugger, policy epoch: a refresh ahead of a process never updated, nothing "
          "learned of it, reads the whole bound around from its first miss") {
  // Its blocks ahead are another rank's walk moved to its heap: where the guess failed, the
  // walk is as unknown as a first update's. A process updated before, or one an earlier session
  // taught, is guided: its first miss reads its block alone.
  using Blocks = std::vector<std::pair<uint64_t, uint32_t>>;
  using Kind = RemoteDebugger::EpochKind;
  auto block = [](uint64_t at) { return std::make_pair(at, kBlock); };
  const Blocks whole{block(0x380000), block(0x360000), block(0x370000), block(0x390000),
                     block(0x3a0000)};
  enum class Before { SetUp, SetUpLearned, Update };
  for (Before before : {Before::SetUp, Before::SetUpLearned, Before::Update}) {
    CAPTURE(static_cast<int>(before));
    Rig rig(wire::CachePolicy::EPOCH, 0x100000, 0x400000, 4 * kBlock);
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process, {}, {}, Kind::SetUp);  // guided: a peer's
      CHECK(rig.read(call, 0x200010, 8) == 0);
      if (before == Before::Update) {
        rig.host.remote().newEpoch(call, rig.process);
        CHECK(rig.read(call, 0x250010, 8) == 0);
      }
    });
    std::vector<TargetMemory::Window> learned;
    if (before == Before::SetUpLearned) learned = {{0x300000, 16}};
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process, learned, {}, Kind::RefreshAhead);
      rig.asked.blocks.clear();
      CHECK(rig.read(call, 0x380010, 8) == 0);
    });
    CHECK(rig.asked.blocks == (before == Before::SetUp ? whole : Blocks{block(0x380000)}));
  }
}

TEST_CASE("RemoteDebugger: the bound on reads around a miss, from pinned callback timings") {
  // What the debugger reads in half a round trip: the quickest callback is the round trip, a
  // bulk fetch's time past it the reading (RemoteDebugger.h, kMaxAroundBytes).
  using R = RemoteDebugger;
  auto near = [](uint64_t bytes, double expected) {  // within a byte of the arithmetic
    return static_cast<double>(bytes) >= expected - 1 && static_cast<double>(bytes) <= expected;
  };
  CHECK(R::aroundBudgetFor(0, 1e-9) == 0);              // no round trip yet
  CHECK(R::aroundBudgetFor(0.020, std::nullopt) == 0);  // no bulk fetch yet
  // 20 ms away, a debugger reading 100 MB/s: 10 ms of reading, 1 MB.
  CHECK(near(R::aroundBudgetFor(0.020, 1e-8), 1e6));
  // ... reading 500 MB/s or faster (kFastestRead): 5 MB, bounded to kMaxAroundBytes.
  CHECK(R::aroundBudgetFor(0.020, 2e-9) == R::kMaxAroundBytes);
  CHECK(R::aroundBudgetFor(0.020, 0.0) == R::kMaxAroundBytes);
  // 20 ms away, a debugger reading 1 MB/s (gdbserver over a network): 10 KB, under a block.
  CHECK(near(R::aroundBudgetFor(0.020, 1e-6), 1e4));
  // A server beside the debugger (0.1 ms): 25 KB at most, however fast the reading.
  CHECK(near(R::aroundBudgetFor(1e-4, 0.0), 25000));
  CHECK(R::aroundBudgetFor(1e-4, 1e-12) == R::aroundBudgetFor(1e-4, R::kFastestRead));
}

TEST_CASE("RemoteDebugger: before any callback is timed, a miss reads around by the shim's "
          "timings") {
  // A session's first miss (a job never seen: its first rank's) has no timing of the server's
  // own: the bound is the shim's (mqd.capnp LinkTimings), here 20 ms away from a debugger
  // reading 100 MB/s: 1 MB, 15 blocks around. Readable from 0x100000 to 0x400000.
  auto timings = [](double roundTrip, bool known, double perByte) {
    auto message = kj::heap<capnp::MallocMessageBuilder>();
    auto t = message->initRoot<wire::LinkTimings>();
    t.setRoundTripSeconds(roundTrip);
    t.setReadCostKnown(known);
    t.setReadSecondsPerByte(perByte);
    return message;
  };
  auto take = [&](RemoteDebugger& remote, double roundTrip, bool known, double perByte) {
    auto message = timings(roundTrip, known, perByte);
    remote.takeShimTimings(message->getRoot<wire::LinkTimings>().asReader());
  };
  for (bool told : {false, true}) {
    CAPTURE(told);
    Rig rig(wire::CachePolicy::EPOCH, 0x100000, 0x400000, std::nullopt);
    RemoteDebugger& remote = rig.host.remote();
    CHECK(remote.aroundBudget() == 0);
    if (told) {
      take(remote, 0.020, false, 1e-8);  // no read cost yet: still none
      CHECK(remote.aroundBudget() == 0);
      take(remote, 0.020, true, 1e-8);
      CHECK(remote.aroundBudget() == RemoteDebugger::aroundBudgetFor(0.020, 1e-8));
      // What is no timing changes nothing.
      take(remote, std::nan(""), true, -1);
      take(remote, -1, true, std::numeric_limits<double>::infinity());
      CHECK(remote.aroundBudget() == RemoteDebugger::aroundBudgetFor(0.020, 1e-8));
    }
    rig.call([&](DllCall& call) {
      remote.newEpoch(call, rig.process, {}, {}, RemoteDebugger::EpochKind::SetUp);
      rig.process.memory->setUnguided();
      CHECK(rig.read(call, 0x200010, 8) == 0);
    });
    // The miss's block, and the blocks the bound reaches into (the last one in part), half
    // below and half above; without the shim's timings nothing around it.
    uint64_t bound = RemoteDebugger::aroundBudgetFor(0.020, 1e-8);
    size_t around = told ? static_cast<size_t>((bound + kBlock - 1) / kBlock) : 0;
    CHECK(rig.asked.blocks.size() == 1 + around);
  }
}

TEST_CASE("RemoteDebugger, policy epoch: a first update asks for the set-up's blocks whole, "
          "unless an earlier session's windows are known") {
  for (bool learnedBefore : {false, true}) {
    Rig rig(wire::CachePolicy::EPOCH, 0x10000, 0x80000);
    std::vector<TargetMemory::Window> learned;
    if (learnedBefore) learned = {{0x30000, 16}};
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process, {}, {},
                                 RemoteDebugger::EpochKind::SetUp);  // mqs_setup_process
      CHECK(rig.read(call, 0x10010, 8) == 0);
    });
    rig.asked.blocks.clear();
    rig.call([&](DllCall& call) {
      rig.host.remote().newEpoch(call, rig.process, learned);  // the first update
      REQUIRE(rig.asked.blocks.size() == (learnedBefore ? 2u : 1u));
      if (learnedBefore) {
        CHECK(rig.asked.blocks[0] == std::make_pair(uint64_t{0x10010}, uint32_t{8}));
        CHECK(rig.asked.blocks[1] == std::make_pair(uint64_t{0x30000}, uint32_t{16}));
      } else {
        CHECK(rig.asked.blocks[0] == std::make_pair(uint64_t{0x10000}, kBlock));
        CHECK(rig.read(call, 0x10100, 8) == 0);  // near what set-up read: no miss
      }
    });
    CHECK(rig.counted(Count::MemoryMisses) == 1);
  }
}

TEST_CASE("RemoteDebugger, policy epoch: the rest of a set-up is sent what an earlier set-up "
          "read and this one has not, and asks for none of it") {
  Rig rig(wire::CachePolicy::EPOCH, 0x10000, 0x80000);
  const std::vector<TargetMemory::Window> earlierSetUp = {{0x10010, 8}, {0x30000, 16}};
  std::vector<TargetMemory::Window> ahead;
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process, {}, {},
                               RemoteDebugger::EpochKind::SetUp);  // mqs_setup_process
    CHECK(rig.read(call, 0x10010, 8) == 0);                        // its block is kept
    ahead = rig.host.remote().setUpAheadWindows(rig.process, earlierSetUp);
  });
  REQUIRE(ahead.size() == 1);
  CHECK(ahead[0].address == 0x30000);
  CHECK(ahead[0].size == 16);
  // What the shim read of it comes with mqs_process_has_queues.
  capnp::MallocMessageBuilder message;
  auto block = message.initRoot<wire::MemoryBlock>();
  block.setRc(0);
  block.setAddress(0x30000);
  std::vector<uint8_t> bytes(16);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = byteAt(0x30000 + i);
  mqd::setBulk(block.initData(), kj::arrayPtr(bytes.data(), bytes.size()), false);
  int asked = rig.asked.fetchBlocks;
  rig.call([&](DllCall& call) {
    rig.host.remote().keepAhead(call, rig.process, {{ahead[0], block.asReader()}});
    CHECK(rig.read(call, 0x30004, 8) == 0);
  });
  CHECK(rig.asked.fetchBlocks == asked);
  CHECK(rig.process.memory->setUpWindows().size() == 2);  // what the set-up read, for later
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process);  // the first update
    CHECK(rig.host.remote().setUpAheadWindows(rig.process, earlierSetUp).empty());
  });
  CHECK(rig.process.memory->setUpWindows().size() == 2);  // kept past the set-up
}

TEST_CASE("RemoteDebugger: a block at the edge of readable memory keeps the readable window, "
          "and a read past it fails once") {
  // Readable from 0x12000: the block at 0x10000 is only partly readable.
  Rig rig(wire::CachePolicy::EPOCH, 0x12000, 0x40000);
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process);
    CHECK(rig.read(call, 0x12008, 8) == 0);
    CHECK(rig.read(call, 0x1fff8, 8) == 0);  // inside the window kept: no round trip
    CHECK(rig.asked.fetchBlocks == 1);
    CHECK(rig.read(call, 0x11ff8, 8) == kUnreadable);  // straddles the edge
    CHECK(rig.asked.fetchBlocks == 2);
    CHECK(rig.read(call, 0x11ff8, 8) == kUnreadable);  // the failure is kept for the epoch
    CHECK(rig.asked.fetchBlocks == 2);
  });
  CHECK(rig.counted(Count::MemoryMisses) == 2);
  CHECK(rig.counted(Count::MemoryHits) == 2);   // a kept failure is a hit too
  CHECK(rig.counted(Count::BlocksFetched) == 1);  // the failed one brought nothing
  CHECK(rig.counted(Count::BlockBytes) == 0x20000 - 0x12000);  // the readable window
}

TEST_CASE("RemoteDebugger, policy epoch: windows learned in an earlier session are fetched "
          "ahead at the first epoch, and a window larger than a batch is not") {
  Rig rig(wire::CachePolicy::EPOCH, 0x10000, 0x10000 + 32u * 1024 * 1024);
  std::vector<TargetMemory::Window> learned = {
      {0x10000, kBlock}, {0x40000, kBlock}, {0x100000, RemoteDebugger::kPrefetchBatchBytes + 1}};
  rig.call([&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process, learned);
    CHECK(rig.asked.fetchBlocks == 1);
    CHECK(rig.asked.blocks.size() == 2);  // the oversized window is left to demand reads
    CHECK(rig.read(call, 0x40008, 8) == 0);
    CHECK(rig.read(call, 0x10008, 8) == 0);
    CHECK(rig.asked.fetchBlocks == 1);
  });
}

TEST_CASE("RemoteDebugger: a first set-up is sent the blocks of the symbols its image "
          "resolved") {
  Rig rig(wire::CachePolicy::EPOCH, 0x10000, 0x20000);
  auto answer = [](int rc, bool written, uint64_t address) {
    AddressAnswer a;
    a.rc = rc;
    a.knowsAddress = true;
    a.written = written;
    a.address = address;
    return a;
  };
  rig.image.symbols["typedefs_sizeof"] = answer(0, true, 0x7f0000012330);
  rig.image.symbols["communicators"] = answer(0, true, 0x7f000001e170);  // the same block
  rig.image.symbols["next_block"] = answer(0, true, 0x7f0000020000);
  rig.image.symbols["ignore_queues"] = answer(kUnreadable, false, 0);  // absent
  rig.image.symbols["asked_if_there"] = answer(0, false, 0);          // no address asked
  std::vector<TargetMemory::Window> blocks = rig.host.remote().symbolBlocks(rig.image);
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].address == 0x7f0000010000);
  CHECK(blocks[0].size == kBlock);
  CHECK(blocks[1].address == 0x7f0000020000);
}

TEST_CASE("RemoteDebugger: a symbol look-up is kept for the session, and one asked without an "
          "out-pointer does not answer one asked with it") {
  for (auto policy : {wire::CachePolicy::CALL, wire::CachePolicy::EPOCH}) {
    Rig rig(policy, 0x10000, 0x20000);
    rig.call([&](DllCall& call) {
      CHECK(rig.host.remote().findSymbol(call, rig.image, "known", nullptr) == 0);
      mqs_taddr_t a = 0;
      CHECK(rig.host.remote().findSymbol(call, rig.image, "known", &a) == 0);
      CHECK(a == 0x1000);
      CHECK(rig.asked.findSymbol == 2);  // the first answer knew no address
    });
    rig.call([&](DllCall& call) {
      mqs_taddr_t a = 0;
      CHECK(rig.host.remote().findSymbol(call, rig.image, "known", &a) == 0);
      CHECK(a == 0x1000);
      mqs_taddr_t untouched = 0x77;
      CHECK(rig.host.remote().findSymbol(call, rig.image, "missing", &untouched) == kUnreadable);
      CHECK(untouched == 0x77);  // an address the debugger did not store is not stored
      CHECK(rig.host.remote().findSymbol(call, rig.image, "missing", &untouched) == kUnreadable);
    });
    CHECK(rig.asked.findSymbol == 3);
    CHECK(rig.counted(Count::Callbacks) == 3);
    CHECK(rig.counted(Count::LookupMisses) == 3);  // new, without an address, new
    CHECK(rig.counted(Count::LookupHits) == 2);    // with its address, the kept failure
  }
}
