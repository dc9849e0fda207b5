// Reading the target on its node (--node-memory): LocalProcess against real processes of this
// host, and RemoteDebugger's proof against a debugger that really reads one of them
// (/proc/PID/mem), with the cases where it must fall back to the debugger: no process with the
// rank, two processes that cannot be told apart, another user's process, a debugger that cannot
// read the AT_RANDOM bytes (qemu's stub), a process that runs (the debugger shows a core file of
// it), and memory that is not what the debugger shows.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capnp/message.h>
#include <kj/async.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "Bulk.h"
#include "DebuggerObjects.h"
#include "DllCall.h"
#include "LocalProcess.h"
#include "ProxyErrors.h"
#include "RemoteDebugger.h"
#include "RunAsDllCall.h"
#include "ServerProcess.h"
#include "SessionBoard.h"

using namespace mqd::server;
namespace wire = mqd::wire;

namespace {

constexpr int kUnreadable = 1002;

// A rank no real job on this host uses.
int unusedRank() { return 7000000 + static_cast<int>(::getpid() % 100000); }

// A child process running `argv` with `env` as its whole environment, as `uid` when set;
// killed with its process group and reaped when the Child goes. Ready once it runs the new program.
class Child {
 public:
  Child(std::vector<std::string> argv, std::vector<std::string> env, uid_t uid = 0)
      : pid_(::fork()) {
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::setpgid(0, 0);  // its own group: whatever it forks goes with it
      if (uid != 0 && (::setgid(uid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
      std::vector<char*> a, e;
      for (auto& s : argv) a.push_back(s.data());
      for (auto& s : env) e.push_back(s.data());
      a.push_back(nullptr);
      e.push_back(nullptr);
      ::execve(a[0], a.data(), e.data());
      ::_exit(127);
    }
    // Started: the program is its own (execve has replaced the fork's), and the kernel has laid
    // out its stack (its environment and AT_RANDOM, in the auxiliary vector), which comes
    // after.
    std::string proc = "/proc/" + std::to_string(pid_);
    char program[PATH_MAX] = {};
    REQUIRE(::realpath(argv[0].c_str(), program) != nullptr);
    bool started = mqd::harness::waitFor([&] {
      char target[256] = {};
      return ::readlink((proc + "/exe").c_str(), target, sizeof target - 1) > 0 &&
             std::string(target) == program && !mqd::harness::fileText(proc + "/auxv").empty() &&
             (env.empty() || !mqd::harness::fileText(proc + "/environ").empty());
    });
    if (!started) FAIL("child did not start " << argv[0]);
  }
  ~Child() {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

  // SIGSTOP to its whole group (as a debugger stops what it shows), once every thread shows it.
  void stop() {
    REQUIRE(::kill(-pid_, SIGSTOP) == 0);
    std::string why;
    bool stopped = mqd::harness::waitFor([&] {
      auto p = LocalProcess::at(pid_, &why);
      return p && p->stopped();
    });
    if (!stopped) FAIL("child did not stop");
  }

 private:
  pid_t pid_;
};

std::string sleeper() { return "/bin/sleep"; }
std::unique_ptr<Child> sleepWith(const std::string& variable, int rank, uid_t uid = 0) {
  return std::make_unique<Child>(std::vector<std::string>{sleeper(), "60"},
                                 std::vector<std::string>{variable + "=" + std::to_string(rank)},
                                 uid);
}

// Whether the children (the host's /bin/sleep) can be candidates at all: not when this test
// runs emulated (a cross build under qemu-user), where they run a program for another machine.
// Then it checks that they are never candidates, says so, and the test ends there.
bool childrenAreCandidates(const Child& child, int rank) {
  if (LocalProcess::ofThisMachine(child.pid())) return true;
  MESSAGE("emulated: the host's processes are another machine's; node reads cannot apply");
  CHECK(LocalProcess::withRank(rank).empty());
  return false;
}

// Two processes of the same binary and rank, each in an environment of its own: `decoy`
// started first (listed first), then `target`, the one the tests' debugger shows.
struct TwoOfOneRank {
  int rank = unusedRank();
  std::unique_ptr<Child> decoy = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  std::unique_ptr<Child> target = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  // Both stopped, as a debugger's are; false (the test ends) when they cannot be candidates.
  bool stopped() {
    if (!childrenAreCandidates(*target, rank)) return false;
    decoy->stop();
    target->stop();
    return true;
  }
};

// The first readable mapping of `pid` (its program's first page): memory every debugger reads.
uint64_t firstMapping(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  REQUIRE(std::getline(maps, line));
  return std::stoull(line.substr(0, line.find('-')), nullptr, 16);
}

// Whether `address` lies in the main thread's stack of `pid` (its "[stack]" mapping).
bool inStack(pid_t pid, uint64_t address) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < 7 || line.compare(line.size() - 7, 7, "[stack]") != 0) continue;
    size_t dash = line.find('-');
    uint64_t low = std::stoull(line.substr(0, dash), nullptr, 16);
    uint64_t high = std::stoull(line.substr(dash + 1), nullptr, 16);
    return address >= low && address + wire::STACK_CHECK_BYTES <= high;
  }
  return false;
}

// A debugger of a real process: reads its memory through /proc/PID/mem, as gdbserver does,
// and gives `rank` as its MPI rank. `tamperAt` (if set) answers the 8 bytes there inverted,
// from the second time on, as a debugger showing another state would. `randomUnreadable`:
// the AT_RANDOM address cannot be read (qemu's stub shows the guest's memory, not the host's).
class ProcDebugger final : public wire::Debugger::Server {
 public:
  struct Script {
    pid_t pid;
    int rank;
    uint64_t tamperAt = 0;
    bool randomUnreadable = false;
    int fetchBlocks = 0;  // round trips asked
    int rankAsked = 0;
    int tamperReads = 0;
  };
  explicit ProcDebugger(Script& s)
      : s_(s), mem_(::open(("/proc/" + std::to_string(s.pid) + "/mem").c_str(), O_RDONLY)) {}

