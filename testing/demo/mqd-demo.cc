// mqd-demo: a debugger's view of message queues, through libmqdproxy.so.
//
// Loads the shim into the debugger harness, points it at a synthetic MPI process (rank 2 of a
// 4-rank job, five communicators, a few operations per queue) and prints every communicator
// with its group and its three queues, the way a debugger shows them. MQD_PROXY_SERVER must name
// a server that runs the test DLL (tools/demo.sh starts one).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "DebuggerHarness.h"
#include "SyntheticMpi.h"
#include "mqd_proxy.h"

using namespace mqd::harness;

namespace {

const char* queueName(int opClass) {
  switch (opClass) {
    case mqs_pending_sends: return "Pending sends";
    case mqs_pending_receives: return "Pending receives";
    default: return "Unexpected messages";
  }
}

const char* statusName(int status) {
  switch (status) {
    case mqs_st_pending: return "pending";
    case mqs_st_matched: return "matched";
    case mqs_st_complete: return "complete";
    default: return "?";
  }
}

std::string peer(mqs_tword_t local, mqs_tword_t global) {
  if (local == -1) return "any source";
  return "rank " + std::to_string(local) + " (world " + std::to_string(global) + ")";
}

int fail(MqsLibrary& dll, const char* what, int rc) {
  const char* text = dll.dll_error_string(rc);
  std::fprintf(stderr, "mqd-demo: %s failed (%d): %s\n", what, rc, text ? text : "?");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shim;
  size_t ops = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shim" && i + 1 < argc) {
      shim = argv[++i];
    } else if (a == "--ops" && i + 1 < argc) {
      ops = std::strtoul(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: mqd-demo --shim PATH/libmqdproxy.so [--ops N]\n");
      return 2;
    }
  }
  if (shim.empty()) {
    std::fprintf(stderr, "usage: mqd-demo --shim PATH/libmqdproxy.so [--ops N]\n");
    return 2;
  }

  TargetModel target(8, false);
  layOut(target, standardJob(ops, 4, 2));
  DebuggerHarness debugger(shim, {});
  MqsLibrary& dll = debugger.dll();
  auto* image = debugger.addImage(target, "solver");
  auto* process = debugger.addProcess(image, 2, "solver.2");
  auto* p = reinterpret_cast<mqs_process*>(process);
  auto* i = reinterpret_cast<mqs_image*>(image);

  std::printf("MQD DLL: %s (compatibility %d)\n", dll.version_string(), dll.version_compatibility());
  dll.setup_basic_callbacks(debugger.basicCallbacks());
  int rc;
  if ((rc = dll.setup_image(i, debugger.imageCallbacks())) != mqs_ok) return fail(dll, "setup_image", rc);
  char* message = nullptr;
  if ((rc = dll.image_has_queues(i, &message)) != mqs_ok) return fail(dll, "image_has_queues", rc);
  if ((rc = dll.setup_process(p, debugger.processCallbacks())) != mqs_ok) return fail(dll, "setup_process", rc);
  if ((rc = dll.process_has_queues(p, &message)) != mqs_ok) return fail(dll, "process_has_queues", rc);
  if ((rc = dll.update_communicator_list(p)) != mqs_ok) return fail(dll, "update_communicator_list", rc);

  std::printf("Process solver.2 (MPI_COMM_WORLD rank 2)\n");
  for (rc = dll.setup_communicator_iterator(p); rc == mqs_ok; rc = dll.next_communicator(p)) {
    mqs_communicator c;
    std::memset(&c, 0, sizeof c);
    if ((rc = dll.get_communicator(p, &c)) != mqs_ok) return fail(dll, "get_communicator", rc);
    std::printf("\nCommunicator \"%s\" (id %llu): rank %ld of %ld\n", c.name[0] ? c.name : "(unnamed)",
                static_cast<unsigned long long>(c.unique_id), static_cast<long>(c.local_rank),
                static_cast<long>(c.size));
    if (dll.get_comm_group != nullptr && c.size > 0) {
      std::vector<int> ranks(static_cast<size_t>(c.size));
      if (dll.get_comm_group(p, ranks.data()) == mqs_ok) {
        std::printf("  group (local -> world):");
        for (size_t r = 0; r < ranks.size(); ++r) std::printf(" %zu->%d", r, ranks[r]);
        std::printf("\n");
      }
    }
    for (int q : {mqs_pending_sends, mqs_pending_receives, mqs_unexpected_messages}) {
      if (dll.setup_operation_iterator(p, q) != mqs_ok) continue;
      std::printf("  %s:\n", queueName(q));
      int n = 0;
      mqs_pending_operation op;
      while (std::memset(&op, 0, sizeof op), dll.next_operation(p, &op) == mqs_ok) {
        ++n;
        std::printf("    [%s] %s %s, tag %s, %ld bytes, buffer 0x%llx", statusName(op.status),
                    q == mqs_pending_sends ? "to" : "from",
                    peer(op.desired_local_rank, op.desired_global_rank).c_str(),
                    op.tag_wild ? "any" : std::to_string(op.desired_tag).c_str(),
                    static_cast<long>(op.desired_length),
                    static_cast<unsigned long long>(op.buffer));
        if (op.status != mqs_st_pending || q == mqs_pending_sends) {
          std::printf("; actual %s, tag %ld, %ld bytes",
                      peer(op.actual_local_rank, op.actual_global_rank).c_str(),
                      static_cast<long>(op.actual_tag), static_cast<long>(op.actual_length));
        }
        std::printf("\n");
        for (auto& line : op.extra_text) {
          if (line[0] != '\0') std::printf("        %.64s\n", line);
        }
      }
      if (n == 0) std::printf("    (empty)\n");
    }
  }
  std::printf("\nEvery line above came through libmqdproxy.so and mqd-proxy-server.\n");
  return 0;
}
