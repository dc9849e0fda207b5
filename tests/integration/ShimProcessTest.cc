// libmqdproxy.so inside a debugger process: signal handling untouched, callbacks on the calling
// thread, consecutive calls from different threads, clean unload, and every failure of the
// proxy itself turned into a documented code with a sentence that says what and where.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "DebuggerHarness.h"
#include "ShimRig.h"
#include "ServerProcess.h"
#include "SyntheticMpi.h"
#include "TestPaths.h"
#include "Transcript.h"
#include "mqd_proxy.h"

using namespace mqd::harness;
using namespace std::chrono_literals;

namespace {

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

ServerProcess& sharedServer() {
  static ServerProcess s(mqd::test::kServer,
                         {"--listen", "unix:" + (scratch() / "shared.sock"), "--dll",
                          mqd::test::kTestDll3, "--dll", mqd::test::kTestDll2, "--log-file",
                          scratch() / "shared.log"});
  return s;
}

void useServer(const std::string& endpoint, const std::string& dll) {
  setenv("MQD_PROXY_SERVER", endpoint.c_str(), 1);
  setenv("MQD_PROXY_DLL", dll.c_str(), 1);
  setenv("MQD_PROXY_LOG_FILE", (scratch() / "shim.log").c_str(), 1);
  setenv("MQD_PROXY_LOG", "info", 1);  // a lost connection (killWorkerBetweenCalls)
  unsetenv("MQD_PROXY_TIMEOUT");
}

struct SignalState {
  struct sigaction actions[NSIG];
  sigset_t mask;
  static SignalState now() {
    SignalState s;
    std::memset(&s, 0, sizeof s);
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, nullptr, &s.actions[sig]);
    pthread_sigmask(SIG_SETMASK, nullptr, &s.mask);
    return s;
  }
  // Which signals differ from `other` (handler, flags or mask); empty when identical.
  std::string differences(const SignalState& other) const {
    std::string out;
    for (int sig = 1; sig < NSIG; ++sig) {
      const auto& a = actions[sig];
      const auto& b = other.actions[sig];
      // glibc copies only the kernel's part of sa_mask: compare it signal by signal.
      bool same = a.sa_handler == b.sa_handler && a.sa_flags == b.sa_flags;
      for (int m = 1; m < NSIG; ++m) {
        same = same && sigismember(&a.sa_mask, m) == sigismember(&b.sa_mask, m);
      }
      if (!same) out += "disposition of signal " + std::to_string(sig) + "; ";
      if (sigismember(&mask, sig) != sigismember(&other.mask, sig)) {
        out += "mask bit of signal " + std::to_string(sig) + "; ";
      }
    }
    return out;
  }
};

void customHandler(int) {}

}  // namespace

TEST_CASE("signals: loading, using and unloading the shim changes no disposition or mask") {
  // A debugger's own handlers, including for the signals kj would like to own.
  struct sigaction mine;
  std::memset(&mine, 0, sizeof mine);
  mine.sa_handler = customHandler;
  sigaction(SIGUSR1, &mine, nullptr);
  signal(SIGPIPE, SIG_DFL);
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);

  SignalState before = SignalState::now();
  useServer(sharedServer().endpoint(), mqd::test::kTestDll3);
  {
    Rig rig;
    CHECK(before.differences(SignalState::now()).empty());
    rig.setUp();
    CHECK(rig.refresh() > 0);
    CHECK(before.differences(SignalState::now()) == "");
  }
  CHECK(before.differences(SignalState::now()) == "");
  pthread_sigmask(SIG_UNBLOCK, &blocked, nullptr);
}