 protected:
  kj::Promise<void> getGlobalRank(GetGlobalRankContext context) override {
    ++s_.rankAsked;
    context.getResults().setRank(s_.rank);
    return kj::READY_NOW;
  }
  kj::Promise<void> fetchBlocks(FetchBlocksContext context) override {
    ++s_.fetchBlocks;
    auto requests = context.getParams().getBlocks();
    auto out = context.getResults().initBlocks(requests.size());
    uint64_t random = 0;
    if (s_.randomUnreadable) {
      std::string why;
      auto p = LocalProcess::at(s_.pid, &why);
      REQUIRE(p);
      random = p->randomAddress();
    }
    for (unsigned i = 0; i < requests.size(); ++i) {
      auto q = requests[i];
      if (s_.randomUnreadable && q.getNeededAddress() == random) {
        out[i].setRc(kUnreadable);
        continue;
      }
      answer(q.getAddress(), q.getSize(), q.getNeededAddress(), q.getNeededSize(), out[i]);
    }
    return kj::READY_NOW;
  }

 public:
  // The debugger's block for a read of [address, size), else of the needed part.
  void answer(uint64_t address, uint32_t size, uint64_t needed, uint32_t neededSize,
              wire::MemoryBlock::Builder out) {
    std::vector<kj::byte> bytes(size);
    uint64_t from = address;
    if (::pread64(mem_.get(), bytes.data(), bytes.size(), static_cast<off64_t>(from)) !=
        static_cast<ssize_t>(bytes.size())) {
      from = needed;
      bytes.resize(neededSize);
      if (::pread64(mem_.get(), bytes.data(), bytes.size(), static_cast<off64_t>(from)) !=
          static_cast<ssize_t>(bytes.size())) {
        out.setRc(kUnreadable);
        return;
      }
    }
    if (s_.tamperAt >= from && s_.tamperAt + 8 <= from + bytes.size() &&
        s_.tamperReads++ > 0) {
      for (int k = 0; k < 8; ++k) bytes[s_.tamperAt - from + k] ^= 0xff;
    }
    out.setRc(0);
    out.setAddress(from);
    mqd::setBulk(out.initData(), kj::arrayPtr(bytes.data(), bytes.size()), false);
  }

 private:
  Script& s_;
  kj::AutoCloseFd mem_;
};


// The server's side of one process of the debugger scripted by `script`.
struct Rig {
  kj::EventLoop loop;
  kj::WaitScope waitScope{loop};
  ProcDebugger::Script& script;
  ProcDebugger debugger;  // the same debugger, as the shim reads it at an update's start
  test::CacheHost host;
  RemoteProcess& process;
  kj::AutoCloseFd mem;  // the truth: the process's memory, read here directly

  static RemoteDebugger::Options options(std::map<pid_t, uint64_t> listedStacks) {
    RemoteDebugger::Options o;
    o.policy = wire::CachePolicy::EPOCH;
    o.nodeMemory = true;
    o.aroundBytes = 0;  // pinned: what is asked of the debugger never depends on timings
    o.listedStacks = std::move(listedStacks);
    return o;
  }

