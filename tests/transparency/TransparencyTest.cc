// Transparency: the same scripted conversation runs twice against the same target model, once
// with the test DLL loaded natively and once through libmqdproxy.so -> mqd-proxy-server -> the
// same DLL. Results, output structs (byte for byte, including what the DLL left untouched),
// strings, the debugger's logged effects (put_*_info, dprints, errorstring) and what the DLL
// printed on stderr must be identical.
//
// Matrix: pointer size 4/8 x little/big endian x empty/large queues x DLL level 3/2 x a
// debugger writing 7/5 members of mqs_target_type_sizes; plus error paths and unusual orders.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "DebuggerHarness.h"
#include "ServerProcess.h"
#include "SyntheticMpi.h"
#include "TestPaths.h"
#include "Transcript.h"

using namespace mqd::harness;

namespace {

struct Cell {
  int pointerSize = 8;
  bool bigEndian = false;
  size_t opsPerQueue = 3;
  int level = 3;
  int typeSizeInts = 7;
  std::string name() const {
    return std::to_string(pointerSize * 8) + "-bit " + (bigEndian ? "BE" : "LE") + ", " +
           std::to_string(opsPerQueue) + " ops/queue, level " + std::to_string(level) + ", " +
           std::to_string(typeSizeInts) + "-int type sizes";
  }
};

using Scenario = std::function<void(Transcript&, DebuggerHarness::Image*,
                                    DebuggerHarness::Process*, DebuggerHarness::Job*)>;
using JobEdit = std::function<void(Job&, TargetModel&)>;

const char* dllFor(int level) { return level == 3 ? mqd::test::kTestDll3 : mqd::test::kTestDll2; }

TempDir& scratch() {
  static TempDir dir;
  return dir;
}

ServerProcess& server() {
  static ServerProcess s(mqd::test::kServer,
                         {"--listen", "unix:" + (scratch() / "server.sock"), "--dll",
                          mqd::test::kTestDll3, "--dll", mqd::test::kTestDll2, "--log-level",
                          "warn", "--log-file", scratch() / "server.log"});
  return s;
}

struct Outcome {
  std::vector<std::string> lines;
  std::map<std::string, long> counts;
};

Outcome converse(const std::string& library, const Cell& cell, const Scenario& scenario,
                 const JobEdit& edit) {
  TargetModel target(cell.pointerSize, cell.bigEndian);
  Job job = standardJob(cell.opsPerQueue);
  if (edit) edit(job, target);
  layOut(target, job);
  if (edit) edit(job, target);  // edits that act on the laid-out target (removing symbols)
  Outcome out;
  {
    DebuggerHarness d(library, {cell.typeSizeInts});
    auto* image = d.addImage(target, "a.out");
    auto* process = d.addProcess(image, 2, "rank2");
    auto* jobHandle = d.addJob({process});
    Transcript t(d);
    {
      StderrCapture err;
      scenario(t, image, process, jobHandle);
      t.note("stderr: " + renderBytes(err.text().data(), err.text().size()));
    }
    out.lines = t.lines();
    out.counts = d.callbackCounts();
  }
  return out;
}

void compare(const Cell& cell, const Scenario& scenario, const JobEdit& edit = nullptr) {
  ServerProcess& s = server();
  Outcome native = converse(dllFor(cell.level), cell, scenario, edit);
  setenv("MQD_PROXY_SERVER", s.endpoint().c_str(), 1);
  setenv("MQD_PROXY_DLL", dllFor(cell.level), 1);
  setenv("MQD_PROXY_LOG_FILE", (scratch() / "shim.log").c_str(), 1);
  Outcome proxied = converse(mqd::test::kShim, cell, scenario, edit);

  INFO("cell: ", cell.name());
  REQUIRE(native.lines.size() > 3);
  size_t n = std::min(native.lines.size(), proxied.lines.size());
  for (size_t i = 0; i < n; ++i) {
    if (native.lines[i] != proxied.lines[i]) {
      FAIL_CHECK("first difference at line ", i, ":\n  native:  ", native.lines[i],
                 "\n  proxied: ", proxied.lines[i]);
      break;
    }
  }
  CHECK(native.lines.size() == proxied.lines.size());
  // The proxy really was in the path: target_to_host ran on the server (the shim probes the
  // debugger's once per process), and malloc never reached the debugger.
  if (native.counts["target_to_host"] > 4) {
    CHECK(proxied.counts["target_to_host"] <= 2);
    CHECK(proxied.counts["malloc"] == 0);
  }
}

Capabilities capabilitiesOf(int level) { return Capabilities{level == 3, level == 3}; }

Scenario full(int level) {
  return [level](Transcript& t, DebuggerHarness::Image* i, DebuggerHarness::Process* p,
                 DebuggerHarness::Job* j) { fullConversation(t, i, p, j, capabilitiesOf(level)); };
}

Scenario odd(int level) {
  return [level](Transcript& t, DebuggerHarness::Image* i, DebuggerHarness::Process* p,
                 DebuggerHarness::Job*) { unusualOrders(t, i, p, capabilitiesOf(level)); };
}

}  // namespace

TEST_CASE("transparency: matrix of target models and debuggers") {
  for (int pointerSize : {8, 4}) {
    for (bool bigEndian : {false, true}) {
      for (size_t ops : {size_t{0}, size_t{200}}) {
        for (int level : {3, 2}) {
          for (int ints : {7, 5}) {
            Cell cell{pointerSize, bigEndian, ops, level, ints};
            compare(cell, full(level));
          }
        }
      }
    }
  }
}

TEST_CASE("transparency: unusual call orders") {
  for (int level : {3, 2}) {
    for (bool bigEndian : {false, true}) {
      compare(Cell{8, bigEndian, 4, level, 7}, odd(level));
    }
  }
}

TEST_CASE("transparency: error paths") {
  Cell cell{8, false, 5, 3, 7};
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
