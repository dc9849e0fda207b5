// Round-trip economy, end to end with real processes: the session counters (read with the
// mqd-proxy CLI) match what the debugger really served; the epoch policy, learned look-ups and
// memory, and compression do what they promise; mqd-relay adds the delay and bandwidth cap it
// is told to. Only counts and lower bounds are asserted, never speeds (bench/ measures those).
// The two decisions the proxy takes from measured time are pinned in every test, so that no
// count depends on how fast or loaded the machine is: the shim's cost rule by its read cost
// (MQD_PROXY_READ_COST, PinReadCost) and the server's reads around a miss (--read-around).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <vector>
#include <regex>
#include <string>

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include "RunCommand.h"
#include "ServerProcess.h"
#include "ShimRig.h"
#include "TestPaths.h"
#include "mqd_proxy.h"

using namespace mqd::harness;

namespace {

// The shim's read cost by its cost rule (proxy-client/CostRule.h), seconds per MiB, for the sessions
// configure() sets up: "0" (reading is free: reading again is always worth a round trip),
// unless a test pins kReadCostly (a KiB read again costs more than any round trip) for a scope.
const char* gReadCost = "0";
constexpr const char* kReadCostly = "1e6";
struct PinReadCost {
  explicit PinReadCost(const char* perMiB) : was(gReadCost) { gReadCost = perMiB; }
  ~PinReadCost() { gReadCost = was; }
  const char* was;
};

// The server's bound on what a miss reads around its block (--read-around): what its timings
// give a debugger beside the server (none: a unix socket's round trip is shorter than reading
// a block), and one fast to read 20 ms away (RankByRank: the most, 4 MiB).
constexpr const char* kAroundBeside = "0";
constexpr const char* kAroundFar = "4194304";

// `more`: further options of the server's.
ServerProcess startServer(TempDir& dir, const std::string& listen,
                          const std::vector<std::string>& more = {}) {
  std::vector<std::string> args{"--listen", listen, "--dll", mqd::test::kTestDll3, "--log-file",
                                dir / "server.log", "--read-around", kAroundBeside};
  args.insert(args.end(), more.begin(), more.end());
  return ServerProcess(mqd::test::kServer, args);
}

void configure(const std::string& endpoint, const char* cache, const char* compress,
               TempDir& dir) {
  setenv("MQD_PROXY_SERVER", endpoint.c_str(), 1);
  setenv("MQD_PROXY_DLL", mqd::test::kTestDll3, 1);
  setenv("MQD_PROXY_LOG_FILE", (dir / "shim.log").c_str(), 1);
  // The shim's state of this test alone: another run's records would answer its set-ups.
  setenv("MQD_PROXY_STATE_DIR", (dir / "shim-state").c_str(), 1);
  setenv("MQD_PROXY_CACHE", cache, 1);
  setenv("MQD_PROXY_COMPRESS", compress, 1);
  setenv("MQD_PROXY_READ_COST", gReadCost, 1);
  unsetenv("MQD_PROXY_TIMEOUT");
}

using Counters = std::map<std::string, uint64_t>;

// The counters of the server's most recent session with a DLL (not an earlier stats
// connection), from `mqd-proxy stats --json`, read with Cap'n Proto's JSON codec.
Counters lastSession(const std::string& endpoint) {
  // (stderr apart: only the document is read)
  Command c =
      run("(" + std::string(mqd::test::kCli) + " --server " + endpoint + " stats --json 2>/dev/null)");
  REQUIRE(c.status == 0);
  capnp::MallocMessageBuilder message;
  auto doc = message.initRoot<capnp::JsonValue>();
  capnp::JsonCodec().decodeRaw(kj::arrayPtr(c.output.data(), c.output.size()), doc);
  REQUIRE(doc.isArray());
  auto field = [](capnp::JsonValue::Reader object, const char* name) {
    for (auto f : object.getObject()) {
      if (f.getName() == name) return f.getValue();
    }
    return capnp::JsonValue::Reader();
  };
  kj::Maybe<capnp::JsonValue::Reader> session;
  for (auto s : doc.asReader().getArray()) {
    auto dll = field(s, "dll");
    if (dll.isString() && dll.getString().startsWith("/")) session = s;
  }
  Counters out;
  KJ_IF_MAYBE(s, session) {
    for (auto counter : field(*s, "counters").getObject()) {
      out[counter.getName()] = static_cast<uint64_t>(counter.getValue().getNumber());
    }
  } else {
    FAIL("no session with a DLL in: " << c.output);
  }
  return out;
}

uint64_t roundTrips(Counters& c) { return c["rt.calls"] + c["rt.callbacks"]; }

// The debugger callbacks that need an answer from the debugger: each is one round trip
// when nothing is cached (the others are answered on the server or are notifications). For
// get_type_sizes the shim itself first asks get_image, to use that image's callback table as
// the DLL would: that get_image is not a round trip.
long answeredCallbacks(DebuggerHarness& d) {
  long n = -d.callbackCounts()["get_type_sizes"];
  for (const char* k : {"errorstring", "get_type_sizes", "find_function", "find_symbol",
                        "find_type", "field_offset", "sizeof", "get_global_rank", "get_image",
                        "fetch_data", "get_process_job", "get_process_identity", "get_process"}) {
    n += d.callbackCounts()[k];
  }
  return n;
}

}  // namespace

TEST_CASE("counters: with caching off, every callback the debugger answered is one round trip") {
  TempDir dir;
  ServerProcess server = startServer(dir, "unix:" + (dir / "s.sock"));
  configure(server.endpoint(), "off", "off", dir);
  long answered;
  int ops;
  {
    Rig rig(5);
    rig.setUp();
    ops = rig.refresh();
    answered = answeredCallbacks(*rig.d);
  }
  CHECK(ops == 5 * 3 * 5);
  Counters c = lastSession(server.endpoint());
  CHECK(answered > 100);
  CHECK(c["rt.callbacks"] == static_cast<uint64_t>(answered));
  CHECK(c["rt.calls"] > static_cast<uint64_t>(ops));  // every next_operation went to the server
  CHECK(c["cache.memory_hits"] == 0);
  CHECK(c["cache.lookup_hits"] == 0);
  CHECK(c["walk.recorded"] == 0);
  CHECK(c["wire.bytes_in"] > 0);
  CHECK(c["wire.bytes_out"] > 0);
}