  // `listedStacks`: what the session's opening listed (openSession's nodeProcesses).
  explicit Rig(ProcDebugger::Script& s, std::map<pid_t, uint64_t> listedStacks = {})
      : script(s),
        debugger(s),
        host(kj::heap<ProcDebugger>(s), options(std::move(listedStacks))),
        process(host.objects().process(7)),
        mem(::open(("/proc/" + std::to_string(s.pid) + "/mem").c_str(), O_RDONLY)) {}

  // One epoch (mqs_update_communicator_list) that reads 8 bytes at each of `addresses` and
  // checks them against the process's memory, as the debugger shows it (`tamperAt` aside).
  // With `readAhead`, as the shim makes one: the windows the last epoch named
  // (nextEpochWindows) read from the debugger first and sent with the update.
  void epoch(const std::vector<uint64_t>& addresses, bool readAhead = false) {
    std::vector<TargetMemory::Window> none;
    run(readAhead ? host.remote().nextEpochWindows(process) : none, addresses,
        RemoteDebugger::EpochKind::Update, std::nullopt);
  }

  // A set-up (mqs_setup_process) as the shim sends it to a server that reads on its host: the
  // process's MPI rank, and `windows` read from the debugger ahead; the DLL then reads as in
  // epoch().
  void setUp(int rank, const std::vector<TargetMemory::Window>& windows,
             const std::vector<uint64_t>& addresses) {
    run(windows, addresses, RemoteDebugger::EpochKind::SetUp, rank);
  }

  // An epoch of `kind` with `windows` read ahead from the debugger, whose DLL reads 8 bytes at
  // each of `addresses`, each checked against the process's memory as the debugger shows it;
  // `rank`: the shim sent it with the call (ProcessFacts.globalRank).
  void run(const std::vector<TargetMemory::Window>& windows,
           const std::vector<uint64_t>& addresses, RemoteDebugger::EpochKind kind,
           std::optional<int> rank) {
    capnp::MallocMessageBuilder message;
    auto facts = message.initRoot<wire::ProcessFacts>();
    if (rank) facts.initGlobalRank().setValue(*rank);
    std::vector<RemoteDebugger::BlockAhead> ahead;
    // what `ahead` reads, kept alive
    auto blocks = message.getOrphanage().newOrphan<capnp::List<wire::MemoryBlock>>(
        static_cast<unsigned>(windows.size()));
    for (unsigned i = 0; i < windows.size(); ++i) {
      const auto& w = windows[i];
      debugger.answer(w.address, w.size, w.address, w.size, blocks.get()[i]);
      ahead.push_back({w, blocks.getReader()[i]});
    }
    test::runAsDllCall(host, waitScope, [&](DllCall& call) {
      if (rank) host.remote().keepProcessFacts(process, facts.asReader());
      host.remote().newEpoch(call, process, {}, ahead, kind);
      for (uint64_t a : addresses) {
        uint8_t got[8], truth[8];
        REQUIRE(host.remote().fetchData(call, process, a, 8, got) == 0);
        REQUIRE(::pread64(mem.get(), truth, 8, static_cast<off64_t>(a)) == 8);
        if (a == script.tamperAt && script.tamperReads > 1) {
          for (auto& b : truth) b ^= 0xff;
        }
        CHECK(std::memcmp(got, truth, 8) == 0);
      }
    });
  }
  RemoteProcess::NodeProof::State state() const { return process.node.state; }
  uint64_t counted(Count c) { return host.metrics().get(c); }
};

using State = RemoteProcess::NodeProof::State;

}  // namespace

TEST_CASE("LocalProcess: a process's AT_RANDOM bytes and memory, as the kernel gave them") {
  std::string why;
  auto self = LocalProcess::at(::getpid(), &why);
  REQUIRE_MESSAGE(self, why);
  CHECK(self->randomAddress() == ::getauxval(AT_RANDOM));
  CHECK(std::memcmp(self->random().data(), reinterpret_cast<const void*>(::getauxval(AT_RANDOM)),
                    16) == 0);
  uint64_t value = 0x1122334455667788ull, read = 0;
  CHECK(self->read(reinterpret_cast<uintptr_t>(&value), &read, sizeof read));
  CHECK(read == value);
  CHECK_FALSE(self->read(0, &read, sizeof read));  // the null page is never readable
  CHECK_FALSE(LocalProcess::at(0x7ffffff0, &why));
  CHECK(why.find("no process") != std::string::npos);
}

