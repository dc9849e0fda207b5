// Bad input from either side of the proxy gets a clear error, and every process survives.
//
// From the vendor DLL (testing/testdll/hostile.c): strings without their NUL where the server
// must bound what it reads, and fetch_data sizes that are negative or absurd. From the
// debugger: NULL handles and NULL out-pointers, calls out of order, handles it never set up,
// and absurd op classes and collective indices. (Malformed messages from the network are the
// fuzzers' and the fault relay's; see tests/fuzz and FailureTest.cc.)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "DebuggerHarness.h"
#include "ServerProcess.h"
#include "ShimRig.h"
#include "TestPaths.h"
#include "mqd_proxy.h"

using namespace mqd::harness;

namespace {

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

void configure(const std::string& endpoint, const std::string& dll) {
  setenv("MQD_PROXY_SERVER", endpoint.c_str(), 1);
  setenv("MQD_PROXY_DLL", dll.c_str(), 1);
  // No call here may wait out a silence: the timeout is a loaded machine's slack.
  setenv("MQD_PROXY_TIMEOUT", "60", 1);
  setenv("MQD_PROXY_LOG_FILE", (scratch() / "shim.log").c_str(), 1);
}

}  // namespace

TEST_CASE("from the vendor DLL: unterminated strings and absurd fetch sizes are refused") {
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "hostile.sock"),
                                            "--dll", mqd::test::kHostileDll, "--log-file",
                                            scratch() / "hostile.log"});
  configure(server.endpoint(), mqd::test::kHostileDll);
  TargetModel target{8, false};
  DebuggerHarness d(mqd::test::kShim, DebuggerHarness::Options{});
  auto* image = d.addImage(target, "a.out");
  auto* process = d.addProcess(image, 0, "rank0");
  auto* i = reinterpret_cast<mqs_image*>(image);
  auto* p = reinterpret_cast<mqs_process*>(process);
  d.dll().setup_basic_callbacks(d.basicCallbacks());

  // Read up to the server's bound (64 KiB), not on into the DLL's memory.
  std::string version = d.dll().version_string();
  CHECK(version.size() == 64 * 1024);
  CHECK(version.find_first_not_of('v') == std::string::npos);
  std::string text = d.dll().dll_error_string(7777);
  CHECK(text.size() == 64 * 1024);

  REQUIRE(d.dll().setup_image(i, d.imageCallbacks()) == mqs_ok);
  char* message = nullptr;
  // find_symbol with a name that has no NUL in its first 4 KiB: refused before anything is
  // sent; the DLL returns what it was told.
  int rc = d.dll().image_has_queues(i, &message);
  CHECK(rc == MQD_PROXY_ERR_CALLBACK_FAILED);
  CHECK(d.callbackCounts()["find_symbol"] == 0);

  REQUIRE(d.dll().setup_process(p, d.processCallbacks()) == mqs_ok);
  // fetch_data of -1 bytes and of 1 GiB: refused without asking the debugger.
  rc = d.dll().process_has_queues(p, &message);
  CHECK(rc == MQD_PROXY_ERR_FETCH_TOO_LARGE);
  CHECK(std::string(d.dll().dll_error_string(rc)).find("mqd-proxy") == 0);
  CHECK(d.callbackCounts()["fetch_data"] == 0);

  // The session goes on.
  CHECK(d.dll().update_communicator_list(p) == mqs_ok);
  CHECK(d.dll().setup_communicator_iterator(p) == mqs_end_of_list);
  std::string log = fileText(scratch() / "hostile.log");
  CHECK(log.find("not NUL-terminated") != std::string::npos);
  CHECK(kill(server.pid(), 0) == 0);
}