TEST_CASE("threads: callbacks run on the calling thread; consecutive calls from any thread") {
  useServer(sharedServer().endpoint(), mqd::test::kTestDll3);
  Rig rig(5);
  std::thread::id a, b;
  std::thread first([&] {
    a = std::this_thread::get_id();
    rig.setUp();
  });
  first.join();
  CHECK(rig.d->callbackThreads() == std::set<std::thread::id>{a});
  rig.d->callbackThreads().clear();
  int ops = 0;
  std::thread second([&] {
    b = std::this_thread::get_id();
    ops = rig.refresh();
  });
  second.join();
  CHECK(ops == 5 * 5 * 3);
  CHECK(rig.d->callbackThreads() == std::set<std::thread::id>{b});
  rig.d->callbackThreads().clear();
  CHECK(rig.refresh() == ops);  // and the main thread
  CHECK(rig.d->callbackThreads() == std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("unload: dlclose really unloads the shim, and it loads again cleanly") {
  useServer(sharedServer().endpoint(), mqd::test::kTestDll3);
  for (int round = 0; round < 3; ++round) {
    // Compressed after the first round: what compresses (common/Bulk) must not pin the shim.
    setenv("MQD_PROXY_COMPRESS", round == 0 ? "off" : "on", 1);
    {
      Rig rig;
      rig.setUp();
      CHECK(rig.refresh() == 5 * 3 * 3);
    }
    void* still = dlopen(mqd::test::kShim, RTLD_NOW | RTLD_NOLOAD);
    CHECK(still == nullptr);
    if (still) dlclose(still);
  }
  unsetenv("MQD_PROXY_COMPRESS");
}

TEST_CASE("unreachable server: a documented code and a sentence naming the endpoint") {
  useServer("unix:" + (scratch() / "nobody-listens.sock"), mqd::test::kTestDll3);
  setenv("MQD_PROXY_TIMEOUT", "600", 1);  // answered at once, not after a timeout
  Rig rig;
  auto start = std::chrono::steady_clock::now();
  std::string version = rig.dll().version_string();
  CHECK(version.find("cannot reach the mqd-proxy server") != std::string::npos);
  CHECK(rig.dll().version_compatibility() == 2);
  rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
  int rc = rig.dll().setup_image(rig.i(), rig.d->imageCallbacks());
  CHECK(rc == MQD_PROXY_ERR_UNREACHABLE);
  std::string text = rig.errorText(rc);
  CHECK(text.find("nobody-listens.sock") != std::string::npos);
  CHECK(text.find("MQD_PROXY_SERVER") != std::string::npos);
  CHECK(text.find("mqs_setup_image") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < kLoadedMachineSlack);
  unsetenv("MQD_PROXY_TIMEOUT");
  CHECK(rig.dll().dll_taddr_width() == static_cast<int>(sizeof(mqs_taddr_t)));
}

TEST_CASE("allow-list: a DLL the server was not given is refused with a clear reason") {
  useServer(sharedServer().endpoint(), "/usr/lib/x86_64-linux-gnu/libc.so.6");
  Rig rig;
  rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
  int rc = rig.dll().setup_image(rig.i(), rig.d->imageCallbacks());
  CHECK(rc == MQD_PROXY_ERR_SESSION_REFUSED);
  std::string text = rig.errorText(rc);
  CHECK(text.find("not on this server's allow-list") != std::string::npos);
  CHECK(text.find("libc.so.6") != std::string::npos);
}

TEST_CASE("optional entry points the vendor DLL lacks: documented answers") {
  useServer(sharedServer().endpoint(), "libmqd_testdll_l2.so");
  Rig rig;
  CHECK(rig.dll().version_compatibility() == 2);
  CHECK(rig.dll().dll_taddr_width() == static_cast<int>(sizeof(mqs_taddr_t)));
  rig.setUp();
  rig.dll().update_communicator_list(rig.p());
  rig.dll().setup_communicator_iterator(rig.p());
  int ranks[8] = {-9, -9, -9, -9, -9, -9, -9, -9};
  int rc = rig.dll().get_comm_group(rig.p(), ranks);
  CHECK(rc == MQD_PROXY_ERR_NO_ENTRY_POINT);
  CHECK(ranks[0] == -9);
  std::string text = rig.errorText(rc);
  CHECK(text.find("mqs_get_comm_group is not provided by vendor DLL") != std::string::npos);
  CHECK(text.find("libmqd_testdll_l2.so") != std::string::npos);
  int sequence = -9, active = -9;
  CHECK(rig.dll().get_comm_coll_state(rig.p(), 0, &sequence, &active) == mqs_no_information);
  CHECK(sequence == -9);
  CHECK(active == -9);
  CHECK(rig.dll().setup_job(reinterpret_cast<mqs_job*>(rig.job), rig.d->jobCallbacks()) ==
        MQD_PROXY_ERR_NO_ENTRY_POINT);
  CHECK(rig.dll().set_process_identity(rig.p(), 3) == MQD_PROXY_ERR_NO_ENTRY_POINT);
  CHECK(rig.dll().setup_new_process_iterator(rig.p()) == MQD_PROXY_ERR_NO_ENTRY_POINT);
  mqs_process_location loc;
  CHECK(rig.dll().next_new_process(rig.p(), &loc) == MQD_PROXY_ERR_NO_ENTRY_POINT);
  CHECK(rig.dll().destroy_job_info(nullptr) == MQD_PROXY_ERR_NO_ENTRY_POINT);
  CHECK(rig.refresh() == 5 * 3 * 3);  // everything else still works
}

TEST_CASE("bad handles from the debugger: a clear error, and the session goes on") {
  useServer(sharedServer().endpoint(), mqd::test::kTestDll3);
  Rig rig;
  rig.setUp();
  int stranger;
  auto* unknown = reinterpret_cast<mqs_process*>(&stranger);
  mqs_communicator c;
  int rc = rig.dll().get_communicator(unknown, &c);
  CHECK(rc == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(rig.errorText(rc).find("never given to mqs_setup_process") != std::string::npos);
  CHECK(rig.dll().image_has_queues(reinterpret_cast<mqs_image*>(&stranger), nullptr) ==
        MQD_PROXY_ERR_BAD_HANDLE);
  rig.dll().destroy_process_info(reinterpret_cast<mqs_process_info*>(0x5000));  // no crash
  CHECK(rig.refresh() == 5 * 3 * 3);
}

TEST_CASE("reentrancy: an mqs_* call from inside a debugger callback is refused") {
  useServer(sharedServer().endpoint(), mqd::test::kTestDll3);
  Rig rig;
  static int reentrantResult;
  static MqsLibrary* library;
  static mqs_process* process;
  library = &rig.dll();
  process = rig.p();
  reentrantResult = 0;
  mqs_process_callbacks table = *rig.d->processCallbacks();
  table.mqs_get_global_rank_fp = [](mqs_process*) {
    reentrantResult = library->setup_communicator_iterator(process);
    return 0;
  };
  rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
  REQUIRE(rig.dll().setup_image(rig.i(), rig.d->imageCallbacks()) == mqs_ok);
  char* m;
  REQUIRE(rig.dll().image_has_queues(rig.i(), &m) == mqs_ok);
  CHECK(rig.dll().setup_process(rig.p(), &table) == mqs_ok);
  CHECK(reentrantResult == MQD_PROXY_ERR_REENTRANT);
  CHECK(rig.errorText(reentrantResult).find("inside a debugger callback") != std::string::npos);
}

TEST_CASE("strings returned to the debugger stay valid") {
  useServer(sharedServer().endpoint(), mqd::test::kTestDll3);
  Rig rig(3, [](Job& j) { j.ignoreQueues = true; });
  const char* version = rig.dll().version_string();
  std::string versionCopy = version;
  rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
  rig.dll().setup_image(rig.i(), rig.d->imageCallbacks());
  char* message = nullptr;
  int rc = rig.dll().image_has_queues(rig.i(), &message);
  REQUIRE(message != nullptr);
  std::string messageCopy = message;
  const char* error = rig.dll().dll_error_string(rc);
  std::string errorCopy = error;
  for (int i = 0; i < 50; ++i) {
    rig.dll().version_string();
    rig.dll().dll_error_string(100 + i % 10);
    char* other = nullptr;
    rig.dll().image_has_queues(rig.i(), &other);
  }
  CHECK(versionCopy == version);
  CHECK(messageCopy == message);
  CHECK(errorCopy == error);
}

TEST_CASE("session lost between calls: the next call re-establishes it and answers") {
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "lost.sock"),
                                            "--dll", mqd::test::kTestDll3, "--log-file",
                                            scratch() / "lost.log"});
  useServer(server.endpoint(), mqd::test::kTestDll3);
  Rig rig;
  rig.setUp();
  pid_t killed = killWorkerBetweenCalls(server.pid(), scratch() / "shim.log");
  // No call was waiting: nothing to report. The set-up is replayed on a new worker, and every
  // call answers (one that waited out MQD_PROXY_TIMEOUT would fail, not answer).
  CHECK(rig.refresh() == 5 * 3 * 3);
  std::vector<pid_t> now = childrenOnceThere(server.pid(), 1);
  REQUIRE(now.size() == 1);
  CHECK(now[0] != killed);
}

