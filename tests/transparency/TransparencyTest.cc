// Transparency: the same scripted conversation runs against the same target model once with
// the test DLL loaded natively and then through libmqdproxy.so -> mqd-proxy-server -> the same
// DLL, in every cache mode (MQD_PROXY_CACHE off, call, epoch; epoch also with compression).
// Results, output structs (byte for byte, including what the DLL left untouched), strings, the
// debugger's logged effects (put_*_info, dprints) and what the DLL printed on stderr must be
// identical.
//
// Matrix: pointer size 4/8 x little/big endian x empty/large queues x DLL level 3/2 x a
// debugger writing 7/5 members of mqs_target_type_sizes; plus error paths, unusual orders, and
// a target whose memory changes between refreshes (and, to state the epoch rule, within one).
// A large queue holds 200 operations per queue in the caching modes (enough to span many cache
// blocks and walk batches) and 24 in `off`, where every callback is its own round trip
// whatever the length: 200 there repeated the same path eight times over, for 150 s of CI.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "DebuggerHarness.h"
#include "mqd_proxy.h"
#include "ServerProcess.h"
#include "ServerUnderTest.h"
#include "SyntheticMpi.h"
#include "TestPaths.h"
#include "mqd.capnp.h"
#include "Transcript.h"

using namespace mqd::harness;

