// mqd-bench-dump: times debugger dumps of a synthetic MPI process, for bench/bench.py.
//
//   mqd-bench-dump --dll PATH --ops N [--dumps K]
//
// Loads PATH (the test vendor DLL natively, or libmqdproxy.so configured by the MQD_PROXY_*
// environment) into the debugger harness, over a synthetic rank with five communicators and N
// operations in each of their three queues (15 N in all). It sets up the DLL, then dumps K
// times: the first dump includes image and process set-up (as a debugger's first look at a
// process does), later ones are repeat refreshes of the stopped-again process. After each dump
// it prints a line {"dump": I, "operations": N, "seconds": S} and waits for a line on stdin
// (so that the driver can read the server's counters in between). Exits 1 if a dump fails or
// sees a different number of operations than the target holds.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "DebuggerHarness.h"
#include "SyntheticMpi.h"

using namespace mqd::harness;

namespace {

// One refresh as a debugger does it; returns the operations seen, or -1 on failure.
long refresh(MqsLibrary& dll, mqs_process* p) {
  if (dll.update_communicator_list(p) != mqs_ok) return -1;
  long ops = 0;
  for (int rc = dll.setup_communicator_iterator(p); rc == mqs_ok; rc = dll.next_communicator(p)) {
    mqs_communicator c;
    std::memset(&c, 0, sizeof c);
    if (dll.get_communicator(p, &c) != mqs_ok) return -1;
    if (dll.get_comm_group != nullptr && c.size > 0) {
      std::vector<int> ranks(static_cast<size_t>(c.size));
      dll.get_comm_group(p, ranks.data());
    }
    for (int q : {mqs_pending_sends, mqs_pending_receives, mqs_unexpected_messages}) {
      if (dll.setup_operation_iterator(p, q) != mqs_ok) continue;
      mqs_pending_operation op;
      while (std::memset(&op, 0, sizeof op), dll.next_operation(p, &op) == mqs_ok) ++ops;
    }
  }
  return ops;
}

int usage() {
  std::fprintf(stderr, "usage: mqd-bench-dump --dll PATH --ops N [--dumps K]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dllPath;
  size_t opsPerQueue = 0;
  int dumps = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dll" && i + 1 < argc) {
      dllPath = argv[++i];
    } else if (a == "--ops" && i + 1 < argc) {
      opsPerQueue = std::strtoul(argv[++i], nullptr, 10);
    } else if (a == "--dumps" && i + 1 < argc) {
      dumps = std::atoi(argv[++i]);
    } else {
      return usage();
    }
  }
  if (dllPath.empty() || dumps < 1) return usage();

  TargetModel target(8, false);
  Job job = standardJob(opsPerQueue, 4, 2);
  layOut(target, job);
  long expected = 0;
  for (const auto& c : job.communicators) {
    for (const auto& q : c.queues) expected += static_cast<long>(q.size());
  }
  DebuggerHarness debugger(dllPath, {});
  MqsLibrary& dll = debugger.dll();
  auto* image = debugger.addImage(target, "solver");
  auto* process = debugger.addProcess(image, 2, "solver.2");
  auto* p = reinterpret_cast<mqs_process*>(process);
  auto* i = reinterpret_cast<mqs_image*>(image);
  // Loading: what a debugger does when it loads the DLL, before it looks at any process.
  if (dll.version_string() == nullptr) return 1;
  dll.version_compatibility();
  dll.setup_basic_callbacks(debugger.basicCallbacks());

  for (int d = 0; d < dumps; ++d) {
    auto start = std::chrono::steady_clock::now();
    if (d == 0) {
      char* message = nullptr;
      if (dll.setup_image(i, debugger.imageCallbacks()) != mqs_ok ||
          dll.image_has_queues(i, &message) != mqs_ok ||
          dll.setup_process(p, debugger.processCallbacks()) != mqs_ok ||
          dll.process_has_queues(p, &message) != mqs_ok) {
        std::fprintf(stderr, "mqd-bench-dump: set-up failed\n");
        return 1;
      }
    }
    long ops = refresh(dll, p);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (ops != expected) {
      std::fprintf(stderr, "mqd-bench-dump: dump %d saw %ld operations, the target has %ld\n", d,
                   ops, expected);
      return 1;
    }
    std::printf("{\"dump\": %d, \"operations\": %ld, \"seconds\": %.6f}\n", d, ops, seconds);
    std::fflush(stdout);
    char line[16];
    if (std::fgets(line, sizeof line, stdin) == nullptr) break;
  }
  return 0;
}