TEST_CASE("session lost in an iteration served from the walk: the next call goes on where "
          "the debugger stood") {
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "walk.sock"),
                                            "--dll", mqd::test::kTestDll3, "--log-file",
                                            scratch() / "walk.log"});
  useServer(server.endpoint(), mqd::test::kTestDll3);
  setenv("MQD_PROXY_CACHE", "epoch", 1);  // the calls below are answered from the walk
  Rig rig;
  rig.setUp();
  // Third communicator, receive queue, its first request: every call from the walk.
  rig.enterQueue(2, 1);
  mqs_pending_operation first;
  REQUIRE(rig.dll().next_operation(rig.p(), &first) == mqs_ok);
  killWorkerBetweenCalls(server.pid(), scratch() / "shim.log");
  // A new worker's DLL is brought to where the debugger stands, whoever answered its calls.
  mqs_pending_operation op;
  REQUIRE(rig.dll().next_operation(rig.p(), &op) == mqs_ok);
  const Job job = standardJob(3);
  const auto& queue = job.communicators[2].queues[1];
  CHECK(std::string(first.extra_text[0]) == queue[0].note);
  CHECK(std::string(op.extra_text[0]) == queue[1].note);
  mqs_communicator communicator;
  REQUIRE(rig.dll().get_communicator(rig.p(), &communicator) == mqs_ok);
  CHECK(static_cast<int64_t>(communicator.unique_id) == job.communicators[2].id);
  unsetenv("MQD_PROXY_CACHE");
}

