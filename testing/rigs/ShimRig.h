// ShimRig: a debugger process with libmqdproxy.so loaded into the harness, for integration
// tests: one image, one process and a job over a synthetic target, and the usual sequences.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>

#include "DebuggerHarness.h"
#include "SyntheticMpi.h"
#include "TestPaths.h"

namespace mqd::harness {

// A debugger with the shim (or, given its path, another MQD DLL) loaded, one image, one
// process and a job, over a synthetic target.
struct Rig {
  TargetModel target{8, false};
  std::unique_ptr<DebuggerHarness> d;
  DebuggerHarness::Image* image;
  DebuggerHarness::Process* process;
  DebuggerHarness::Job* job;

  explicit Rig(size_t ops = 3, std::function<void(Job&)> edit = nullptr,
               const std::string& dll = mqd::test::kShim) {
    Job j = standardJob(ops);
    if (edit) edit(j);
    layOut(target, j);
    d = std::make_unique<DebuggerHarness>(dll, DebuggerHarness::Options{});
    image = d->addImage(target, "a.out");
    process = d->addProcess(image, 0, "rank0");
    job = d->addJob({process});
  }
  MqsLibrary& dll() { return d->dll(); }
  mqs_process* p() { return reinterpret_cast<mqs_process*>(process); }
  mqs_image* i() { return reinterpret_cast<mqs_image*>(image); }

  // setup_basic_callbacks, setup_image, image_has_queues, setup_process, process_has_queues.
  void setUp() {
    dll().setup_basic_callbacks(d->basicCallbacks());
    REQUIRE(dll().setup_image(i(), d->imageCallbacks()) == mqs_ok);
    char* m = nullptr;
    REQUIRE(dll().image_has_queues(i(), &m) == mqs_ok);
    REQUIRE(dll().setup_process(p(), d->processCallbacks()) == mqs_ok);
    REQUIRE(dll().process_has_queues(p(), &m) == mqs_ok);
  }

  // The same set-up, for a debugger that expects failures: the first answer other than
  // mqs_ok (mqs_ok when every call succeeded).
  int trySetUp() {
    dll().setup_basic_callbacks(d->basicCallbacks());
    char* m = nullptr;
    int rc = dll().setup_image(i(), d->imageCallbacks());
    if (rc == mqs_ok) rc = dll().image_has_queues(i(), &m);
    if (rc == mqs_ok) rc = dll().setup_process(p(), d->processCallbacks());
    if (rc == mqs_ok) rc = dll().process_has_queues(p(), &m);
    return rc;
  }

  // A refresh; returns the number of operations seen.
  int refresh() {
    int ops = 0;
    REQUIRE(dll().update_communicator_list(p()) == mqs_ok);
    if (dll().setup_communicator_iterator(p()) != mqs_ok) return 0;
    do {
      mqs_communicator c;
      REQUIRE(dll().get_communicator(p(), &c) == mqs_ok);
      for (int q = 0; q < 3; ++q) {
        REQUIRE(dll().setup_operation_iterator(p(), q) == mqs_ok);
        mqs_pending_operation op;
        while (dll().next_operation(p(), &op) == mqs_ok) ++ops;
      }
    } while (dll().next_communicator(p()) == mqs_ok);
    return ops;
  }

  // A refresh, then the debugger's iteration brought to queue `opClass` of communicator
  // `communicator` (counted from 0), as a debugger walks there by hand.
  void enterQueue(int communicator, int opClass) {
    REQUIRE(dll().update_communicator_list(p()) == mqs_ok);
    REQUIRE(dll().setup_communicator_iterator(p()) == mqs_ok);
    for (int c = 0; c < communicator; ++c) REQUIRE(dll().next_communicator(p()) == mqs_ok);
    REQUIRE(dll().setup_operation_iterator(p(), opClass) == mqs_ok);
  }

  std::string errorText(int code) {
    const char* t = dll().dll_error_string(code);
    return t ? t : "(NULL)";
  }
};

}  // namespace mqd::harness