TEST_CASE("LocalProcess::withRank: this user's processes with the rank in their environment, "
          "each with its own random bytes") {
  int rank = unusedRank();
  auto a = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  auto b = sleepWith("OMPI_COMM_WORLD_RANK", rank);  // the same binary, the same rank
  auto c = sleepWith("PMI_RANK", rank);
  auto other = sleepWith("OMPI_COMM_WORLD_RANK", rank + 1);
  if (!childrenAreCandidates(*a, rank)) return;
  std::set<pid_t> pids;
  std::set<LocalProcess::Random> randoms;
  for (const auto& p : LocalProcess::withRank(rank)) {
    pids.insert(p.pid());
    randoms.insert(p.random());
  }
  CHECK(pids == std::set<pid_t>{a->pid(), b->pid(), c->pid()});
  CHECK(randoms.size() == 3);
  // The ranks a node's server lists as its session opens: these two among them.
  std::set<int> here = LocalProcess::ranksHere();
  CHECK(here.count(rank) == 1);
  CHECK(here.count(rank + 1) == 1);
  std::string why;
  auto running = LocalProcess::at(a->pid(), &why);
  REQUIRE_MESSAGE(running, why);
  CHECK_FALSE(running->stopped());  // sleeping is running
  a->stop();
  CHECK(running->stopped());
}

TEST_CASE("LocalProcess::proofAddressesHere: the stack pointer of a thread that waits, none of "
          "one that runs") {
  int rank = unusedRank();
  auto waiting = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  Child running({"/bin/sh", "-c", "while :; do :; done"}, {"PMI_RANK=" + std::to_string(rank)});
  if (!childrenAreCandidates(*waiting, rank)) return;
  std::vector<LocalProcess::ProofAddresses> listed = LocalProcess::proofAddressesHere()[rank];
  REQUIRE(listed.size() == 2);
  for (const auto& at : listed) {
    CHECK(at.random != 0);
    if (at.pid == waiting->pid()) CHECK(inStack(at.pid, at.stack));  // in nanosleep
    if (at.pid == running.pid()) CHECK(at.stack == 0);  // /proc/PID/syscall: "running"
  }
  CHECK(listed[0].pid != listed[1].pid);
}

TEST_CASE("LocalProcess: another user's process is never a candidate") {
  std::unique_ptr<Child> foreign;
  pid_t pid = 1;  // without root, init is another user's
  int rank = unusedRank();
  if (::geteuid() == 0) {
    foreign = sleepWith("OMPI_COMM_WORLD_RANK", rank, 65534);
    pid = foreign->pid();
    CHECK(LocalProcess::withRank(rank).empty());
    CHECK(LocalProcess::ranksHere().count(rank) == 0);
  }
  std::string why;
  CHECK_FALSE(LocalProcess::at(pid, &why));
  CHECK(why.find("another user") != std::string::npos);
}

TEST_CASE("RemoteDebugger --node-memory: the debugger's process is proved among two of the same "
          "binary and rank, then read on the node") {
  TwoOfOneRank two;
  if (!two.stopped()) return;
  const int rank = two.rank;
  const auto& target = two.target;
  ProcDebugger::Script script{target->pid(), rank};
  Rig rig(script);
  uint64_t base = firstMapping(target->pid());
  // A learned set-up sends nothing ahead here: its first read must miss, to make the proof.
  test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
    rig.host.remote().newEpoch(call, rig.process, {}, {}, RemoteDebugger::EpochKind::SetUp);
    CHECK(rig.host.remote().setUpAheadWindows(rig.process, {{base, 16}}).empty());
  });
  rig.epoch({base, base + 0x100, base + 0x1000});
  CHECK(rig.state() == State::Proven);
  REQUIRE(rig.process.node.process);
  CHECK(rig.process.node.process->pid() == target->pid());
  CHECK(script.rankAsked == 1);
  CHECK(script.fetchBlocks == 1);  // the proof and the first read: one round trip
  CHECK(rig.counted(Count::NodeBlocks) >= 1);
  // The next epoch: one round trip, for the check of its first read; the rest on the node.
  rig.epoch({base + 8, base + 0x2000});
  CHECK(script.fetchBlocks == 2);
  CHECK(script.rankAsked == 1);
  CHECK(rig.state() == State::Proven);
  // Through the shim, which reads what that check compared as the update starts: no round
  // trip at all, the check made with the bytes read ahead.
  auto windows = rig.host.remote().nextEpochWindows(rig.process);
  REQUIRE(windows.size() == 1);
  CHECK(windows[0].address == base + 8);
  CHECK(windows[0].size == 8);
  uint64_t onNode = rig.counted(Count::NodeBlocks);
  rig.epoch({base + 8, base + 0x3000}, true);
  CHECK(script.fetchBlocks == 2);
  CHECK(rig.state() == State::Proven);
  CHECK(rig.process.node.checkedThisEpoch);
  CHECK(rig.counted(Count::NodeBlocks) > onNode);
}

