// The debugger process over a long life: libmqdproxy.so loaded and unloaded hundreds of times
// with a session each time, and thousands of full queue dumps in one session and in several,
// against a real mqd-proxy-server. Resident memory, descriptors and threads of this process
// (the debugger) and of the server's worker and supervisor are sampled after a warm-up and at
// the end, printed, and bounded:
//   * descriptors and threads: exactly as many at the end as after the warm-up;
//   * resident memory after the warm-up: at most kLoadGrowth over all loads, kDumpGrowth over
//     all dumps, and at most kLateGrowth over the second half of the dumps (a leak grows in
//     both halves; allocator arenas and caches settle in the first). 512 bytes kept per dump
//     would be 2.4 MiB over the default 5000 dumps; a longer run tightens this.
// Under AddressSanitizer freed memory sits in a quarantine of up to 256 MiB, so resident
// memory says nothing there: the memory bounds are reported as not checked and LeakSanitizer
// checks every allocation instead (at exit here, and in each server worker as it ends).
//
// Counts, from the environment, for a longer manual run (defaults keep CI near a minute):
//   MQD_SOAK_LOADS     shim loads (dlopen, session, one dump, dlclose); default 500
//   MQD_SOAK_DUMPS     dumps in the one-session run, and spread over the sessions of the
//                      several-sessions run (call-mode sessions dump a tenth); default 5000
//   MQD_SOAK_SESSIONS  sessions of the several-sessions run; default 6
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "ProcessUsage.h"
#include "ServerProcess.h"
#include "ShimRig.h"
#include "TestPaths.h"

using namespace mqd::harness;
using mqd::soak::mebibytes;
using mqd::soak::ProcessUsage;
using mqd::soak::rssGrowth;

namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kLoadGrowth = 4 * kMiB;
constexpr int64_t kDumpGrowth = 2 * kMiB;
constexpr int64_t kLateGrowth = kMiB / 2;
constexpr size_t kOpsPerQueue = 5;
constexpr int kCommunicators = 5;  // standardJob()
constexpr int kOpsPerDump = kCommunicators * kOpsPerQueue * 3;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMemoryMeaningful = false;
#else
constexpr bool kMemoryMeaningful = true;
#endif

int countFromEnv(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return fallback;
  int n = std::atoi(v);
  REQUIRE_MESSAGE(n > 0, name << " must be a positive count, not \"" << v << "\"");
  return n;
}

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

struct SoakServer {
  ServerProcess process;
  explicit SoakServer(const std::string& name)
      : process(mqd::test::kServer, {"--listen", "unix:" + (scratch() / (name + ".sock")),
                                     "--dll", mqd::test::kTestDll3, "--log-file",
                                     scratch() / (name + ".log")}) {
    setenv("MQD_PROXY_SERVER", process.endpoint().c_str(), 1);
    setenv("MQD_PROXY_DLL", mqd::test::kTestDll3, 1);
    setenv("MQD_PROXY_LOG_FILE", (scratch() / "shim.log").c_str(), 1);
    unsetenv("MQD_PROXY_TIMEOUT");
    unsetenv("MQD_PROXY_CACHE");
  }
  // The one worker serving the current session.
  pid_t worker() const {
    std::vector<pid_t> w = childrenOnceThere(process.pid(), 1);
    REQUIRE(w.size() == 1);
    return w[0];
  }
};

// A full dump as a debugger shows it: update, every communicator with its group, all three
// queues of each. Returns the number of operations; every call must succeed.
int fullDump(Rig& rig) {
  MqsLibrary& dll = rig.dll();
  int ops = 0;
  REQUIRE(dll.update_communicator_list(rig.p()) == mqs_ok);
  REQUIRE(dll.setup_communicator_iterator(rig.p()) == mqs_ok);
  do {
    mqs_communicator c;
    REQUIRE(dll.get_communicator(rig.p(), &c) == mqs_ok);
    std::vector<int> ranks(static_cast<size_t>(c.size) + 1, -1);
    REQUIRE(dll.get_comm_group(rig.p(), ranks.data()) == mqs_ok);
    for (int q = 0; q < 3; ++q) {
      REQUIRE(dll.setup_operation_iterator(rig.p(), q) == mqs_ok);
      mqs_pending_operation op;
      while (dll.next_operation(rig.p(), &op) == mqs_ok) ++ops;
    }
  } while (dll.next_communicator(rig.p()) == mqs_ok);
  return ops;
}