TEST_CASE("a stopped server: the call times out after MQD_PROXY_TIMEOUT instead of hanging") {
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "stop.sock"),
                                            "--dll", mqd::test::kTestDll3, "--log-file",
                                            scratch() / "stop.log"});
  useServer(server.endpoint(), mqd::test::kTestDll3);
  setenv("MQD_PROXY_TIMEOUT", "1", 1);
  Rig rig;
  rig.setUp();
  std::vector<pid_t> workers = childrenOf(server.pid());
  REQUIRE(workers.size() == 1);
  kill(workers[0], SIGSTOP);
  auto start = std::chrono::steady_clock::now();
  int rc = rig.dll().update_communicator_list(rig.p());
  auto took = std::chrono::steady_clock::now() - start;
  kill(workers[0], SIGCONT);
  CHECK(rc == MQD_PROXY_ERR_TIMEOUT);
  CHECK(took >= 900ms);
  CHECK(took < kLoadedMachineSlack);  // not hanging, with a loaded machine's slack
  CHECK(rig.errorText(rc).find("no answer from the server for 1000 ms") != std::string::npos);
  // The connection was abandoned; the next call gets a new worker.
  CHECK(rig.refresh() == 5 * 3 * 3);
  unsetenv("MQD_PROXY_TIMEOUT");
}

TEST_CASE("transports: the same conversation over TCP loopback") {
  ServerProcess server(mqd::test::kServer, {"--listen", "tcp:127.0.0.1:0", "--dll",
                                            mqd::test::kTestDll3, "--log-file",
                                            scratch() / "tcp.log"});
  CHECK(server.endpoint().rfind("tcp:127.0.0.1:", 0) == 0);
  CHECK(server.endpoint() != "tcp:127.0.0.1:0");
  useServer(server.endpoint(), "");  // the server's default DLL
  Rig rig;
  CHECK(std::string(rig.dll().version_string()) == "mqd-proxy test DLL 1.0 (level 3)");
  rig.setUp();
  CHECK(rig.refresh() == 5 * 3 * 3);
}