namespace {

struct Cell {
  int pointerSize = 8;
  bool bigEndian = false;
  size_t opsPerQueue = 3;
  int level = 3;
  int typeSizeInts = 7;
  // When the debugger's answers become valid (padb's minfo: its rank only after set-up).
  DebuggerHarness::Timing timing = DebuggerHarness::Timing::Always;
  // The DLL asks who the process is at each update, not at set-up (as Open MPI's does).
  bool lateIdentity = false;
  // In a job, each rank's data and heap are mappings of their own, each at another place in
  // each rank (as address-space randomisation leaves them), all moved by `spread` (non-zero;
  // whole pages): 64-bit targets only.
  uint64_t spread = 0;
  std::string name() const {
    return std::to_string(pointerSize * 8) + "-bit " + (bigEndian ? "BE" : "LE") + ", " +
           std::to_string(opsPerQueue) + " ops/queue, level " + std::to_string(level) + ", " +
           std::to_string(typeSizeInts) + "-int type sizes" +
           (timing == DebuggerHarness::Timing::AfterSetUp ? ", minfo's timing" : "") +
           (lateIdentity ? ", identity asked late" : "") +
           (spread ? ", ranks laid out apart" : "");
  }
};

// What a scenario talks about: the debugger's objects and the target they stand for.
struct Subjects {
  DebuggerHarness::Image* image;
  DebuggerHarness::Process* process;
  DebuggerHarness::Job* job;
  TargetModel* target;
};

using Scenario = std::function<void(Transcript&, Subjects&)>;
using JobEdit = std::function<void(Job&, TargetModel&)>;

// How the shim is configured for one proxied run.
struct Mode {
  const char* id;        // for MQD_TRANSPARENCY_MODES
  const char* cache;     // MQD_PROXY_CACHE
  const char* compress;  // MQD_PROXY_COMPRESS
  size_t largeQueue;     // operations per queue in the matrix's large-queue cells
  // How often MQD_PROXY_SERVER names the server: twice, the shim serves the job as from a
  // server on every node (NodeRouter), none of which runs a rank of it: every process served
  // by the home node, every info token the router's own.
  int servers = 1;
  std::string name() const {
    return std::string("cache ") + cache + ", compress " + compress +
           (servers > 1 ? ", " + std::to_string(servers) + " servers" : "");
  }
};

// Every mode, or those named in MQD_TRANSPARENCY_MODES (comma-separated ids), so that ctest can
// run each mode as its own test.
const std::vector<Mode>& allModes() {
  static const std::vector<Mode> modes = [] {
    std::vector<Mode> all{{"epoch", "epoch", "off", 200},
                          {"epoch-zstd", "epoch", "on", 200},
                          {"call", "call", "auto", 200},
                          {"off", "off", "auto", 24},
                          {"nodes", "epoch", "off", 200, 2}};
    const char* wanted = std::getenv("MQD_TRANSPARENCY_MODES");
    if (wanted == nullptr || *wanted == 0) return all;
    std::vector<Mode> chosen;
    std::string list = std::string(",") + wanted + ",";
    for (const Mode& m : all) {
      if (list.find(std::string(",") + m.id + ",") != std::string::npos) chosen.push_back(m);
    }
    if (chosen.empty()) throw std::invalid_argument("MQD_TRANSPARENCY_MODES names no mode");
    return chosen;
  }();
  return modes;
}

// The native reference: this build's test DLL, loaded by this build's harness.
const char* dllFor(int level) { return level == 3 ? mqd::test::kTestDll3 : mqd::test::kTestDll2; }

// The proxied side: this build's server, or another architecture's (ServerUnderTest.h). A
// cross run compares a foreign server and its own build of the test DLL with the native run
// of the same target model here.
const ServerUnderTest& underTest() {
  static const ServerUnderTest s = ServerUnderTest::fromEnvironment(
      mqd::test::kServer, mqd::test::kTestDll3, mqd::test::kTestDll2);
  return s;
}

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

ServerProcess& server() {
  const ServerUnderTest& u = underTest();
  static ServerProcess s(u.binary,
                         {"--listen", u.listenAddress(scratch().path()), "--dll", u.dll3,
                          "--dll", u.dll2, "--log-level", "warn", "--log-file",
                          scratch() / "server.log", "--read-around", "0"},
                         true, u.emulator);
  return s;
}

struct Outcome {
  std::vector<std::string> lines;
  std::map<std::string, long> counts;
  long early = 0;  // callbacks before their answer was valid (Timing::AfterSetUp)
};

// What `talk` says with the DLL `d` loaded, and what it printed on stderr meanwhile.
Outcome transcribe(DebuggerHarness& d, const std::function<void(Transcript&)>& talk) {
  Transcript t(d);
  {
    StderrCapture err;
    talk(t);
    t.note("stderr: " + renderBytes(err.text().data(), err.text().size()));
  }
  return Outcome{t.lines(), d.callbackCounts(), d.earlyCallbacks()};
}

Outcome converse(const std::string& library, const Cell& cell, const Scenario& scenario,
                 const JobEdit& edit) {
  TargetModel target(cell.pointerSize, cell.bigEndian);
  Job job = standardJob(cell.opsPerQueue);
  job.lateIdentity = cell.lateIdentity;
  if (edit) edit(job, target);
  layOut(target, job);
  if (edit) edit(job, target);  // edits that act on the laid-out target (removing symbols)
  DebuggerHarness d(library, {cell.typeSizeInts, cell.timing});
  auto* image = d.addImage(target, "a.out");
  auto* process = d.addProcess(image, 2, "rank2");
  Subjects subjects{image, process, d.addJob({process}), &target};
  return transcribe(d, [&](Transcript& t) { scenario(t, subjects); });
}

// The shim's environment for one proxied run.
// How many session summaries a proxied conversation logs: one per server the last useProxy()
// named (each node's client sums up its own session).
int gSummariesPerConversation = 1;

// MQD_PROXY_SERVER: `endpoint`, named as often as `mode` has servers.
void useServer(const Mode& mode, const std::string& endpoint) {
  gSummariesPerConversation = mode.servers;
  std::string servers = endpoint;
  for (int i = 1; i < mode.servers; ++i) servers += " " + endpoint;
  setenv("MQD_PROXY_SERVER", servers.c_str(), 1);
}

void useProxy(const Mode& mode, const Cell& cell) {
  useServer(mode, server().endpoint());
  setenv("MQD_PROXY_DLL", underTest().dll(cell.level).c_str(), 1);
  setenv("MQD_PROXY_LOG_FILE", (scratch() / "shim.log").c_str(), 1);
  setenv("MQD_PROXY_CACHE", mode.cache, 1);
  setenv("MQD_PROXY_COMPRESS", mode.compress, 1);
  // The shim's cost rule pinned: reading again is always worth a round trip, whatever the
  // machine's speed (ctest pins the same; this also holds run by hand).
  setenv("MQD_PROXY_READ_COST", "0", 1);
}

Outcome proxied(const Mode& mode, const Cell& cell, const Scenario& scenario,
                const JobEdit& edit) {
  useProxy(mode, cell);
  return converse(mqd::test::kShim, cell, scenario, edit);
}

// The same for a job of several processes, each with a target of its own (the standard job
// as its rank sees it), in one debugger.
using JobScenario = std::function<void(Transcript&, std::vector<Subjects>&)>;

Outcome converseJob(const std::string& library, const Cell& cell, int ranks,
                    const JobScenario& scenario) {
  std::vector<std::unique_ptr<TargetModel>> targets;
  for (int r = 0; r < ranks; ++r) {
    uint64_t apart = cell.spread + static_cast<uint64_t>(r) * 0x2345000;
    targets.push_back(std::make_unique<TargetModel>(
        cell.pointerSize, cell.bigEndian, cell.spread ? 0x00005555a0000000ull + apart : 0));
    if (cell.spread) {
      targets.back()->placeData(0x0000555500000000ull + cell.spread +
                                static_cast<uint64_t>(r) * 0x7000);
    }
    Job job = standardJob(cell.opsPerQueue, ranks, r);
    job.lateIdentity = cell.lateIdentity;
    layOut(*targets.back(), job);
  }
  DebuggerHarness d(library, {cell.typeSizeInts, cell.timing});
  std::vector<Subjects> subjects;
  std::vector<DebuggerHarness::Process*> processes;
  for (int r = 0; r < ranks; ++r) {
    auto* image = d.addImage(*targets[r], "a.out");
    processes.push_back(d.addProcess(image, r, "rank" + std::to_string(r)));
    subjects.push_back({image, processes.back(), nullptr, targets[r].get()});
  }
  auto* job = d.addJob(processes);
  for (Subjects& s : subjects) s.job = job;
  return transcribe(d, [&](Transcript& t) { scenario(t, subjects); });
}

// A debugger with a 32-bit mqs_taddr_t cannot name a 64-bit target's addresses: natively no
// DLL can serve it such a target, so there is nothing to compare with (the width rules have
// their own test below).
// The widest target pointer this debugger can address: 8, or 4 for a 32-bit mqs_taddr_t.
constexpr int kWidest = sizeof(mqs_taddr_t) >= 8 ? 8 : 4;

bool debuggerCanAddress(const Cell& cell) {
  return cell.pointerSize <= static_cast<int>(sizeof(mqs_taddr_t));
}

void requireSame(const Outcome& expected, const Outcome& actual) {
  REQUIRE(expected.lines.size() > 3);
  size_t n = std::min(expected.lines.size(), actual.lines.size());
  for (size_t i = 0; i < n; ++i) {
    if (expected.lines[i] != actual.lines[i]) {
      FAIL_CHECK("first difference at line ", i, ":\n  native:  ", expected.lines[i],
                 "\n  proxied: ", actual.lines[i]);
      break;
    }
  }
  CHECK(expected.lines.size() == actual.lines.size());
}

// The conversation natively, then through the proxy in each mode: identical every time.
void compare(const Cell& cell, const Scenario& scenario, const JobEdit& edit = nullptr,
             const std::vector<Mode>& modes = allModes()) {
  if (!debuggerCanAddress(cell)) {
    MESSAGE("not applicable to a ", sizeof(mqs_taddr_t) * 8, "-bit mqs_taddr_t: ", cell.name());
    return;
  }
  server();  // started before the native run, so that its start-up is not in the DLL's stderr
  Outcome native = converse(dllFor(cell.level), cell, scenario, edit);
  for (const Mode& mode : modes) {
    INFO("cell: ", cell.name(), "; ", mode.name());
    Outcome p = proxied(mode, cell, scenario, edit);
    requireSame(native, p);
    // The proxy asked nothing before its answer was valid that the DLL did not ask natively.
    CHECK(p.early == native.early);
    // The proxy really was in the path: target_to_host ran on the server (the shim probes the
    // debugger's once per process), and malloc never reached the debugger.
    if (native.counts["target_to_host"] > 4) {
      CHECK(p.counts["target_to_host"] <= 2);
      CHECK(p.counts["malloc"] == 0);
    }
  }
}

Capabilities capabilitiesOf(int level) { return Capabilities{level == 3, level == 3}; }

Scenario full(int level) {
  return [level](Transcript& t, Subjects& s) {
    fullConversation(t, s.image, s.process, s.job, capabilitiesOf(level));
  };
}

Scenario odd(int level) {
  return [level](Transcript& t, Subjects& s) {
    unusualOrders(t, s.image, s.process, capabilitiesOf(level));
  };
}

// Set-up as every debugger does it; false when the DLL declines the image or process.
bool setUp(Transcript& t, Subjects& s) {
  t.versions(true);
  t.setupBasicCallbacks();
  return t.setupImage(s.image) == mqs_ok && t.imageHasQueues(s.image) == mqs_ok &&
         t.setupProcess(s.process) == mqs_ok && t.processHasQueues(s.process) == mqs_ok;
}

// The target runs between refreshes: requests progress in place, then the communicator list
// is replaced (new sequence), then the new requests progress too.
Scenario changingBetweenRefreshes(size_t ops) {
  return [ops](Transcript& t, Subjects& s) {
    Capabilities caps;
    if (!setUp(t, s)) return;
    refresh(t, s.process, caps);
    t.note("changed " + std::to_string(progressRequests(*s.target, 1)) + " requests");
    refresh(t, s.process, caps);
    Job next = standardJob(ops + 2, 4, 2);
    next.sequence = 2;
    next.communicators.erase(next.communicators.begin() + 1);  // a communicator was freed
    next.communicators[0].name = "MPI_COMM_WORLD (renamed)";
    replaceCommunicators(*s.target, next);
    refresh(t, s.process, caps);
    t.note("changed " + std::to_string(progressRequests(*s.target, 2)) + " requests");
    refresh(t, s.process, caps);
    refresh(t, s.process, caps);  // stopped again, nothing changed
    t.appendEffects();
  };
}

// The target changes while the debugger reads it (some debuggers let a thread run): in the
// middle of the first refresh, or, for comparison, only just before the second.
enum class Change { MidRefresh, BeforeNextRefresh };

Scenario changingWithinRefresh(Change when) {
  return [when](Transcript& t, Subjects& s) {
    Capabilities caps;
    if (!setUp(t, s)) return;
    t.updateCommunicatorList(s.process);
    t.setupCommunicatorIterator(s.process);
    t.getCommunicator(s.process, nullptr);
    t.setupOperationIterator(s.process, mqs_pending_receives);
    t.nextOperation(s.process);
    if (when == Change::MidRefresh) progressRequests(*s.target, 3);
    for (int i = 0; i < 64 && t.nextOperation(s.process) == mqs_ok; ++i) {
    }
    t.setupOperationIterator(s.process, mqs_pending_sends);
    for (int i = 0; i < 64 && t.nextOperation(s.process) == mqs_ok; ++i) {
    }
    t.nextCommunicator(s.process);
    t.getCommunicator(s.process, nullptr);
    t.setupOperationIterator(s.process, mqs_unexpected_messages);
    for (int i = 0; i < 64 && t.nextOperation(s.process) == mqs_ok; ++i) {
    }
    if (when == Change::BeforeNextRefresh) progressRequests(*s.target, 3);
    refresh(t, s.process, caps);  // the next refresh sees the change in every mode
    t.appendEffects();
  };
}

// What a debugger does first with a job: the versions, then every rank's image and process set
// up, as `mqd dump --all` does before it refreshes the first. False if a set-up failed.
bool setUpJob(Transcript& t, std::vector<Subjects>& ranks) {
  t.versions(true);
  t.setupBasicCallbacks();
  for (Subjects& s : ranks) {
    if (t.setupImage(s.image) != mqs_ok || t.imageHasQueues(s.image) != mqs_ok ||
        t.setupProcess(s.process) != mqs_ok || t.processHasQueues(s.process) != mqs_ok) {
      return false;
    }
  }
  return true;
}

// A debugger that refreshes a job rank by rank, as `mqd dump --all` does, while ranks change
// between its calls: after the first rank's update (through the proxy, the one that refreshes
// the others ahead) and before their own, and just before a rank's own update.
JobScenario rankByRank(size_t ops) {
  return [ops](Transcript& t, std::vector<Subjects>& ranks) {
    Capabilities caps;
    if (!setUpJob(t, ranks)) return;
    // Every rank refreshed in order; `change(r)` runs just before rank r's update.
    auto round = [&](const std::string& what, const std::function<void(size_t)>& change) {
      for (size_t r = 0; r < ranks.size(); ++r) {
        if (change) change(r);
        t.note(what + ": rank " + std::to_string(r));
        refresh(t, ranks[r].process, caps);
      }
    };
    round("first", nullptr);
    round("unchanged", nullptr);
    round("rank 2 progressed after rank 0's update", [&](size_t r) {
      if (r == 1) t.note("changed " + std::to_string(progressRequests(*ranks[2].target, 1)));
    });
    round("rank 1's communicators replaced after rank 0's update", [&](size_t r) {
      if (r != 1) return;
      Job next = standardJob(ops + 2, static_cast<int>(ranks.size()), 1);
      next.sequence = 2;
      next.communicators.erase(next.communicators.begin() + 1);
      replaceCommunicators(*ranks[1].target, next);
    });
    round("rank 3 progressed just before its own update", [&](size_t r) {
      if (r == 3) t.note("changed " + std::to_string(progressRequests(*ranks[3].target, 2)));
    });
    // Rank 2's list moves to memory its last refresh never read (the first rank's update,
    // rank 0 having progressed too, then refreshes it ahead only by asking the debugger), and
    // changes there before its own update.
    Job moved = standardJob(ops + 1, static_cast<int>(ranks.size()), 2);
    moved.sequence = 3;
    replaceCommunicators(*ranks[2].target, moved);
    t.note("changed " + std::to_string(progressRequests(*ranks[0].target, 4)));
    round("ranks 0 and 2 moved before the round, 2 progressed after rank 0's update",
          [&](size_t r) {
            if (r == 1) t.note("changed " + std::to_string(progressRequests(*ranks[2].target, 3)));
          });
    round("unchanged again", nullptr);
    t.appendEffects();
  };
}

// The counts of the shim's last conversation's session summaries in `log` (at level info; one
// per server, gSummariesPerConversation), matched by the groups of `counts` and summed; each
// -1 when there is none.
template <size_t N = 2>
std::array<long, N> summaryCounts(const std::string& log, const std::regex& counts) {
  std::array<long, N> none;
  none.fill(-1);
  std::ifstream in(log);
  std::vector<std::string> summaries;
  for (std::string line; std::getline(in, line);) {
    if (line.find("session summary:") != std::string::npos) summaries.push_back(line);
  }
  if (summaries.size() < static_cast<size_t>(gSummariesPerConversation)) return none;
  std::array<long, N> sum{};
  for (size_t i = summaries.size() - gSummariesPerConversation; i < summaries.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(summaries[i], m, counts)) return none;
    for (size_t k = 0; k < N; ++k) sum[k] += std::stol(m[k + 1]);
  }
  return sum;
}