void report(const char* who, const ProcessUsage& warm, const ProcessUsage& end) {
  std::printf("soak: %-22s after warm-up %s; at the end %s; growth %s\n", who,
              warm.text().c_str(), end.text().c_str(), mebibytes(rssGrowth(warm, end)).c_str());
  std::fflush(stdout);
}

// The resident-memory bounds, or a line saying why they are not checked in this build.
void checkGrowth(const char* who, int64_t growth, int64_t bound) {
  if (!kMemoryMeaningful) {
    std::printf("soak: %s: memory bound not checked under AddressSanitizer (quarantine); "
                "LeakSanitizer checks instead\n", who);
    return;
  }
  CHECK_MESSAGE(growth <= bound, std::string(who) << " grew by " << mebibytes(growth) << " (bound "
                                     << mebibytes(bound) << ")");
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("loads: the shim loaded and unloaded hundreds of times, a session each time") {
  const int loads = countFromEnv("MQD_SOAK_LOADS", 500);
  const int warmUp = loads / 10 + 1;
  SoakServer server("loads");
  ProcessUsage warm, serverWarm;
  std::string warmFds;
  auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < loads + warmUp; ++round) {
    if (round == warmUp) {
      warm = ProcessUsage::of();
      warmFds = mqd::soak::openDescriptors();
      serverWarm = ProcessUsage::of(server.process.pid());
    }
    {
      Rig rig(kOpsPerQueue);
      rig.setUp();
      REQUIRE(fullDump(rig) == kOpsPerDump);
    }
    void* still = dlopen(mqd::test::kShim, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(still == nullptr, "dlclose left the shim loaded after round " << round);
  }
  ProcessUsage end = ProcessUsage::of();
  // Workers end when their session's connection closes; let the supervisor reap the last.
  childrenOnceThere(server.process.pid(), 0);
  ProcessUsage serverEnd = ProcessUsage::of(server.process.pid());
  std::printf("soak: %d loads (after %d warm-up) in %.1f s\n", loads, warmUp, secondsSince(start));
  report("debugger (loads)", warm, end);
  report("supervisor (loads)", serverWarm, serverEnd);
  CHECK_MESSAGE(end.fds == warm.fds, "after the warm-up:\n" << warmFds << "at the end:\n"
                                                           << mqd::soak::openDescriptors());
  CHECK(end.threads == warm.threads);
  CHECK(serverEnd.fds == serverWarm.fds);
  CHECK(childrenOf(server.process.pid()).empty());
  checkGrowth("debugger over the loads", rssGrowth(warm, end), kLoadGrowth);
  checkGrowth("supervisor over the loads", rssGrowth(serverWarm, serverEnd), kLoadGrowth);
}

TEST_CASE("dumps: thousands of full dumps in one session") {
  const int dumps = countFromEnv("MQD_SOAK_DUMPS", 5000);
  const int warmUp = dumps / 10 + 1;
  SoakServer server("one-session");
  Rig rig(kOpsPerQueue);
  rig.setUp();
  pid_t worker = server.worker();
  ProcessUsage warm, mid, workerWarm, workerMid;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < warmUp + dumps; ++i) {
    if (i == warmUp) {
      warm = ProcessUsage::of();
      workerWarm = ProcessUsage::of(worker);
    }
    if (i == warmUp + dumps / 2) {
      mid = ProcessUsage::of();
      workerMid = ProcessUsage::of(worker);
    }
    REQUIRE(fullDump(rig) == kOpsPerDump);
  }
  ProcessUsage end = ProcessUsage::of();
  ProcessUsage workerEnd = ProcessUsage::of(worker);
  double seconds = secondsSince(start);
  std::printf("soak: %d dumps (after %d warm-up) of %d operations in one session in %.1f s "
              "(%.2f ms a dump)\n", dumps, warmUp, kOpsPerDump, seconds,
              1000.0 * seconds / (dumps + warmUp));
  report("debugger (one session)", warm, end);
  report("worker (one session)", workerWarm, workerEnd);
  std::printf("soak: second half: debugger %s, worker %s\n",
              mebibytes(rssGrowth(mid, end)).c_str(),
              mebibytes(rssGrowth(workerMid, workerEnd)).c_str());
  CHECK(end.fds == warm.fds);
  CHECK(end.threads == warm.threads);
  CHECK(workerEnd.fds == workerWarm.fds);
  CHECK(workerEnd.threads == workerWarm.threads);
  checkGrowth("debugger over the dumps", rssGrowth(warm, end), kDumpGrowth);
  checkGrowth("debugger over the second half", rssGrowth(mid, end), kLateGrowth);
  checkGrowth("worker over the dumps", rssGrowth(workerWarm, workerEnd), kDumpGrowth);
  checkGrowth("worker over the second half", rssGrowth(workerMid, workerEnd), kLateGrowth);
}