TEST_CASE("epoch policy: in a first session ever, an image's look-ups are found before its "
          "set-up and asked in one round trip") {
  // Nothing learned on either side: the server runs the image's set-up in a child with
  // stand-in answers to find its look-ups (proxy-server/worker/LookupDiscovery.h), and asks the
  // debugger for them all in one round trip before the real set-up; without it (the server's
  // --no-lookup-discovery, or `call`, which keeps nothing ahead) each is a round trip. Every
  // look-up the image's set-up makes is one of those (the test DLL's path does not depend on
  // the answers' values).
  auto imageSetUp = [](const char* cache, bool discovery = true) {
    TempDir dir;
    ServerProcess server =
        startServer(dir, "unix:" + (dir / "s.sock"),
                    discovery ? std::vector<std::string>{} : std::vector<std::string>{
                                                                 "--no-lookup-discovery"});
    configure(server.endpoint(), cache, "auto", dir);
    Rig rig(3);
    char* m = nullptr;
    rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
    long before = answeredCallbacks(*rig.d);
    REQUIRE(rig.dll().setup_image(rig.i(), rig.d->imageCallbacks()) == mqs_ok);
    REQUIRE(rig.dll().image_has_queues(rig.i(), &m) == mqs_ok);
    long lookups = answeredCallbacks(*rig.d) - before;
    Counters c = lastSession(server.endpoint());
    return std::make_tuple(roundTrips(c), lookups, c);
  };
  auto [epoch, epochLookups, e] = imageSetUp("epoch");
  auto [call, callLookups, c] = imageSetUp("call");
  auto [off, offLookups, o] = imageSetUp("epoch", false);
  MESSAGE("a first image set-up: ", epoch, " round trips under epoch (", e["rt.calls"],
          " calls, ", e["rt.callbacks"], " callbacks; ", epochLookups, " look-ups answered, ",
          e["cache.lookups_discovered"], " found before, ", e["cache.lookup_misses"],
          " missed), ", call, " under call (", callLookups, " look-ups)");
  CHECK(callLookups > 20);
  CHECK(call >= static_cast<uint64_t>(callLookups));
  CHECK(e["cache.lookups_discovered"] >= static_cast<uint64_t>(callLookups));
  CHECK(e["cache.lookup_misses"] == 0);  // the real set-up asked nothing one by one
  // The session's opening, the set-up (its has-queues call behind it), and the one batch.
  CHECK(e["rt.callbacks"] == 1);
  CHECK(epoch == 3);
  // Switched off: one by one, as under call.
  CHECK(o["cache.lookups_discovered"] == 0);
  CHECK(o["rt.callbacks"] == static_cast<uint64_t>(offLookups));
  CHECK(offLookups == callLookups);
}

TEST_CASE("epoch policy: a repeat refresh costs a few round trips; a learned session fewer") {
  TempDir dir;
  ServerProcess server = startServer(dir, "unix:" + (dir / "s.sock"));
  configure(server.endpoint(), "epoch", "auto", dir);
  uint64_t cold, unchanged, repeat, learned;
  {
    Rig rig(200);
    rig.setUp();
    CHECK(rig.refresh() == 200 * 3 * 5);
    Counters first = lastSession(server.endpoint());
    cold = roundTrips(first);
    // Nothing changed: the last update is held, proved by the shim's reads (the server said
    // it asked for nothing but blocks of the process's memory); the server walks nothing.
    CHECK(rig.refresh() == 200 * 3 * 5);
    Counters second = lastSession(server.endpoint());
    unchanged = roundTrips(second) - cold;
    CHECK(second["walk.recorded"] == 1);
    // One request changed: the update goes, with what the last epoch read, read ahead.
    CHECK(progressLastRequest(rig.target, 1) != 0);
    CHECK(rig.refresh() == 200 * 3 * 5);
    Counters third = lastSession(server.endpoint());
    repeat = roundTrips(third) - roundTrips(second);
    CHECK(third["memory.blocks_prefetched"] > 0);
    // The shim read the previous epoch's memory ahead and sent it with the update (the first
    // update named it): the server asked for nothing.
    CHECK(third["rt.callbacks"] == first["rt.callbacks"]);
    // The shim answered the iteration from the walk: only update went to the server.
    CHECK(third["walk.recorded"] == 2);
  }
  {
    Rig rig(200);
    // rig.setUp(), counting the debugger's fetch_data in each call.
    auto fetches = [&rig] { return rig.d->callbackCounts()["fetch_data"]; };
    char* m = nullptr;
    rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
    REQUIRE(rig.dll().setup_image(rig.i(), rig.d->imageCallbacks()) == mqs_ok);
    REQUIRE(rig.dll().image_has_queues(rig.i(), &m) == mqs_ok);
    long beforeProcess = fetches();
    REQUIRE(rig.dll().setup_process(rig.p(), rig.d->processCallbacks()) == mqs_ok);
    long inSetUpProcess = fetches() - beforeProcess;
    REQUIRE(rig.dll().process_has_queues(rig.p(), &m) == mqs_ok);
    long inHasQueues = fetches() - beforeProcess - inSetUpProcess;
    Counters setUp = lastSession(server.endpoint());
    // This DLL reads at mqs_process_has_queues; what the last session's set-up read came with
    // mqs_setup_process already (the image's reply named it), inside that call.
    CHECK(inSetUpProcess > 0);
    CHECK(inHasQueues == 0);
    CHECK(rig.refresh() == 200 * 3 * 5);
    Counters c = lastSession(server.endpoint());
    learned = roundTrips(c);
    // The first update read nothing the last session had not read in one of its epochs (its
    // first update read more than its second).
    CHECK(c["cache.memory_misses"] == setUp["cache.memory_misses"]);
    // ... and the set-up's reply named it all, so the shim read it ahead: the server asked the
    // debugger nothing during the update.
    CHECK(c["rt.callbacks"] == setUp["rt.callbacks"]);
    // Nor during the set-up.
    CHECK(setUp["cache.memory_misses"] == 0);
    CHECK(setUp["memory.blocks_prefetched"] > 0);
    CHECK(c["cache.lookups_prefetched"] > 0);
    CHECK(c["cache.lookup_misses"] == 0);
  }
  MESSAGE("round trips: cold session ", cold, ", refresh of the same memory ", unchanged,
          ", refresh after a change ", repeat, ", learned session ", learned);
  CHECK(unchanged == 0);
  CHECK(repeat == 1);
  CHECK(learned < cold);
  CHECK(cold < 60);  // 3,000 operations; the naive path takes tens of thousands
}

// The server of a RankByRank job, listening in `dir`, keeping what it learns in `stateDir`
// and reading `around` bytes at most around a miss.
std::unique_ptr<ServerProcess> rankByRankServer(TempDir& dir, const std::string& stateDir,
                                                const char* around = kAroundFar) {
  return std::make_unique<ServerProcess>(
      mqd::test::kServer,
      std::vector<std::string>{"--listen", "unix:" + (dir / "s.sock"), "--dll",
                               mqd::test::kTestDll3, "--log-file", dir / "server.log",
                               "--state-dir", stateDir, "--read-around", around});
}

// Waits until the server's log says a worker exited: what its session learned is kept by then.
void waitForWorkerExit(const std::string& log) {
  bool ended = false;
  for (int i = 0; i < 200 && !ended; ++i) {
    ended = run("grep -q 'worker [0-9]* exited' " + log).status == 0;
    if (!ended) ::usleep(50 * 1000);
  }
  REQUIRE(ended);
}