// How many updates the last session served from refreshes ahead and from epochs held, and how
// many of either it found stale.
struct Refreshes {
  long served, held, stale;
};
Refreshes refreshesAhead(const std::string& log) {
  static const std::regex counts("([0-9]+) updates served from refreshes ahead and ([0-9]+) "
                                 "from epochs held \\(([0-9]+) more");
  auto [served, held, stale] = summaryCounts<3>(log, counts);
  return {served, held, stale};
}

// How many of other processes' updates the server named to the shim's last session, and how
// many of those the shim took.
std::pair<long, long> peersNamed(const std::string& log) {
  static const std::regex counts("([0-9]+) other processes' updates named by the server "
                                 "\\(([0-9]+) taken");
  auto [named, taken] = summaryCounts(log, counts);
  return {named, taken};
}

// The set-up records in the state directory `dir` (setups-<build>.capnp), "" when none.
std::string recordsFile(const std::string& dir) {
  std::string found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::string(e->d_name).rfind("setups-", 0) == 0) found = dir + "/" + e->d_name;
    }
    ::closedir(d);
  }
  return found;
}

// Rewrites the set-up records in `path` with `edit` applied.
void editRecords(const std::string& path,
                 const std::function<void(mqd::wire::SetUpRecords::Builder)>& edit) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() % sizeof(capnp::word) == 0);
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  capnp::FlatArrayMessageReader reader(words);
  capnp::MallocMessageBuilder message;
  message.setRoot(reader.getRoot<mqd::wire::SetUpRecords>());
  edit(message.getRoot<mqd::wire::SetUpRecords>());
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  capnp::writeMessageToFd(fd, message);
  ::close(fd);
}