TEST_CASE("sessions: thousands of full dumps spread over several sessions, every cache mode") {
  const int dumps = countFromEnv("MQD_SOAK_DUMPS", 5000);
  const int sessions = countFromEnv("MQD_SOAK_SESSIONS", 6);
  const int perSession = dumps / sessions + 1;
  SoakServer server("sessions");
  ProcessUsage warm, end;
  std::vector<int64_t> workerGrowth;
  int total = 0;
  auto start = std::chrono::steady_clock::now();
  // Session 0 is the warm-up. The sessions cycle through epoch, epoch with zstd, and call;
  // call forwards every callback (some 30x slower a dump), so its sessions dump a tenth.
  for (int s = 0; s <= sessions; ++s) {
    const int mode = s % 3;
    setenv("MQD_PROXY_CACHE", mode == 2 ? "call" : "epoch", 1);
    setenv("MQD_PROXY_COMPRESS", mode == 1 ? "on" : "off", 1);
    const int count = mode == 2 ? perSession / 10 + 1 : perSession;
    {
      Rig rig(kOpsPerQueue);
      rig.setUp();
      pid_t worker = server.worker();
      ProcessUsage workerFirst;
      for (int i = 0; i < count; ++i) {
        REQUIRE(fullDump(rig) == kOpsPerDump);
        if (i == count / 10) workerFirst = ProcessUsage::of(worker);
      }
      total += count;
      if (s > 0) workerGrowth.push_back(rssGrowth(workerFirst, ProcessUsage::of(worker)));
    }
    childrenOnceThere(server.process.pid(), 0);  // (a worker exits with its leak check)
    if (s == 0) warm = ProcessUsage::of();
  }
  end = ProcessUsage::of();
  unsetenv("MQD_PROXY_CACHE");
  unsetenv("MQD_PROXY_COMPRESS");
  std::printf("soak: %d dumps in %d sessions (after a warm-up session) in %.1f s\n", total,
              sessions, secondsSince(start));
  report("debugger (sessions)", warm, end);
  std::string growths;
  for (int64_t g : workerGrowth) growths += " " + mebibytes(g);
  std::printf("soak: each session's worker, growth after its first tenth:%s\n", growths.c_str());
  CHECK(end.fds == warm.fds);
  CHECK(end.threads == warm.threads);
  checkGrowth("debugger over the sessions", rssGrowth(warm, end), kDumpGrowth);
  for (int64_t g : workerGrowth) checkGrowth("a session's worker", g, kDumpGrowth);
}