TEST_CASE("RemoteDebugger --node-memory: the rank sent with the set-up finds the process "
          "without asking the debugger") {
  int rank = unusedRank();
  auto target = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  if (!childrenAreCandidates(*target, rank)) return;
  target->stop();
  ProcDebugger::Script script{target->pid(), rank};
  Rig rig(script);
  uint64_t base = firstMapping(target->pid());
  // The shim's facts, as it sends them to a server that reads on its host.
  capnp::MallocMessageBuilder message;
  auto facts = message.initRoot<wire::ProcessFacts>();
  facts.initGlobalRank().setValue(rank);
  test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
    rig.host.remote().keepProcessFacts(rig.process, facts.asReader());
    rig.host.remote().newEpoch(call, rig.process, {}, {}, RemoteDebugger::EpochKind::SetUp);
    uint8_t got[8], truth[8];
    REQUIRE(rig.host.remote().fetchData(call, rig.process, base, 8, got) == 0);
    REQUIRE(::pread64(rig.mem.get(), truth, 8, static_cast<off64_t>(base)) == 8);
    CHECK(std::memcmp(got, truth, 8) == 0);
    // The DLL's own ask in the same call: the rank the debugger answered for it.
    CHECK(rig.host.remote().globalRank(call, rig.process) == rank);
  });
  CHECK(rig.state() == State::Proven);
  CHECK(script.rankAsked == 0);
  CHECK(script.fetchBlocks == 1);  // the proof and the first read, nothing before them
  // The rank held for that call only: a later call that needs it asks the debugger.
  test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
    CHECK(rig.host.remote().globalRank(call, rig.process) == rank);
  });
  CHECK(script.rankAsked == 1);
}

TEST_CASE("RemoteDebugger --node-memory: the proof and the check read with the set-up, listed "
          "as the session opened, cost no round trip") {
  TwoOfOneRank two;
  if (!two.stopped()) return;
  const int rank = two.rank;
  const auto& decoy = two.decoy;
  const auto& target = two.target;
  // What a node's server lists as the session opens (nodeProcesses): both, each with its
  // AT_RANDOM address and its stack pointer, inside its stack.
  std::vector<LocalProcess::ProofAddresses> listed = LocalProcess::proofAddressesHere()[rank];
  REQUIRE(listed.size() == 2);
  std::map<pid_t, uint64_t> stacks;
  std::vector<TargetMemory::Window> ahead;
  std::string why;
  for (const Child* c : {decoy.get(), target.get()}) {
    auto p = LocalProcess::at(c->pid(), &why);
    REQUIRE_MESSAGE(p, why);
    auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& a) {
      return a.pid == c->pid();
    });
    REQUIRE(it != listed.end());
    CHECK(it->random == p->randomAddress());
    CHECK(inStack(c->pid(), it->stack));
    stacks[it->pid] = it->stack;
    ahead.push_back({it->random, wire::AT_RANDOM_BYTES});
    ahead.push_back({it->stack, wire::STACK_CHECK_BYTES});
  }
  std::sort(ahead.begin(), ahead.end(), [](const TargetMemory::Window& a,
                                           const TargetMemory::Window& b) {
    return a.address < b.address;
  });
  ProcDebugger::Script script{target->pid(), rank};
  Rig rig(script, stacks);
  uint64_t base = firstMapping(target->pid());
  const uint64_t targetStack = stacks[target->pid()];
  // Nothing of an image's earlier set-ups is read with it: the stack is the check.
  CHECK(rig.host.remote().imageSetUpAheadWindows({{base, 64}, {base + 0x1000, 64}}).empty());

  SUBCASE("every candidate's bytes read: proved and checked at its stack, then read on the "
          "node; the decoy's stack compared with nothing") {
    rig.setUp(rank, ahead, {base, base + 0x100, base + 0x1000});
    CHECK(rig.state() == State::Proven);
    REQUIRE(rig.process.node.process);
    CHECK(rig.process.node.process->pid() == target->pid());
    CHECK(rig.process.node.checkedThisEpoch);
    CHECK(script.fetchBlocks == 0);
    CHECK(script.rankAsked == 0);
    // The next epoch's check compares the stack's window again, read ahead by the shim.
    auto next = rig.host.remote().nextEpochWindows(rig.process);
    REQUIRE(next.size() == 1);
    CHECK(next[0].address == targetStack);
    CHECK(next[0].size == wire::STACK_CHECK_BYTES);
    rig.epoch({base + 8, base + 0x2000}, true);
    CHECK(script.fetchBlocks == 0);
    CHECK(rig.state() == State::Proven);
  }
  SUBCASE("no stack read with it (its thread ran as the session opened, or an older shim): "
          "the first read is the check") {
    ahead.erase(std::remove_if(ahead.begin(), ahead.end(),
                               [](const TargetMemory::Window& w) {
                                 return w.size == wire::STACK_CHECK_BYTES;
                               }),
                ahead.end());
    rig.setUp(rank, ahead, {base + 0x100, base + 0x1000});
    CHECK(rig.state() == State::Proven);
    CHECK(script.fetchBlocks == 1);  // the check, with the DLL's first read
    auto next = rig.host.remote().nextEpochWindows(rig.process);
    REQUIRE(next.size() == 1);
    CHECK(next[0].address == base + 0x100);
  }
  SUBCASE("a candidate's bytes not read (it started after the session opened): proved as ever") {
    ahead.erase(std::find_if(ahead.begin(), ahead.end(), [&](const TargetMemory::Window& w) {
      return w.size == wire::AT_RANDOM_BYTES && w.address != 0 &&
             w.address == LocalProcess::at(decoy->pid(), &why)->randomAddress();
    }));
    rig.setUp(rank, ahead, {base + 0x100});
    CHECK(rig.state() == State::Proven);
    CHECK(rig.process.node.process->pid() == target->pid());
    CHECK(script.fetchBlocks == 1);  // the proof and the first read: one round trip
  }
  SUBCASE("the debugger shows another state at the stack (a replay elsewhere): refused") {
    script.tamperAt = targetStack;
    script.tamperReads = 1;  // from this read on
    rig.setUp(rank, ahead, {base + 0x100});
    CHECK(rig.state() == State::Refused);
    CHECK(script.fetchBlocks == 1);  // the DLL's read, from the debugger
  }
}