// How many process set-ups the last session answered from another process's record, moved.
long setUpsMoved(const std::string& log) {
  static const std::regex counts(
      "([0-9]+) set-ups answered from records \\(([0-9]+) moved from another process's");
  return summaryCounts(log, counts)[1];
}

// How many set-ups the last session answered from records, and of those calls how many the
// DLL contradicted.
std::pair<long, long> setUpsRecalled(const std::string& log) {
  static const std::regex counts(
      "([0-9]+) set-ups answered from records \\([0-9]+ moved from another process's, "
      "([0-9]+) contra");
  auto [recalled, contradicted] = summaryCounts(log, counts);
  return {recalled, contradicted};
}

}  // namespace

// The modes whose large queue is `ops` long (every mode for an empty queue).
std::vector<Mode> modesWithQueue(size_t ops) {
  std::vector<Mode> chosen;
  for (const Mode& m : allModes()) {
    if (ops == 0 || m.largeQueue == ops) chosen.push_back(m);
  }
  return chosen;
}

TEST_CASE("transparency: matrix of target models and debuggers") {
  std::vector<size_t> queues{0};
  for (const Mode& m : allModes()) {
    if (std::find(queues.begin(), queues.end(), m.largeQueue) == queues.end()) {
      queues.push_back(m.largeQueue);
    }
  }
  for (int pointerSize : {8, 4}) {
    for (bool bigEndian : {false, true}) {
      for (size_t ops : queues) {
        for (int level : {3, 2}) {
          for (int ints : {7, 5}) {
            Cell cell{pointerSize, bigEndian, ops, level, ints};
            compare(cell, full(level), nullptr, modesWithQueue(ops));
          }
        }
      }
    }
  }
}