// The shape of a RankByRank job: `ranks`; `noIdentity`: the DLL never asks who a process is,
// as Open MPI's (its set-ups are then recorded, its updates refreshed ahead); `sequencePerRank`: each
// rank's communicator sequence number (which the set-up reads) is its own; `shimState`: the
// shim's state directory, if not one of this job's.
constexpr int kJobRanks = 4;
struct RankByRankShape {
  int ranks = kJobRanks;
  bool noIdentity = false;
  bool sequencePerRank = false;
  std::string shimState;
  // Rank `longRank` holds `longOps` operations in each queue (0: as the others): its walk runs
  // far past what a guess from another rank's names.
  int longRank = -1;
  int longOps = 0;
};

// A job of kRanks ranks (or shape.ranks) set up by the harness through the shim (the server
// on a unix socket: `shared`, or one of its own), then refreshed rank by rank by round(). The
// shim reaches the server through an mqd-relay with a round trip of kRelayRoundTripMs, as a
// server on another machine. Whether a refresh ahead is worth it is the pinned read cost's
// answer (gReadCost), never the timings' (a loaded machine's slow reads made it leave ranks
// out: CI r35, r38, and a fresh machine's sanitized run at f33674d).
struct RankByRank {
  static constexpr int kRanks = kJobRanks;
  static constexpr int kRelayRoundTripMs = 20;
  using Shape = RankByRankShape;
  int n;
  TempDir dir;
  std::unique_ptr<ServerProcess> ownServer;
  ServerProcess& server;
  ServerProcess relay;
  std::vector<std::unique_ptr<TargetModel>> targets;
  DebuggerHarness d;
  std::vector<mqs_process*> processes;

  // `apart`: each rank's data and heap are mappings of their own, at other places in each
  // rank (as address-space randomisation leaves a real job's). `imagesFirst`: rank 0 is set
  // up whole, then every other image, then every other process (as `mqd dump --all` does);
  // else rank by rank. setUpRoundTrips: what the set-ups of the ranks after the first cost.
  // `ops`: pending operations per queue of each rank. `shimState`: the shim keeps its state
  // in a directory of this job's (else MQD_PROXY_STATE_DIR=off: nothing past the session).
  explicit RankByRank(DebuggerHarness::Options options, ServerProcess* shared = nullptr,
                      bool apart = false, bool imagesFirst = false, int ops = 50,
                      bool shimState = true, const Shape& shape = Shape{})
      : n(shape.ranks),
        ownServer(shared ? nullptr : rankByRankServer(dir, dir / "state")),
        server(shared ? *shared : *ownServer),
        relay(mqd::test::kRelay,
              {"--listen", "unix:" + (dir / "relay.sock"), "--connect", server.endpoint(),
               "--delay-ms", std::to_string(kRelayRoundTripMs / 2)},
              false),
        d(mqd::test::kShim, options) {
    configure(relay.endpoint(), "epoch", "auto", dir);  // read when the session opens
    if (!shimState) setenv("MQD_PROXY_STATE_DIR", "off", 1);
    if (!shape.shimState.empty()) setenv("MQD_PROXY_STATE_DIR", shape.shimState.c_str(), 1);
    for (int r = 0; r < n; ++r) {
      uint64_t moved = static_cast<uint64_t>(r) * 0x2345000;
      targets.push_back(
          std::make_unique<TargetModel>(8, false, apart ? 0x5555a0000000 + moved : 0));
      if (apart) targets.back()->placeData(0x555500000000 + static_cast<uint64_t>(r) * 0x7000);
      size_t queued = r == shape.longRank ? static_cast<size_t>(shape.longOps) : ops;
      Job job = standardJob(queued, n, r);
      job.noIdentity = shape.noIdentity;
      if (shape.sequencePerRank) job.sequence = 1 + r;
      layOut(*targets.back(), job);
    }
    d.dll().setup_basic_callbacks(d.basicCallbacks());
    std::vector<mqs_image*> images;
    for (int r = 0; r < n; ++r) {
      auto* image = d.addImage(*targets[r], "a.out");
      images.push_back(reinterpret_cast<mqs_image*>(image));
      processes.push_back(reinterpret_cast<mqs_process*>(
          d.addProcess(image, r, "rank" + std::to_string(r))));
    }
    auto setUpImage = [&](int r) {
      char* m = nullptr;
      REQUIRE(d.dll().setup_image(images[r], d.imageCallbacks()) == mqs_ok);
      REQUIRE(d.dll().image_has_queues(images[r], &m) == mqs_ok);
    };
    auto setUpProcess = [&](int r) {
      char* m = nullptr;
      REQUIRE(d.dll().setup_process(processes[r], d.processCallbacks()) == mqs_ok);
      REQUIRE(d.dll().process_has_queues(processes[r], &m) == mqs_ok);
    };
    setUpImage(0);
    setUpProcess(0);
    Counters before = lastSession(server.endpoint());
    for (int r = 1; r < n; ++r) {
      setUpImage(r);
      if (!imagesFirst) setUpProcess(r);
    }
    for (int r = 1; r < n && imagesFirst; ++r) setUpProcess(r);
    Counters after = lastSession(server.endpoint());
    setUpRoundTrips = roundTrips(after) - roundTrips(before);
  }
  uint64_t setUpRoundTrips = 0;

  // One refresh of every rank in order; `change(r)` runs before rank r's update. Returns the
  // round trips it cost; `perRank`, if given, gets each rank's.
  uint64_t round(const std::function<void(int)>& change,
                 std::vector<uint64_t>* perRank = nullptr) {
    Counters now = lastSession(server.endpoint());
    uint64_t before = roundTrips(now);
    for (int r = 0; r < n; ++r) {
      if (change) change(r);
      uint64_t rankBefore = 0;
      if (perRank) {
        Counters c = lastSession(server.endpoint());
        rankBefore = roundTrips(c);
      }
      int ops = 0;
      REQUIRE(d.dll().update_communicator_list(processes[r]) == mqs_ok);
      REQUIRE(d.dll().setup_communicator_iterator(processes[r]) == mqs_ok);
      do {
        for (int q = 0; q < 3; ++q) {
          REQUIRE(d.dll().setup_operation_iterator(processes[r], q) == mqs_ok);
          mqs_pending_operation op;
          while (d.dll().next_operation(processes[r], &op) == mqs_ok) ++ops;
        }
      } while (d.dll().next_communicator(processes[r]) == mqs_ok);
      CHECK(ops > 0);
      if (perRank) {
        Counters c = lastSession(server.endpoint());
        perRank->push_back(roundTrips(c) - rankBefore);
      }
    }
    Counters after = lastSession(server.endpoint());
    return roundTrips(after) - before;
  }
};