TEST_CASE("RemoteDebugger --node-memory: without a proof, the debugger answers every miss") {
  int rank = unusedRank();
  auto target = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  if (!childrenAreCandidates(*target, rank)) return;
  uint64_t base = firstMapping(target->pid());

  SUBCASE("the process runs (the debugger shows a core file of it, or a replay)") {
    ProcDebugger::Script script{target->pid(), rank};
    Rig rig(script);
    rig.epoch({base, base + 0x100});
    CHECK(rig.state() == State::Refused);
    CHECK(rig.counted(Count::NodeBlocks) == 0);
  }
  target->stop();

  SUBCASE("no process of this user has the rank (another host)") {
    ProcDebugger::Script script{target->pid(), rank + 2};
    Rig rig(script);
    rig.epoch({base, base + 0x100});
    CHECK(rig.state() == State::Refused);
    CHECK(script.rankAsked == 1);  // asked once: the refusal holds for the set-up
    CHECK(rig.counted(Count::NodeBlocks) == 0);
  }
  SUBCASE("the debugger cannot read the AT_RANDOM bytes (qemu's stub)") {
    ProcDebugger::Script script{target->pid(), rank};
    script.randomUnreadable = true;
    Rig rig(script);
    rig.epoch({base, base + 0x100});
    CHECK(rig.state() == State::Refused);
    CHECK(rig.counted(Count::NodeBlocks) == 0);
  }
  SUBCASE("two processes show the same random bytes (a fork): neither is chosen") {
    // dash's subshell is a fork of dash that never execs: both have the same AT_RANDOM bytes
    // and the same environment.
    Child shell({"/bin/dash", "-c", "( while :; do sleep 1; done ) & wait"},
                {"OMPI_COMM_WORLD_RANK=" + std::to_string(rank + 3), "PATH=/bin"});
    REQUIRE(mqd::harness::waitFor([&] { return !mqd::harness::childrenOf(shell.pid()).empty(); }));
    shell.stop();
    ProcDebugger::Script script{shell.pid(), rank + 3};
    Rig rig(script);
    uint64_t shellBase = firstMapping(shell.pid());
    rig.epoch({shellBase});
    CHECK(rig.state() == State::Refused);
    CHECK(rig.counted(Count::NodeBlocks) == 0);
  }
  SUBCASE("memory that is not what the debugger shows (a past state): refused at that epoch") {
    ProcDebugger::Script script{target->pid(), rank};
    script.tamperAt = base + 0x10;
    Rig rig(script);
    rig.epoch({base + 0x10});
    CHECK(rig.state() == State::Proven);
    rig.epoch({base + 0x10, base + 0x1000});  // the debugger now shows other bytes there
    CHECK(rig.state() == State::Refused);
    CHECK(script.fetchBlocks == 3);  // the proof, the check, then a block from the debugger
  }
  SUBCASE("memory that is not what the debugger read ahead: refused, the debugger's bytes kept") {
    ProcDebugger::Script script{target->pid(), rank};
    script.tamperAt = base + 0x10;
    Rig rig(script);
    rig.epoch({base + 0x10});
    CHECK(rig.state() == State::Proven);
    uint64_t onNode = rig.counted(Count::NodeBlocks);
    // The shim reads base + 0x10 ahead, as the debugger now shows it: not the node's bytes.
    // The DLL's reads must show the debugger's (Rig::epoch checks them).
    rig.epoch({base + 0x10, base + 0x1000}, true);
    CHECK(script.tamperReads == 2);
    CHECK(rig.state() == State::Refused);
    CHECK(rig.counted(Count::NodeBlocks) == onNode);
  }
}