TEST_CASE("transparency: a debugger whose answers are valid only after set-up (padb's minfo)") {
  // padb's minfo sets a process's rank to -1, calls mqs_setup_process, and learns the rank only
  // when that returns; a DLL that asks earlier gets -1 and minfo warns. Here the harness
  // answers the same way (Timing::AfterSetUp), against a DLL that asks who the process is at
  // set-up (it gets -1 natively, and must get -1 through the proxy) and one that asks only at
  // each update, as Open MPI's does (natively nothing comes early; through the proxy neither
  // may anything, and every later answer is the real rank).
  for (int pointerSize : {8, 4}) {
    for (bool bigEndian : {false, true}) {
      for (int level : {3, 2}) {
        for (int ints : {7, 5}) {
          for (bool late : {false, true}) {
            Cell cell{pointerSize, bigEndian, 3, level, ints,
                      DebuggerHarness::Timing::AfterSetUp, late};
            if (!debuggerCanAddress(cell)) continue;
            server();
            Outcome native = converse(dllFor(level), cell, full(level), nullptr);
            INFO("cell: ", cell.name());
            if (late) CHECK(native.early == 0);
            if (!late) CHECK(native.early > 0);  // the DLL itself asks during set-up
            for (const Mode& mode : allModes()) {
              INFO(mode.name());
              Outcome p = proxied(mode, cell, full(level), nullptr);
              requireSame(native, p);
              CHECK(p.early == native.early);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("transparency: unusual call orders") {
  for (int level : {3, 2}) {
    for (bool bigEndian : {false, true}) {
      compare(Cell{kWidest, bigEndian, 4, level, 7}, odd(level));
    }
  }
}

TEST_CASE("transparency: error paths") {
  Cell cell{kWidest, false, 5, 3, 7};
  SUBCASE("missing symbol") {
    compare(cell, full(3), [](Job&, TargetModel& t) { t.removeSymbol("tmpi_comm_list"); });
  }
  SUBCASE("missing type") {
    compare(cell, full(3), [](Job&, TargetModel& t) { t.removeType("tmpi_request"); });
  }
  SUBCASE("failed fetch: communicator list points at unmapped memory") {
    compare(cell, full(3), [](Job& j, TargetModel&) { j.brokenCommunicatorList = true; });
  }
  SUBCASE("queues disabled by the image") {
    compare(cell, full(3), [](Job& j, TargetModel&) { j.ignoreQueues = true; });
  }
  SUBCASE("error in the middle of an operation iteration") {
    compare(cell, full(3), [](Job& j, TargetModel&) {
      if (!j.communicators.empty() && j.communicators[0].queues[1].size() > 2) {
        j.communicators[0].queues[1][2].kind = 99;
      }
    });
  }
  SUBCASE("DLL prints to stderr") {
    compare(cell, full(3), [](Job& j, TargetModel&) { j.warnOnStderr = true; });
  }
  SUBCASE("level 2, every optional entry point missing, with errors") {
    Cell l2{4, true, 5, 2, 5};
    compare(l2, full(2), [](Job& j, TargetModel&) {
      Operation poisoned;
      poisoned.kind = 99;
      j.communicators[1].queues[0].push_back(poisoned);
    });
  }
}

TEST_CASE("target memory that changes between refreshes: every mode sees each new state") {
  for (int pointerSize : {8, 4}) {
    for (bool bigEndian : {false, true}) {
      Cell cell{pointerSize, bigEndian, 40, 3, 7};
      compare(cell, changingBetweenRefreshes(cell.opsPerQueue));
    }
  }
}

TEST_CASE("the epoch rule: within one epoch the target reads as it was at update") {
  // Under MQD_PROXY_CACHE=epoch target memory is read once per epoch (from
  // mqs_update_communicator_list to the next), so a change within an epoch shows at the next
  // update: exactly what a native load shows when the change happens just before it. Under
  // off and call the DLL reads memory when it asks, exactly as a native load does.
  // The widest target this debugger can address (a 32-bit debugger: a 32-bit target).
  Cell cell{kWidest, false, 12, 3, 7};
  server();
  Outcome mid = converse(dllFor(3), cell, changingWithinRefresh(Change::MidRefresh), nullptr);
  Outcome late =
      converse(dllFor(3), cell, changingWithinRefresh(Change::BeforeNextRefresh), nullptr);
  REQUIRE(mid.lines != late.lines);  // the change is visible natively as it happens
  for (const Mode& mode : allModes()) {
    INFO(mode.name());
    Outcome p = proxied(mode, cell, changingWithinRefresh(Change::MidRefresh), nullptr);
    requireSame(std::string(mode.cache) == "epoch" ? late : mid, p);
  }
}

TEST_CASE("a job refreshed rank by rank: a rank that changes between the debugger's calls") {
  // Under epoch the shim refreshes the other ranks ahead with the first rank's update, and
  // serves each rank's own update from that only when every window it was made from reads the
  // same (docs/round-trips.md, "The whole job"). A rank that changed in between is refreshed
  // again: every mode shows exactly what a native load shows.
  for (bool bigEndian : {false, true}) {
    Cell cell{kWidest, bigEndian, 30, 3, 7};
    server();
    Outcome native = converseJob(dllFor(3), cell, 4, rankByRank(cell.opsPerQueue));
    for (const Mode& mode : allModes()) {
      INFO("cell: ", cell.name(), "; ", mode.name());
      useProxy(mode, cell);
      bool epoch = std::string(mode.cache) == "epoch";
      if (epoch) {
        // A session before, so that the server knows what these ranks read: their first
        // updates then go ahead with rank 0's too.
        requireSame(native, converseJob(mqd::test::kShim, cell, 4, rankByRank(cell.opsPerQueue)));
      }
      setenv("MQD_PROXY_LOG", "info", 1);
      requireSame(native, converseJob(mqd::test::kShim, cell, 4, rankByRank(cell.opsPerQueue)));
      unsetenv("MQD_PROXY_LOG");
      if (epoch) {
        // The path under test was taken: of the 24 updates after the first round, the 5 whose
        // epoch held or refresh ahead found the rank changed went to the server (ranks 2, 1 and
        // 3 in rounds 3 to 5; ranks 0 and 2 in round 6), rank 2's moved list among them: its
        // refresh ahead fetched the memory it moved to and was kept, and its proof, reading
        // those fetched blocks again, found the change (docs/round-trips.md, "The whole job").
        // Every other was served by the shim; the first round's 3 ranks after rank 0 too, in
        // the modes whose first round refreshes them ahead.
        auto [served, held, stale] = refreshesAhead(scratch() / "shim.log");
        CHECK(served + held >= 24 - 5);
        CHECK(served + held <= 3 + 24 - 5);
        CHECK(stale == 5);
        // Rounds that found a rank unchanged since its last refresh ahead answered it from
        // that epoch, held (docs/round-trips.md, "An epoch like the last").
        CHECK(held > 0);
      }
    }
  }
}

// Runs `scenario` on a job of 4 ranks laid out apart (cell.spread) at places never seen (the
// server's learned state, kept between sessions, knows nothing of them, in this run or the
// next), natively and through the proxy in every mode, which must show the same; `check(mode)`
// then reads the shim's log. `ownRecords`: each proxied session keeps the shim's records in a
// state directory of its own (else none: MQD_PROXY_STATE_DIR=off).
void neverSeenInEveryMode(Cell cell, const JobScenario& scenario, bool ownRecords,
                          const std::function<void(const Mode&)>& check) {
  server();
  uint64_t place = (static_cast<uint64_t>(::getpid()) & 0xfff) << 24;
  for (const Mode& mode : allModes()) {
    place += 0x10000000;
    cell.spread = place;
    Outcome native = converseJob(dllFor(3), cell, 4, scenario);
    INFO("cell: ", cell.name(), "; ", mode.name());
    TempDir state;
    useProxy(mode, cell);
    if (ownRecords) setenv("MQD_PROXY_STATE_DIR", (state / "shim-state").c_str(), 1);
    setenv("MQD_PROXY_LOG", "info", 1);
    requireSame(native, converseJob(mqd::test::kShim, cell, 4, scenario));
    unsetenv("MQD_PROXY_LOG");
    setenv("MQD_PROXY_STATE_DIR", "off", 1);
    check(mode);
  }
}

TEST_CASE("a job never seen: the others' first updates guessed from the first rank's, while "
          "ranks change") {
  // Each rank's data and heap lie elsewhere. In a first session the server guesses, from what
  // rank 0's first update read, what each other rank's will read (proxy-server/caches/PeerLayout.h);
  // the shim reads the guesses ahead, refreshes ranks 2 and 3 ahead with rank 1's update, and
  // serves each from that only once every window reads the same. Rank 2 progresses after rank
  // 0's update (before its refresh ahead is made), rank 3 just before its own update (after):
  // every mode shows exactly what a native load shows.
  Cell cell{kWidest, false, 30, 3, 7};
  JobScenario scenario = [](Transcript& t, std::vector<Subjects>& ranks) {
    if (!setUpJob(t, ranks)) return;
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (r == 1) t.note("rank 2 changed " + std::to_string(progressRequests(*ranks[2].target, 1)));
      if (r == 3) t.note("rank 3 changed " + std::to_string(progressRequests(*ranks[3].target, 2)));
      t.note("first: rank " + std::to_string(r));
      refresh(t, ranks[r].process, Capabilities{});
    }
    t.appendEffects();
  };
  neverSeenInEveryMode(cell, scenario, false, [](const Mode& mode) {
    if (std::string(mode.cache) == "epoch") {
      // The server guessed the 3 other ranks' first updates. Whether the shim reads a guess
      // ahead is its cost rule's call, which the harness's timings on a unix socket leave
      // open: round-trips (a relay, 20 ms) checks the refreshes ahead made from guesses, and
      // a rank changed after its refresh ahead.
      CHECK(peersNamed(scratch() / "shim.log").first >= 3);
    }
  });
}

TEST_CASE("set-ups answered from records: the native answers, and a rank changed since is set "
          "up by the DLL") {
  // Under epoch, with learned state, a session records every set-up that consumed nothing but
  // what the shim sent it; a later session answers a set-up from a record once every look-up
  // answer, fact and byte it consumed is the same, and compares the DLL's reply with it
  // (docs/round-trips.md, "Set-ups answered from a record"). These four ranks share their
  // addresses, so one image record serves them all, with each process part recorded.
  Cell cell{kWidest, false, 5, 3, 7};
  cell.lateIdentity = true;  // as Open MPI's DLL: the set-up asks nothing but look-ups, reads
  auto scenario = [&cell](bool rank2Replaced) -> JobScenario {
    return [&cell, rank2Replaced](Transcript& t, std::vector<Subjects>& ranks) {
      if (rank2Replaced) {  // a sequence number and list the set-up of rank 2 reads anew
        Job next = standardJob(cell.opsPerQueue + 1, static_cast<int>(ranks.size()), 2);
        next.sequence = 2;
        next.lateIdentity = true;
        replaceCommunicators(*ranks[2].target, next);
      }
      t.versions(true);
      t.setupBasicCallbacks();
      for (Subjects& s : ranks) {
        REQUIRE(t.setupImage(s.image) == mqs_ok);
        REQUIRE(t.imageHasQueues(s.image) == mqs_ok);
        REQUIRE(t.setupProcess(s.process) == mqs_ok);
        REQUIRE(t.processHasQueues(s.process) == mqs_ok);
      }
      for (Subjects& s : ranks) refresh(t, s.process, Capabilities{});
    };
  };
  server();
  Outcome native = converseJob(dllFor(3), cell, 4, scenario(false));
  Outcome nativeReplaced = converseJob(dllFor(3), cell, 4, scenario(true));
  for (const Mode& mode : allModes()) {
    if (std::string(mode.cache) != "epoch") continue;
    INFO(mode.name());
    // A server of its own, which learns only from these sessions.
    TempDir state;
    const ServerUnderTest& u = underTest();
    ServerProcess own(u.binary,
                      {"--listen", u.listenAddress(state.path()), "--dll", u.dll3, "--log-level",
                       "warn", "--log-file", state / "server.log", "--state-dir",
                       state / "server-state", "--read-around", "0"},
                      true, u.emulator);
    useProxy(mode, cell);
    useServer(mode, own.endpoint());
    setenv("MQD_PROXY_STATE_DIR", (state / "shim-state").c_str(), 1);
    setenv("MQD_PROXY_LOG", "info", 1);
    // The first session: rank 0's set-ups ask their look-ups one by one (nothing learned yet)
    // and are not recorded; rank 1's are; ranks 2 and 3, whose look-ups answer as rank 1's did
    // and whose set-ups read the same bytes (the ranks differ past what a set-up reads), are
    // set up from that record.
    requireSame(native, converseJob(mqd::test::kShim, cell, 4, scenario(false)));
    auto [first, firstContradicted] = setUpsRecalled(scratch() / "shim.log");
    CHECK(first == 4);
    CHECK(firstContradicted == 0);
    // Every set-up, rank 0's too.
    requireSame(native, converseJob(mqd::test::kShim, cell, 4, scenario(false)));
    auto [second, secondContradicted] = setUpsRecalled(scratch() / "shim.log");
    CHECK(second == 8);
    CHECK(secondContradicted == 0);
    // Rank 2 reads another sequence number: its process's set-up goes to the DLL.
    requireSame(nativeReplaced, converseJob(mqd::test::kShim, cell, 4, scenario(true)));
    auto [third, thirdContradicted] = setUpsRecalled(scratch() / "shim.log");
    CHECK(third == 7);
    CHECK(thirdContradicted == 0);
    // Records the DLL then contradicts (their images' has-queues message edited here, as a DLL
    // that keeps state across set-ups would answer otherwise): the debugger was told the
    // record's message; the reply says otherwise, which the shim reports, and the records go.
    std::string file = recordsFile(state / "shim-state");
    REQUIRE_FALSE(file.empty());
    editRecords(file, [](mqd::wire::SetUpRecords::Builder records) {
      for (auto r : records.getRecords()) r.getImageHasQueues().getMessage().setText("edited");
    });
    converseJob(mqd::test::kShim, cell, 4, scenario(false));
    auto [fourth, fourthContradicted] = setUpsRecalled(scratch() / "shim.log");
    CHECK(fourth == 8);
    CHECK(fourthContradicted == 4);
    CHECK(recordsFile(state / "shim-state").empty());
    // The next session records afresh, rank 0's set-ups too (the look-ups are learned), and
    // answers ranks 1 to 3's from rank 0's record.
    requireSame(native, converseJob(mqd::test::kShim, cell, 4, scenario(false)));
    auto [fifth, fifthContradicted] = setUpsRecalled(scratch() / "shim.log");
    CHECK(fifth == 6);
    CHECK(fifthContradicted == 0);
    unsetenv("MQD_PROXY_LOG");
    setenv("MQD_PROXY_STATE_DIR", "off", 1);
  }
}

TEST_CASE("a job never seen: set-ups answered from another rank's record, moved, and by the "
          "DLL where a rank reads otherwise") {
  // Each rank's data lies elsewhere (whole pages apart). In a first session rank 0's set-ups
  // ask their look-ups one by one and are not recorded; rank 1's are. Rank 2's process set-up
  // is answered from rank 1's record moved by the distance between their symbols, once the
  // bytes it reads there are proved the same (SetUpRecall::shiftTo); rank 3's sequence number,
  // which the set-up reads, is its own, so its set-up goes to the DLL. Every mode shows exactly
  // what a native load shows.
  Cell cell{kWidest, false, 5, 3, 7};
  cell.lateIdentity = true;  // as Open MPI's DLL: the set-up asks nothing but look-ups, reads
  JobScenario scenario = [&cell](Transcript& t, std::vector<Subjects>& ranks) {
    Job own = standardJob(cell.opsPerQueue, static_cast<int>(ranks.size()), 3);
    own.sequence = 2;
    own.lateIdentity = true;
    replaceCommunicators(*ranks[3].target, own);
    if (!setUpJob(t, ranks)) return;
    for (Subjects& s : ranks) refresh(t, s.process, Capabilities{});
  };
  neverSeenInEveryMode(cell, scenario, true, [](const Mode& mode) {
    if (std::string(mode.cache) == "epoch") {
      auto [recalled, contradicted] = setUpsRecalled(scratch() / "shim.log");
      CHECK(recalled == 3);  // the images of ranks 2 and 3, the process of rank 2
      CHECK(setUpsMoved(scratch() / "shim.log") == 1);
      CHECK(contradicted == 0);
    }
  });
}

TEST_CASE("64-bit target values in this debugger's mqs_taddr_t and mqs_tword_t") {
  // A 64-bit target whose structures lie below 4 GiB (so that any debugger can name them), with
  // pending sends whose buffers and lengths may not fit a 32-bit debugger's types. The rules
  // (docs/transparency.md, "Transparency rules", Widths): an address that does not fit fails that
  // call with MQD_PROXY_ERR_ADDRESS_WIDTH and an error string naming it, never a truncated address;
  // a word that does not fit is reduced modulo 2^32, like the C conversion. The iteration goes on.
  const bool narrow = sizeof(mqs_taddr_t) == 4;
  TargetModel target(8, false, 0x10000000ull);
  Job job = standardJob(3);
  auto& sends = job.communicators[0].queues[mqs_pending_sends];
  REQUIRE(sends.size() == 3);
  sends[0].buffer = 0x2000;
  sends[0].length = 0x100000010ll;  // 2^32 + 16
  sends[1].buffer = 0x00007f5a80000000ull;
  sends[1].length = 8;
  sends[2].buffer = 0x3000;
  sends[2].length = -3;
  layOut(target, job);
  server();
  const Mode& mode = allModes().front();
  setenv("MQD_PROXY_SERVER", server().endpoint().c_str(), 1);
  setenv("MQD_PROXY_DLL", underTest().dll(3).c_str(), 1);
  setenv("MQD_PROXY_CACHE", mode.cache, 1);
  setenv("MQD_PROXY_COMPRESS", mode.compress, 1);
  DebuggerHarness d(mqd::test::kShim, {7});
  auto* image = d.addImage(target, "a.out");
  auto* process = d.addProcess(image, 0, "rank0");
  auto* mqsProcess = reinterpret_cast<mqs_process*>(process);
  Transcript t(d);
  Subjects s{image, process, nullptr, &target};
  REQUIRE(setUp(t, s));
  REQUIRE(t.updateCommunicatorList(process) == mqs_ok);
  REQUIRE(t.setupCommunicatorIterator(process) == mqs_ok);
  REQUIRE(t.getCommunicator(process, nullptr) == mqs_ok);
  REQUIRE(t.setupOperationIterator(process, mqs_pending_sends) == mqs_ok);
  auto& dll = d.dll();
  mqs_pending_operation op{};
  REQUIRE(dll.next_operation(mqsProcess, &op) == mqs_ok);
  CHECK(op.buffer == 0x2000);
  CHECK(op.desired_length == (narrow ? mqs_tword_t{16} : static_cast<mqs_tword_t>(0x100000010ll)));
  int rc = dll.next_operation(mqsProcess, &op);
  if (narrow) {
    CHECK(rc == MQD_PROXY_ERR_ADDRESS_WIDTH);
    std::string why = dll.dll_error_string(rc);
    CHECK(why.find("0x7f5a80000000") != std::string::npos);
    CHECK(why.find("does not fit") != std::string::npos);
  } else {
    CHECK(rc == mqs_ok);
    CHECK(static_cast<uint64_t>(op.buffer) == 0x00007f5a80000000ull);
  }
  REQUIRE(dll.next_operation(mqsProcess, &op) == mqs_ok);
  CHECK(op.buffer == 0x3000);
  CHECK(op.desired_length == -3);
  CHECK(dll.next_operation(mqsProcess, &op) == mqs_end_of_list);
}