TEST_CASE("epoch policy: a job refreshed rank by rank costs one round trip for all its ranks, "
          "none when nothing changed") {
  // A rank whose memory reads as in its last epoch (served from a refresh ahead, or its own
  // update, which the server called provable) is neither sent nor updated: that epoch's walk
  // answers (docs/round-trips.md, "An epoch like the last"). When ranks moved, the first
  // rank's update refreshes the others ahead (those refreshed after it last time); each of
  // their own updates is then served by the shim once their memory reads the same. A rank
  // that changed in between costs one more round trip, its own update.
  RankByRank job(DebuggerHarness::Options{});
  constexpr int kRanks = RankByRank::kRanks;
  uint64_t first = job.round(nullptr);
  Counters c1 = lastSession(job.server.endpoint());
  uint64_t unchanged = job.round(nullptr);
  Counters c2 = lastSession(job.server.endpoint());
  uint64_t moved = job.round([&](int r) {
    if (r == 0) {
      for (auto& target : job.targets) CHECK(progressLastRequest(*target, 1) != 0);
    }
  });
  Counters c3 = lastSession(job.server.endpoint());
  uint64_t changed = job.round([&](int r) {
    if (r == 1) CHECK(progressLastRequest(*job.targets[2], 2) != 0);  // before rank 2's update
  });
  uint64_t last = job.round(nullptr);
  Counters c5 = lastSession(job.server.endpoint());
  MESSAGE("round trips of a refresh of ", kRanks, " ranks: first ", first, ", unchanged ",
          unchanged, ", every rank moved ", moved, ", one rank changed ", changed, ", then ",
          last);
  CHECK(unchanged == 0);
  CHECK(c2["walk.recorded"] == c1["walk.recorded"]);
  CHECK(moved == 1);
  CHECK(changed == 1);
  CHECK(last == 0);
  CHECK(c3["walk.refreshed_ahead"] == kRanks - 1);
  // Where rank 2 changed, its update checked the epoch held after it (rank 3's, read the
  // same: kept, and served) and sent no other; its own update is held for the last round.
  CHECK(c5["walk.refreshed_ahead"] == kRanks - 1);
  // The shim's own counts, sent with the last update that went (rank 2's): every rank but
  // the first served from a refresh ahead when all moved; stale, rank 0's epoch then and
  // rank 2's.
  CHECK(c5["client.refreshes_ahead"] == kRanks - 1);
  CHECK(c5["client.refreshes_stale"] == 2);
}

TEST_CASE("epoch policy: in a learned session a job's first dump refreshes the others ahead "
          "with the first rank's update") {
  // An earlier session of the same processes left what each one's updates read: their set-up
  // replies name it, so their first updates go with the first rank's, as later rounds do.
  // The earlier session's records are whole once its first round is over: the server that
  // served it serves the next one at once.
  TempDir shared;
  auto server = rankByRankServer(shared, shared / "state");
  Counters cold, learned;
  uint64_t coldFirst, learnedFirst;
  {
    RankByRank job(DebuggerHarness::Options{}, server.get());
    coldFirst = job.round(nullptr);
    cold = lastSession(server->endpoint());
  }
  {
    RankByRank job(DebuggerHarness::Options{}, server.get());
    learnedFirst = job.round(nullptr);
    learned = lastSession(server->endpoint());
    CHECK(job.round(nullptr) == 0);  // every rank's epoch held
  }
  MESSAGE("round trips of a first refresh of ", RankByRank::kRanks, " ranks: cold session ",
          coldFirst, ", learned session ", learnedFirst);
  CHECK(cold["walk.refreshed_ahead"] == 0);  // nothing learned: nothing offered
  // Every rank after the first is refreshed ahead.
  CHECK(learned["walk.refreshed_ahead"] == RankByRank::kRanks - 1);
  CHECK(learnedFirst == 1);
}

TEST_CASE("epoch policy: in a first session, the others' first updates are guessed from the "
          "first rank's") {
  // Nothing learned of these ranks: the server guesses, from what rank 0's first update read,
  // what each other rank's will read (proxy-server/caches/PeerLayout.h), reading what it needs of
  // them in one round trip for all per round; the shim reads the guesses with rank 1's update
  // and refreshes ranks 2 and 3 ahead with it. Without the guesses each rank's first update
  // asks for its memory block by block, as rank 0's does.
  RankByRank job(DebuggerHarness::Options{}, nullptr, /*apart=*/true);
  std::vector<uint64_t> perRank;
  job.round(nullptr, &perRank);
  Counters c = lastSession(job.server.endpoint());
  MESSAGE("round trips of each rank's first refresh, ranks never seen: rank 0 ", perRank[0],
          " (its misses, then the guesses' rounds), rank 1 ", perRank[1], ", rank 2 ",
          perRank[2], ", rank 3 ", perRank[3]);
  CHECK(c["memory.peer_guesses"] == RankByRank::kRanks - 1);
  CHECK(c["walk.refreshed_ahead"] == RankByRank::kRanks - 2);
  CHECK(perRank[0] >= 2);  // its heap is nowhere near what its set-up read: a miss at least
  CHECK(perRank[1] == 1);
  for (int r = 2; r < RankByRank::kRanks; ++r) CHECK(perRank[r] == 0);
}

TEST_CASE("epoch policy: in a job never seen, the first rank's image set-up answers the "
          "others'") {
  // The ranks' symbols resolve at addresses of their own, but the image set-up asks only
  // whether they exist (with types and fields): rank 1's record (rank 0's set-up asked its
  // look-ups one by one: nothing learned) answers the next images' set-ups
  // (proxy-client/SetUpRecall.h). Each costs no round trip of its own, but its reply is waited for
  // before the next process's set-up: set up image after image, they are waited for once.
  // (This DLL's process set-up asks the debugger for the rank: not recorded, a round trip
  // more per process; Open MPI's does not.)
  // The shim's counters reach the server with the first update.
  // The records serve within the session: without a state directory too.
  auto setUps = [](bool imagesFirst, bool shimState) {
    RankByRank job(DebuggerHarness::Options{}, nullptr, /*apart=*/true, imagesFirst, /*ops=*/50,
                   shimState);
    job.round(nullptr);
    return std::make_pair(job.setUpRoundTrips, lastSession(job.server.endpoint()));
  };
  auto [interleaved, a] = setUps(false, true);
  auto [imagesFirst, b] = setUps(true, true);
  auto [stateOff, c] = setUps(true, false);
  MESSAGE("round trips of the set-ups of ranks 1 to ", RankByRank::kRanks - 1,
          ", ranks never seen: rank by rank ", interleaved, " and ", a["client.recalled_waits"],
          " waits, images first ", imagesFirst, " and ", b["client.recalled_waits"],
          " waits, the same without a state directory ", stateOff, " and ",
          c["client.recalled_waits"], " waits");
  for (Counters* s : {&a, &b, &c}) {
    CHECK((*s)["client.setups_recalled"] == RankByRank::kRanks - 2);
    CHECK((*s)["client.setups_contradicted"] == 0);
  }
  CHECK(a["client.recalled_waits"] == RankByRank::kRanks - 2);
  CHECK(b["client.recalled_waits"] == 1);
  CHECK(c["client.recalled_waits"] == 1);
  CHECK(imagesFirst == interleaved);
  CHECK(stateOff == imagesFirst);
}