TEST_CASE("RemoteDebugger --node-memory: the epoch check made late gives the shim the node's "
          "bytes, which the DLL is served; none from a window or a process the node cannot "
          "give") {
  int rank = unusedRank();
  auto target = sleepWith("OMPI_COMM_WORLD_RANK", rank);
  if (!childrenAreCandidates(*target, rank)) return;
  target->stop();
  ProcDebugger::Script script{target->pid(), rank};
  Rig rig(script);
  uint64_t base = firstMapping(target->pid());
  rig.epoch({base + 0x10, base + 0x100});
  REQUIRE(rig.state() == State::Proven);
  auto windows = rig.host.remote().nextEpochWindows(rig.process);
  REQUIRE(windows.size() == 1);
  int asked = script.fetchBlocks;
  auto& remote = rig.host.remote();
  test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
    remote.newEpoch(call, rig.process);
    CHECK_FALSE(rig.process.node.checkedThisEpoch);
    auto node = remote.readForLateCheck(call, rig.process, windows);
    REQUIRE(node.size() == 1);
    REQUIRE(node[0].size() == windows[0].size);
    std::vector<uint8_t> truth(windows[0].size);
    REQUIRE(::pread64(rig.mem.get(), truth.data(), truth.size(),
                      static_cast<off64_t>(windows[0].address)) ==
            static_cast<ssize_t>(truth.size()));
    CHECK(std::memcmp(node[0].begin(), truth.data(), truth.size()) == 0);
    CHECK(rig.process.node.checkedThisEpoch);
    // The DLL's reads: the window as returned, the rest on the node, no debugger asked.
    std::vector<uint8_t> got(windows[0].size);
    REQUIRE(remote.fetchData(call, rig.process, windows[0].address,
                             static_cast<int>(got.size()), got.data()) == 0);
    CHECK(got == truth);
    uint8_t far[8], farTruth[8];
    REQUIRE(remote.fetchData(call, rig.process, base + 0x2000, 8, far) == 0);
    REQUIRE(::pread64(rig.mem.get(), farTruth, 8, static_cast<off64_t>(base + 0x2000)) == 8);
    CHECK(std::memcmp(far, farTruth, 8) == 0);
    // More than the shim may ever name: refused as a protocol error.
    std::vector<TargetMemory::Window> huge{{base, wire::MAX_BLOCKS_AHEAD_BYTES},
                                           {base, 1}};
    CHECK_THROWS_AS(remote.readForLateCheck(call, rig.process, huge), mqd::ProxyError);
  });
  CHECK(script.fetchBlocks == asked);
  CHECK(rig.state() == State::Proven);

  // A window the node cannot read (the null page): nothing, the epoch left to the DLL's first
  // read, the process still proved.
  test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
    remote.newEpoch(call, rig.process);
    CHECK(remote.readForLateCheck(call, rig.process, {{0, 8}}).empty());
    CHECK_FALSE(rig.process.node.checkedThisEpoch);
  });
  CHECK(rig.state() == State::Proven);

  // The process runs (the debugger shows a past state of it): nothing, and refused.
  REQUIRE(::kill(-target->pid(), SIGCONT) == 0);
  std::string why;
  auto live = LocalProcess::at(target->pid(), &why);
  REQUIRE_MESSAGE(live, why);
  REQUIRE(mqd::harness::waitFor([&] { return !live->stopped(); }));
  test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
    remote.newEpoch(call, rig.process);
    CHECK(remote.readForLateCheck(call, rig.process, windows).empty());
  });
  CHECK(rig.state() == State::Refused);
  CHECK(script.fetchBlocks == asked);
}