TEST_CASE("a DLL that loops forever is ended by --dll-cpu-limit: WORKER_DIED, SIGPROF") {
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "loop.sock"),
                                            "--dll", mqd::test::kHostileDll, "--dll-cpu-limit",
                                            "1", "--log-file", scratch() / "loop.log"});
  configure(server.endpoint(), mqd::test::kHostileDll);
  TargetModel target{8, false};
  DebuggerHarness d(mqd::test::kShim, DebuggerHarness::Options{});
  auto* image = d.addImage(target, "a.out");
  auto* p = reinterpret_cast<mqs_process*>(d.addProcess(image, 0, "rank0"));
  d.dll().setup_basic_callbacks(d.basicCallbacks());
  REQUIRE(d.dll().setup_image(reinterpret_cast<mqs_image*>(image), d.imageCallbacks()) ==
          mqs_ok);
  REQUIRE(d.dll().setup_process(p, d.processCallbacks()) == mqs_ok);
  int rc = d.dll().next_communicator(p);
  CHECK(rc == MQD_PROXY_ERR_WORKER_DIED);  // after one CPU second, not MQD_PROXY_TIMEOUT's 60 s
  std::string text = d.dll().dll_error_string(rc);
  CHECK(text.find("SIGPROF") != std::string::npos);
  CHECK(text.find("during mqs_next_communicator") != std::string::npos);
  // The session comes back for the calls that do not loop.
  CHECK(d.dll().update_communicator_list(p) == mqs_ok);
}

TEST_CASE("from the debugger: NULLs, strangers, calls out of order, absurd indices") {
  ServerProcess server(mqd::test::kServer, {"--listen", "unix:" + (scratch() / "debugger.sock"),
                                            "--dll", mqd::test::kTestDll3, "--log-file",
                                            scratch() / "debugger.log"});
  configure(server.endpoint(), mqd::test::kTestDll3);
  Rig rig;
  auto& dll = rig.dll();
  int stranger = 0;
  auto* unknownProcess = reinterpret_cast<mqs_process*>(&stranger);

  // Before any set-up: every process call is out of order.
  mqs_pending_operation op;
  CHECK(dll.next_operation(rig.p(), &op) == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(dll.update_communicator_list(rig.p()) == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(std::string(dll.dll_error_string(MQD_PROXY_ERR_BAD_HANDLE))
            .find("never given to mqs_setup_process") != std::string::npos);

  // NULL handles.
  dll.setup_basic_callbacks(rig.d->basicCallbacks());
  CHECK(dll.setup_image(nullptr, rig.d->imageCallbacks()) == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(dll.setup_process(nullptr, rig.d->processCallbacks()) == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(std::string(dll.dll_error_string(MQD_PROXY_ERR_BAD_HANDLE)).find("NULL process") !=
        std::string::npos);

  rig.setUp();
  // NULL out-pointers: the answer is dropped, nothing is written, nothing crashes.
  REQUIRE(dll.update_communicator_list(rig.p()) == mqs_ok);
  REQUIRE(dll.setup_communicator_iterator(rig.p()) == mqs_ok);
  CHECK(dll.get_communicator(rig.p(), nullptr) == mqs_ok);
  CHECK(dll.get_comm_group(rig.p(), nullptr) == mqs_ok);
  CHECK(dll.image_has_queues(rig.i(), nullptr) == mqs_ok);
  CHECK(dll.get_comm_coll_state(rig.p(), 0, nullptr, nullptr) != MQD_PROXY_ERR_PROTOCOL);
  REQUIRE(dll.setup_operation_iterator(rig.p(), 0) == mqs_ok);
  CHECK(dll.next_operation(rig.p(), nullptr) == mqs_ok);

  // Absurd op classes and collective indices: the DLL's own answer, as natively.
  int badClass = dll.setup_operation_iterator(rig.p(), 12345);
  CHECK(badClass != mqs_ok);
  CHECK_FALSE(MQD_PROXY_IS_PROXY_ERROR(badClass));
  int sequence = -5, active = -5;
  int badCollective = dll.get_comm_coll_state(rig.p(), -1, &sequence, &active);
  CHECK_FALSE(MQD_PROXY_IS_PROXY_ERROR(badCollective));
  CHECK(dll.get_comm_coll_state(rig.p(), 1 << 30, &sequence, &active) == badCollective);

  // Handles the debugger never set up, and infos the DLL never gave.
  CHECK(dll.next_communicator(unknownProcess) == MQD_PROXY_ERR_BAD_HANDLE);
  dll.destroy_image_info(reinterpret_cast<mqs_image_info*>(0x7777));
  dll.destroy_process_info(nullptr);
  CHECK(dll.destroy_job_info(reinterpret_cast<mqs_job_info*>(0x8888)) ==
        MQD_PROXY_ERR_BAD_HANDLE);

  // And the session is whole.
  CHECK(rig.refresh() == 5 * 3 * 3);
  CHECK(kill(server.pid(), 0) == 0);
}