// The DLL learned by a server (its state in `shared`/state) and a shim (`shared`/shim-state),
// with nothing learned of any job's memory: a job of two ranks of its own, then all that was
// learned of its memory and set-ups forgotten. Returns the shape of a job never seen, with
// that shim state.
RankByRank::Shape learnOnlyTheDll(TempDir& shared, ServerProcess& server) {
  RankByRank::Shape shape;
  shape.noIdentity = true;
  shape.shimState = shared / "shim-state";
  {
    shape.ranks = 2;
    RankByRank earlier(DebuggerHarness::Options{}, &server, /*apart=*/true,
                       /*imagesFirst=*/true, /*ops=*/50, true, shape);
    earlier.round(nullptr);
  }
  waitForWorkerExit(shared / "server.log");
  REQUIRE(run("rm -f " + (shared / "state") + "/blocks-* " + (shared / "shim-state") +
              "/setups-*").status == 0);
  shape.ranks = kJobRanks;
  return shape;
}

TEST_CASE("epoch policy: a job never seen costs round trips that do not grow with its ranks") {
  // A DLL the proxy knows (its look-ups learned on both sides) and a job it never saw, whose
  // ranks lie at addresses of their own, set up as `mqd dump --all` does (rank 0 whole, then
  // the images, then the processes) and refreshed rank by rank. Rank 0's process set-up is
  // recorded; every other rank's is answered from that record moved by the distance its own
  // symbols lie from rank 0's, once the bytes it reads there are proved the same
  // (SetUpRecall::shiftTo), with all replies waited for once; every first update after rank
  // 0's is guessed and refreshed ahead. So 4, 16 and 64 ranks cost the same. With each rank's
  // set-up reading bytes of its own (its sequence number), no record proves another rank's
  // set-up and each costs its round trip: the count grows with the ranks.
  struct Cost {
    uint64_t setUps = 0;
    uint64_t firstRound = 0;
    Counters counters;
  };
  auto neverSeen = [](int ranks, bool sequencePerRank) {
    TempDir shared;
    auto server = rankByRankServer(shared, shared / "state");
    RankByRank::Shape shape = learnOnlyTheDll(shared, *server);
    shape.ranks = ranks;
    shape.sequencePerRank = sequencePerRank;
    RankByRank job(DebuggerHarness::Options{}, server.get(), /*apart=*/true,
                   /*imagesFirst=*/true, /*ops=*/50, true, shape);
    Cost cost;
    cost.setUps = job.setUpRoundTrips;
    cost.firstRound = job.round(nullptr);
    cost.counters = lastSession(server->endpoint());
    unsetenv("MQD_PROXY_STATE_DIR");
    return cost;
  };
  std::map<int, Cost> costs;
  for (int ranks : {4, 16, 64}) costs[ranks] = neverSeen(ranks, false);
  Cost own4 = neverSeen(4, true), own16 = neverSeen(16, true);
  for (auto& [ranks, c] : costs) {
    MESSAGE(ranks, " ranks never seen: set-ups of ranks 1 to ", ranks - 1, " ", c.setUps,
            " round trips, first refresh of all ", c.firstRound, "; set-ups answered from "
            "records ", c.counters["client.setups_recalled"]);
    CHECK(c.counters["client.setups_recalled"] == 2 * uint64_t(ranks - 1));
    CHECK(c.counters["client.setups_contradicted"] == 0);
    CHECK(c.counters["memory.peer_guesses"] == uint64_t(ranks - 1));
  }
  MESSAGE("each rank's set-up reading bytes of its own: 4 ranks ", own4.setUps, " + ",
          own4.firstRound, ", 16 ranks ", own16.setUps, " + ", own16.firstRound);
  for (int ranks : {16, 64}) {
    CHECK(costs[ranks].setUps == costs[4].setUps);
    CHECK(costs[ranks].firstRound == costs[4].firstRound);
  }
  CHECK(own4.counters["client.setups_recalled"] == 3);  // the images alone
  CHECK(own16.setUps + own16.firstRound >= own4.setUps + own4.firstRound + 12);
}

TEST_CASE("epoch policy: a refresh ahead whose guess fell short is kept, proved by the blocks "
          "fetched for it") {
  // A job never seen whose rank 3 holds far more operations than the others: its guess (from
  // rank 0's walk) names the start of its queues alone, and its refresh ahead with rank 1's
  // update misses the rest, fetched in one round trip (its first miss reads the whole bound
  // around). The shim keeps what the server fetched for it and proves the refresh by those
  // blocks as by the ones it sent: rank 3's own update costs no round trip. A change only a
  // fetched block holds (the heap's last request) fails that proof: the update then goes to
  // the server.
  auto firstRound = [](bool change) {
    TempDir shared;
    auto server = rankByRankServer(shared, shared / "state");
    RankByRank::Shape shape = learnOnlyTheDll(shared, *server);
    shape.longRank = 3;
    shape.longOps = 1000;
    RankByRank job(DebuggerHarness::Options{}, server.get(), /*apart=*/true,
                   /*imagesFirst=*/true, /*ops=*/50, true, shape);
    std::vector<uint64_t> perRank;
    job.round([&](int r) {
      if (r == 3 && change) CHECK(progressLastRequest(*job.targets[3], 1) != 0);
    }, &perRank);
    unsetenv("MQD_PROXY_STATE_DIR");
    return std::make_pair(perRank, lastSession(server->endpoint()));
  };
  auto [kept, k] = firstRound(false);
  auto [changed, c] = firstRound(true);
  MESSAGE("round trips of each rank's first update, rank 3 long: ", kept[0], " ", kept[1], " ",
          kept[2], " ", kept[3], "; rank 3 changed: ", changed[3]);
  CHECK(k["walk.refreshed_ahead"] == RankByRank::kRanks - 2);  // ranks 2 and 3
  CHECK(kept[2] == 0);
  CHECK(kept[3] == 0);
  CHECK(k["client.refreshes_stale"] == 0);
  CHECK(c["walk.refreshed_ahead"] == RankByRank::kRanks - 2);
  CHECK(c["client.refreshes_stale"] == 1);
  CHECK(changed[3] == 1);
}

TEST_CASE("epoch policy: a rank that changed after its refresh ahead from a guess is updated "
          "again") {
  // Rank 3's refresh ahead is made from its guess with rank 1's update; the rank then changes
  // before its own update, whose proof finds its memory changed: that update goes to the
  // server (one round trip), as without a guess. Rank 2's, unchanged, is served by the shim.
  // Refreshes ahead are made only where reading a rank again is worth a round trip: with the
  // read cost pinned so that it never is, no rank is refreshed ahead and each rank's update is
  // its own round trip at least.
  auto firstRound = [](const char* readCost) {
    PinReadCost pinned(readCost);
    RankByRank job(DebuggerHarness::Options{}, nullptr, /*apart=*/true);
    std::vector<uint64_t> perRank;
    job.round([&](int r) {
      if (r == 3) CHECK(progressRequests(*job.targets[3], 1) > 0);
    }, &perRank);
    return std::make_pair(perRank, lastSession(job.server.endpoint()));
  };
  SUBCASE("reading again worth a round trip") {
    auto [perRank, c] = firstRound("0");
    CHECK(c["walk.refreshed_ahead"] == RankByRank::kRanks - 2);
    CHECK(perRank[1] == 1);
    CHECK(perRank[2] == 0);
    CHECK(perRank[3] == 1);
  }
  SUBCASE("reading again never worth a round trip") {
    auto [perRank, c] = firstRound(kReadCostly);
    CHECK(c["walk.refreshed_ahead"] == 0);
    for (int r = 0; r < RankByRank::kRanks; ++r) CHECK(perRank[r] >= 1);
  }
}