TEST_CASE("RemoteDebugger --node-memory: the set-up's proof made late takes a rank's one "
          "process, listed, and gives the shim its bytes; nothing for two of a rank, a window "
          "not listed, or a process that runs") {
  TwoOfOneRank two;
  if (!two.stopped()) return;
  // What the session's opening listed of each (openSession's nodeProcesses).
  std::map<pid_t, uint64_t> stacks;
  std::map<pid_t, std::vector<TargetMemory::Window>> windows;  // in address order
  auto listed = LocalProcess::proofAddressesHere();
  for (const auto& p : listed[two.rank]) {
    stacks[p.pid] = p.stack;
    windows[p.pid] = {{p.random, wire::AT_RANDOM_BYTES}, {p.stack, wire::STACK_CHECK_BYTES}};
    std::sort(windows[p.pid].begin(), windows[p.pid].end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
  }
  const pid_t pid = two.target->pid();
  REQUIRE(windows.count(pid) == 1);
  ProcDebugger::Script script{pid, two.rank};
  Rig rig(script, stacks);
  auto& remote = rig.host.remote();
  // A set-up's epoch with the rank the shim sent, as SessionService::setupProcess starts it.
  auto proveLate = [&](const std::vector<TargetMemory::Window>& late) {
    std::vector<kj::Array<kj::byte>> node;
    capnp::MallocMessageBuilder message;
    auto facts = message.initRoot<wire::ProcessFacts>();
    facts.initGlobalRank().setValue(two.rank);
    test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
      remote.processSetUp(rig.process);
      remote.keepProcessFacts(rig.process, facts.asReader());
      remote.newEpoch(call, rig.process, {}, {}, RemoteDebugger::EpochKind::SetUp);
      node = remote.proveLateOnNode(call, rig.process, late);
    });
    return node;
  };

  SUBCASE("two of the rank: only the debugger's bytes tell, nothing proved") {
    CHECK(proveLate(windows[pid]).empty());
    CHECK(rig.state() == State::Untried);
  }
  SUBCASE("the rank's one process: proved, its bytes returned, its stack the epoch's check") {
    two.decoy.reset();  // gone: the target is the rank's one process here
    REQUIRE(mqd::harness::waitFor([&] { return LocalProcess::withRank(two.rank).size() == 1; }));
    SUBCASE("as listed") {
      auto node = proveLate(windows[pid]);
      REQUIRE(node.size() == 2);
      for (size_t i = 0; i < 2; ++i) {
        const auto& w = windows[pid][i];
        std::vector<uint8_t> truth(w.size);
        REQUIRE(::pread64(rig.mem.get(), truth.data(), truth.size(),
                          static_cast<off64_t>(w.address)) == static_cast<ssize_t>(w.size));
        REQUIRE(node[i].size() == w.size);
        CHECK(std::memcmp(node[i].begin(), truth.data(), truth.size()) == 0);
      }
      CHECK(rig.state() == State::Proven);
      CHECK(rig.process.node.checkedThisEpoch);
      auto next = remote.nextEpochWindows(rig.process);
      REQUIRE(next.size() == 1);
      CHECK(next[0].address == stacks[pid]);
      // The DLL's reads on the node, no debugger asked.
      uint64_t base = firstMapping(pid);
      test::runAsDllCall(rig.host, rig.waitScope, [&](DllCall& call) {
        uint8_t got[8], truth[8];
        REQUIRE(remote.fetchData(call, rig.process, base, 8, got) == 0);
        REQUIRE(::pread64(rig.mem.get(), truth, 8, static_cast<off64_t>(base)) == 8);
        CHECK(std::memcmp(got, truth, 8) == 0);
      });
      CHECK(script.fetchBlocks == 0);
      CHECK(script.rankAsked == 0);
    }
    SUBCASE("a window it did not list: nothing") {
      auto late = windows[pid];
      late[0].address += 8;
      CHECK(proveLate(late).empty());
      CHECK(rig.state() == State::Untried);
      CHECK(proveLate({windows[pid][0]}).empty());
      CHECK(rig.state() == State::Untried);
    }
    SUBCASE("it runs: nothing (its first read refuses it, as ever)") {
      REQUIRE(::kill(-pid, SIGCONT) == 0);
      std::string why;
      auto live = LocalProcess::at(pid, &why);
      REQUIRE_MESSAGE(live, why);
      REQUIRE(mqd::harness::waitFor([&] { return !live->stopped(); }));
      CHECK(proveLate(windows[pid]).empty());
      CHECK(rig.state() == State::Untried);
    }
  }
}