TEST_CASE("epoch policy: an epoch that misses again and again reads blocks around the next "
          "miss, within the server's bound") {
  // Rank 0's first update walks heap objects the server was never told of (an epoch nothing
  // guided): from its first miss on, each reads the blocks around the one it needs, within
  // the server's bound: what
  // the debugger reads in half a round trip by the callbacks' timings
  // (RemoteDebugger::aroundBudget, whose rule RemoteDebuggerTest checks for pinned timings),
  // pinned here by --read-around. A debugger slower to read than the round trip gets none, and
  // pays a round trip a block.
  auto firstUpdate = [](const char* around) {
    TempDir shared;
    auto server = rankByRankServer(shared, shared / "state", around);
    RankByRank job(DebuggerHarness::Options{}, server.get(), /*apart=*/true,
                   /*imagesFirst=*/false, /*ops=*/1000);
    std::vector<uint64_t> perRank;
    job.round(nullptr, &perRank);
    return std::make_pair(perRank[0], lastSession(job.server.endpoint()));
  };
  auto [fast, f] = firstUpdate(kAroundFar);
  auto [slow, s] = firstUpdate("0");
  MESSAGE("round trips of rank 0's first update: reading up to 4 MiB around a miss ", fast, " (",
          f["cache.memory_misses"], " misses), nothing around ", slow, " (",
          s["cache.memory_misses"], " misses)");
  CHECK(s["cache.memory_misses"] >= 4);
  CHECK(f["cache.memory_misses"] < s["cache.memory_misses"]);
  CHECK(fast < slow);
}

TEST_CASE("epoch policy: a session ended after its set-ups leaves nothing learned of memory") {
  // Its set-ups' reads alone would make the next session's set-up replies say "learned": the
  // shim would offer the others, and their refreshes ahead would miss memory at every block
  // (48 round trips for this job, not 8).
  TempDir shared;
  auto server = rankByRankServer(shared, shared / "state");
  uint64_t coldFirst, afterSetUpsFirst;
  {
    RankByRank job(DebuggerHarness::Options{});  // a server of its own: nothing learned
    coldFirst = job.round(nullptr);
  }
  { RankByRank job(DebuggerHarness::Options{}, server.get()); }  // set-ups only
  waitForWorkerExit(shared / "server.log");
  Counters counters;
  {
    RankByRank job(DebuggerHarness::Options{}, server.get());
    afterSetUpsFirst = job.round(nullptr);
    counters = lastSession(server->endpoint());
  }
  MESSAGE("round trips of a first refresh of ", RankByRank::kRanks, " ranks: cold ", coldFirst,
          ", after a session of set-ups only ", afterSetUpsFirst);
  CHECK(counters["walk.refreshed_ahead"] == 0);
  CHECK(afterSetUpsFirst == coldFirst);
}

TEST_CASE("epoch policy: a debugger slow to read its targets gets no refresh ahead, no epoch "
          "held") {
  // Reading a rank's memory again for the proof would cost more than the round trip a refresh
  // ahead saves (the read cost pinned where a KiB costs more than any round trip; the rule's
  // measured inputs are CostRuleTest's and ReadCostTest's), and so would proving an update
  // held: each rank's update is its own round trip, with its memory read once.
  PinReadCost costly(kReadCostly);
  RankByRank job(DebuggerHarness::Options{});
  job.round(nullptr);
  uint64_t second = job.round(nullptr);
  Counters c = lastSession(job.server.endpoint());
  CHECK(second == RankByRank::kRanks);
  CHECK(c["walk.refreshed_ahead"] == 0);
}

TEST_CASE("epoch policy: the images after the first in a session get their look-ups ahead") {
  // The ranks of a job are images of one program: the look-ups the first image's set-up made
  // are asked for the next image in one round trip, before the DLL asks (each image's answers
  // are its own).
  TempDir dir;
  ServerProcess server(mqd::test::kServer,
                       {"--listen", "unix:" + (dir / "s.sock"), "--dll", mqd::test::kTestDll3,
                        "--log-file", dir / "server.log", "--state-dir", dir / "state"});
  configure(server.endpoint(), "epoch", "auto", dir);
  Rig rig(10);
  rig.setUp();
  Counters first = lastSession(server.endpoint());
  auto* image = rig.d->addImage(rig.target, "b.out");
  char* message = nullptr;
  REQUIRE(rig.dll().setup_image(reinterpret_cast<mqs_image*>(image),
                                rig.d->imageCallbacks()) == mqs_ok);
  REQUIRE(rig.dll().image_has_queues(reinterpret_cast<mqs_image*>(image), &message) == mqs_ok);
  Counters second = lastSession(server.endpoint());
  uint64_t firstCallbacks = first["rt.callbacks"];
  uint64_t secondCallbacks = second["rt.callbacks"] - first["rt.callbacks"];
  MESSAGE("callback round trips of an image's set-up: first ", firstCallbacks, ", second ",
          secondCallbacks);
  // Nothing learned before (a fresh state): the first image's batch is what its set-up's run
  // with stand-in answers found (LookupDiscovery), no more.
  CHECK(first["cache.lookups_discovered"] > 10);
  CHECK(first["cache.lookups_prefetched"] == first["cache.lookups_discovered"]);
  CHECK(second["cache.lookups_prefetched"] > first["cache.lookups_prefetched"]);
  CHECK(second["cache.lookups_discovered"] == first["cache.lookups_discovered"]);
  CHECK(second["cache.lookup_misses"] == first["cache.lookup_misses"]);
  // The shim answered the look-ups with the request; at most the image's type sizes remain.
  CHECK(secondCallbacks <= 1);
}

TEST_CASE("epoch policy: a process's image and type sizes travel with mqs_setup_process") {
  // Every DLL asks for both during its set-up; under epoch the shim sends them with the
  // request, under call the server asks when the DLL asks. The set-up's other callbacks (the
  // rank, memory) are asked for as before in both.
  auto setUpCallbacks = [](const char* cache) {
    TempDir dir;
    ServerProcess server = startServer(dir, "unix:" + (dir / "s.sock"));
    configure(server.endpoint(), cache, "off", dir);
    Rig rig(10);
    rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
    REQUIRE(rig.dll().setup_image(rig.i(), rig.d->imageCallbacks()) == mqs_ok);
    char* m = nullptr;
    REQUIRE(rig.dll().image_has_queues(rig.i(), &m) == mqs_ok);
    uint64_t before = lastSession(server.endpoint())["rt.callbacks"];
    REQUIRE(rig.dll().setup_process(rig.p(), rig.d->processCallbacks()) == mqs_ok);
    REQUIRE(rig.dll().process_has_queues(rig.p(), &m) == mqs_ok);
    uint64_t after = lastSession(server.endpoint())["rt.callbacks"];
    CHECK(rig.refresh() == 10 * 3 * 5);  // the DLL got what it needed
    return after - before;
  };
  uint64_t epoch = setUpCallbacks("epoch");
  uint64_t call = setUpCallbacks("call");
  MESSAGE("callback round trips of a process's set-up: epoch ", epoch, ", call ", call);
  CHECK(epoch + 2 == call);
}

TEST_CASE("epoch policy: each has-queues call goes behind its set-up and serves only the next") {
  // The spec has the debugger call mqs_image_has_queues once mqs_setup_image succeeded, and
  // mqs_process_has_queues after mqs_setup_process: under epoch the shim sends each behind its
  // set-up, in the same round trip, and serves the debugger's own call from its answer when
  // that is the debugger's next call on the object (docs/round-trips.md, "Set-up").
  struct Answers {
    int image, process;
    std::string imageMessage, processMessage;
    long imageQueryCallbacks;  // the debugger's callbacks inside its mqs_image_has_queues
  };
  auto text = [](const char* m) { return m ? std::string(m) : std::string("(null)"); };
  auto setUp = [&](const char* cache, Counters* afterSetUps, Counters* afterQueries) {
    TempDir dir;
    // The image's look-ups asked one by one, inside its has-queues call behind the set-up,
    // even under epoch: nothing learned, and none found before the set-up.
    ServerProcess server =
        startServer(dir, "unix:" + (dir / "s.sock"), {"--no-lookup-discovery"});
    configure(server.endpoint(), cache, "off", dir);
    Rig rig(10);
    rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
    char* im = const_cast<char*>("untouched");
    char* pm = const_cast<char*>("untouched");
    REQUIRE(rig.dll().setup_image(rig.i(), rig.d->imageCallbacks()) == mqs_ok);
    Counters c1 = lastSession(server.endpoint());
    Answers a;
    auto callbacks = [&rig] {
      long n = 0;
      for (const auto& [name, count] : rig.d->callbackCounts()) n += count;
      return n;
    };
    long beforeQuery = callbacks();
    a.image = rig.dll().image_has_queues(rig.i(), &im);
    a.imageQueryCallbacks = callbacks() - beforeQuery;
    Counters c2 = lastSession(server.endpoint());
    REQUIRE(rig.dll().setup_process(rig.p(), rig.d->processCallbacks()) == mqs_ok);
    Counters c3 = lastSession(server.endpoint());
    a.process = rig.dll().process_has_queues(rig.p(), &pm);
    Counters c4 = lastSession(server.endpoint());
    a.imageMessage = text(im);
    a.processMessage = text(pm);
    *afterSetUps = c3;
    *afterQueries = c4;
    // The queries asked the server nothing more (epoch), or each cost one call (call).
    CHECK(c2["rt.calls"] - c1["rt.calls"] == c4["rt.calls"] - c3["rt.calls"]);
    // A debugger that makes another call on the process first: the answer sent behind is
    // dropped, and its mqs_process_has_queues runs in the DLL, one round trip.
    REQUIRE(rig.dll().setup_process(rig.p(), rig.d->processCallbacks()) == mqs_ok);
    REQUIRE(rig.dll().update_communicator_list(rig.p()) == mqs_ok);
    Counters c5 = lastSession(server.endpoint());
    char* again = nullptr;
    CHECK(rig.dll().process_has_queues(rig.p(), &again) == a.process);
    Counters c6 = lastSession(server.endpoint());
    CHECK(c6["rt.calls"] == c5["rt.calls"] + 1);
    CHECK(rig.refresh() == 10 * 3 * 5);
    return a;
  };
  Counters epochSetUps, epochQueries, callSetUps, callQueries;
  Answers epoch = setUp("epoch", &epochSetUps, &epochQueries);
  Answers call = setUp("call", &callSetUps, &callQueries);
  // The same answers as the DLL gives each call when it is made on its own.
  CHECK(epoch.image == call.image);
  CHECK(epoch.process == call.process);
  CHECK(epoch.imageMessage == call.imageMessage);
  CHECK(epoch.processMessage == call.processMessage);
  // The call sent behind asks the debugger what it asks inside the debugger's own call, at the
  // moment a native load asks (here the image's look-ups: this server knows none ahead).
  CHECK(epoch.imageQueryCallbacks == call.imageQueryCallbacks);
  CHECK(epoch.imageQueryCallbacks > 0);
  MESSAGE("calls for 4 set-up calls: epoch ", epochQueries["rt.calls"], " (and ",
          epochQueries["rt.calls_behind"], " behind), call ", callQueries["rt.calls"]);
  CHECK(epochQueries["rt.calls_behind"] == 2);
  CHECK(epochQueries["rt.calls"] == epochSetUps["rt.calls"]);  // nothing more after the set-ups
  CHECK(callQueries["rt.calls_behind"] == 0);
  CHECK(callQueries["rt.calls"] == callSetUps["rt.calls"] + 1);  // the process's query
  CHECK(epochQueries["rt.calls"] + 2 == callQueries["rt.calls"]);
}

TEST_CASE("epoch policy: a server that never saw the DLL gets the shim's learned look-ups") {
  // A node's server is new to the DLL once per node; the debugger's machine stays the same.
  // The shim keeps what its sessions looked up (MQD_PROXY_STATE_DIR) and answers it ahead at
  // mqs_setup_image, so that a new server asks nothing one by one.
  TempDir dir;
  auto session = [&](const std::string& serverState, const char* shimState) {
    ServerProcess server(mqd::test::kServer,
                         {"--listen", "unix:" + (dir / "s.sock"), "--dll", mqd::test::kTestDll3,
                          "--log-file", dir / "server.log", "--state-dir", serverState});
    configure(server.endpoint(), "epoch", "auto", dir);
    setenv("MQD_PROXY_STATE_DIR", shimState, 1);
    {
      Rig rig(10);
      rig.setUp();
      CHECK(rig.refresh() == 10 * 3 * 5);
    }
    return lastSession(server.endpoint());
  };
  std::string shimState = dir / "shim-state";
  Counters cold = session(dir / "server-1", shimState.c_str());
  Counters newServer = session(dir / "server-2", shimState.c_str());
  Counters forgetful = session(dir / "server-3", "off");  // the control: nothing kept
  setenv("MQD_PROXY_STATE_DIR", "off", 1);
  MESSAGE("callback round trips: first session ", cold["rt.callbacks"], ", a new server with the "
          "shim's learned look-ups ", newServer["rt.callbacks"], ", without them ",
          forgetful["rt.callbacks"]);
  // Without learned look-ups a server finds the image's (LookupDiscovery) and asks the
  // process's set-up's one by one; with the shim's it asks nothing.
  CHECK(cold["cache.lookup_misses"] > 0);
  CHECK(cold["cache.lookups_discovered"] > 10);
  CHECK(forgetful["cache.lookup_misses"] == cold["cache.lookup_misses"]);
  CHECK(forgetful["cache.lookups_discovered"] == cold["cache.lookups_discovered"]);
  CHECK(newServer["cache.lookup_misses"] == 0);
  CHECK(newServer["cache.lookups_discovered"] == 0);
  CHECK(newServer["cache.lookups_prefetched"] >=
        cold["cache.lookups_discovered"] + cold["cache.lookup_misses"]);
  CHECK(newServer["rt.callbacks"] + cold["cache.lookup_misses"] + 1 <= forgetful["rt.callbacks"]);
  // One file per DLL build, private to its user.
  Command files = run("ls -l " + shimState);
  CHECK(files.output.find("lookups-") != std::string::npos);
  CHECK(files.output.find("-rw-------") != std::string::npos);
}

TEST_CASE("compression: auto means TCP only; on and off are obeyed; answers unchanged") {
  TempDir dir;
  ServerProcess unixServer = startServer(dir, "unix:" + (dir / "s.sock"));
  ServerProcess tcpServer(mqd::test::kServer, {"--listen", "tcp:127.0.0.1:0", "--dll",
                                               mqd::test::kTestDll3, "--log-file",
                                               dir / "tcp.log"});
  struct Case {
    const ServerProcess* server;
    const char* compress;
    bool compressed;
  };
  for (Case k : {Case{&unixServer, "auto", false}, Case{&unixServer, "on", true},
                 Case{&tcpServer, "auto", true}, Case{&tcpServer, "off", false}}) {
    INFO(k.server->endpoint(), " MQD_PROXY_COMPRESS=", k.compress);
    configure(k.server->endpoint(), "epoch", k.compress, dir);
    {
      Rig rig(100);
      rig.setUp();
      CHECK(rig.refresh() == 100 * 3 * 5);
    }
    Counters c = lastSession(k.server->endpoint());
    REQUIRE(c["bulk.raw_bytes"] > 10000);
    if (k.compressed) {
      CHECK(c["bulk.wire_bytes"] * 3 < c["bulk.raw_bytes"]);
    } else {
      CHECK(c["bulk.wire_bytes"] == c["bulk.raw_bytes"]);
    }
  }
}

TEST_CASE("mqd-proxy stats: readable and JSON output; clear failures") {
  TempDir dir;
  ServerProcess server = startServer(dir, "unix:" + (dir / "s.sock"));
  configure(server.endpoint(), "epoch", "auto", dir);
  {
    Rig rig(3);
    rig.setUp();
    rig.refresh();
  }
  std::string cli = mqd::test::kCli;
  Command text = run(cli + " --server " + server.endpoint() + " stats");
  CHECK(text.status == 0);
  CHECK(text.output.find("1 session(s)") != std::string::npos);
  CHECK(text.output.find("round trips") != std::string::npos);
  CHECK(text.output.find("libmqd_testdll_l3.so") != std::string::npos);
  // The server environment variable is the default endpoint.
  Command env = run("MQD_PROXY_SERVER=" + server.endpoint() + " " + cli + " stats --json");
  CHECK(env.status == 0);
  CHECK(env.output.find("\"rt.calls\"") != std::string::npos);

  Command nowhere = run(cli + " --server unix:" + (dir / "nothing.sock") + " stats");
  CHECK(nowhere.status == 1);
  CHECK(nowhere.output.find("nothing.sock") != std::string::npos);
  Command bad = run(cli + " --server nonsense stats");
  CHECK(bad.status != 0);
  CHECK(bad.output.find("nonsense") != std::string::npos);
  Command usage = run(cli + " frobnicate");
  CHECK(usage.status == 2);
  CHECK(usage.output.find("unknown command \"frobnicate\"") != std::string::npos);
  Command help = run(cli + " --help");
  CHECK(help.status == 0);
  CHECK(help.output.find("stats") != std::string::npos);
}

TEST_CASE("mqd-relay: each round trip gains twice the delay; the bandwidth cap holds") {
  TempDir dir;
  ServerProcess server(mqd::test::kServer, {"--listen", "tcp:127.0.0.1:0", "--dll",
                                            mqd::test::kTestDll3, "--log-file",
                                            dir / "server.log"});
  auto timeConversation = [&](const std::string& endpoint, const char* compress) {
    configure(endpoint, "epoch", compress, dir);
    auto start = std::chrono::steady_clock::now();
    {
      Rig rig(100);
      rig.setUp();
      CHECK(rig.refresh() == 100 * 3 * 5);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  {
    ServerProcess relay(mqd::test::kRelay,
                        {"--listen", "tcp:127.0.0.1:0", "--connect", server.endpoint(),
                         "--delay-ms", "20"},
                        false);
    double seconds = timeConversation(relay.endpoint(), "auto");
    Counters c = lastSession(server.endpoint());
    // Every round trip, plus connecting, crossed the relay twice.
    double floor = static_cast<double>(roundTrips(c)) * 0.040;
    MESSAGE("20 ms each way: ", roundTrips(c), " round trips in ", seconds, " s");
    CHECK(seconds >= floor);
  }
  {
    // --delay-after-signal: no delay until SIGUSR1 (a target set up over a fast link), the
    // full delay after it. The delay is ten minutes, so that neither verdict reads a clock:
    // before the signal every call of a whole conversation answers (one delayed would wait
    // out the shim's timeout of a loaded machine's slack, and fail); after it, the first call
    // of a set-up waits out a timeout of a second. (The relay takes the signal before it next
    // runs, so before any byte sent after kill() returned.)
    ServerProcess relay(mqd::test::kRelay,
                        {"--listen", "tcp:127.0.0.1:0", "--connect", server.endpoint(),
                         "--delay-ms", "600000", "--delay-after-signal"},
                        false);
    configure(relay.endpoint(), "epoch", "auto", dir);
    setenv("MQD_PROXY_TIMEOUT", std::to_string(kLoadedMachineSlack.count()).c_str(), 1);
    {
      Rig rig(100);
      rig.setUp();
      CHECK(rig.refresh() == 100 * 3 * 5);
    }
    REQUIRE(::kill(relay.pid(), SIGUSR1) == 0);
    setenv("MQD_PROXY_TIMEOUT", "1", 1);
    {
      Rig rig(100);
      int rc = rig.trySetUp();
      CHECK(rc == MQD_PROXY_ERR_TIMEOUT);
    }
    unsetenv("MQD_PROXY_TIMEOUT");
  }
  {
    // 256 KiB/s each way, no compression: the memory the server reads takes its time.
    ServerProcess relay(mqd::test::kRelay,
                        {"--listen", "tcp:127.0.0.1:0", "--connect", server.endpoint(),
                         "--bandwidth", "262144"},
                        false);
    double seconds = timeConversation(relay.endpoint(), "off");
    Counters c = lastSession(server.endpoint());
    double floor = static_cast<double>(c["wire.bytes_in"]) / 262144.0;
    MESSAGE("256 KiB/s: ", c["wire.bytes_in"], " bytes to the server in ", seconds, " s");
    CHECK(c["wire.bytes_in"] > 100000);
    CHECK(seconds >= floor * 0.95);
  }
}
