#include <doctest/doctest.h>

#include <capnp/message.h>

#include <memory>
#include <ostream>
#include <thread>
#include <vector>

#include "EventLoopThread.h"
#include "PendingCall.h"
#include "ProxyErrors.h"
#include "ServerProcess.h"

using mqd::client::EventLoopThread;
using mqd::client::PendingCall;
using namespace std::chrono_literals;

TEST_CASE("PendingCall: callbacks run on the serving thread, in order, before the reply") {
  PendingCall call("mqs_test");
  std::vector<int> order;
  std::thread::id server = std::this_thread::get_id();
  std::vector<std::thread::id> ran;
  std::thread loop([&] {
    for (int i = 0; i < 3; ++i) {
      CHECK(call.post([&order, &ran, i] {
        order.push_back(i);
        ran.push_back(std::this_thread::get_id());
      }));
    }
    auto message = std::make_shared<capnp::MallocMessageBuilder>();
    auto root = message->getRoot<capnp::AnyPointer>().initAsAnyStruct(1, 0);
    call.finish(message, root.asReader());
    CHECK_FALSE(call.post([] {}));  // over: refused
  });
  CHECK(call.serve(mqd::harness::kLoadedMachineSlack));
  loop.join();
  CHECK(order == std::vector<int>{0, 1, 2});
  for (auto id : ran) CHECK((id == server));
}

TEST_CASE("PendingCall: silence past the deadline is a timeout; activity resets it") {
  PendingCall slow("mqs_test");
  std::thread loop([&] {
    for (int i = 0; i < 4; ++i) {
      std::this_thread::sleep_for(60ms);
      slow.post([] {});
    }
  });
  // Each gap is 60 ms, the deadline 3 s (a loaded machine's pauses stay far below it): only the
  // final silence times out, after the four gaps and the whole deadline.
  auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(slow.serve(3000ms));
  CHECK(std::chrono::steady_clock::now() - start >= 3240ms);
  loop.join();
  CHECK(slow.errorCode() == MQD_PROXY_ERR_TIMEOUT);

  PendingCall failed("mqs_test");
  failed.fail(MQD_PROXY_ERR_SESSION_LOST, "gone");
  CHECK_FALSE(failed.serve(1000ms));
  CHECK(failed.errorCode() == MQD_PROXY_ERR_SESSION_LOST);
  CHECK(failed.errorDetail() == "gone");
}

namespace {

// A reply message that notes which thread destroys it.
std::shared_ptr<void> noting(std::thread::id* destroyedOn) {
  return std::shared_ptr<void>(new int(0), [destroyedOn](void* p) {
    *destroyedOn = std::this_thread::get_id();
    delete static_cast<int*>(p);
  });
}

}  // namespace

TEST_CASE("PendingCall: a reply that arrives after the call was given up dies on the loop") {
  PendingCall late("mqs_test");
  CHECK_FALSE(late.serve(10ms));  // abandoned: timed out
  std::thread::id destroyedOn;
  std::thread::id loopId;
  std::thread loop([&] {
    loopId = std::this_thread::get_id();
    late.finish(noting(&destroyedOn), capnp::AnyStruct::Reader());
  });
  loop.join();
  CHECK((destroyedOn == loopId));
  CHECK(late.takeReplyMessage() == nullptr);
}

TEST_CASE("EventLoopThread: what a debugger thread hands back is destroyed on the loop thread") {
  EventLoopThread loop;
  std::thread::id loopId = loop.run([] { return std::this_thread::get_id(); });
  std::thread::id destroyedOn;
  PendingCall call("mqs_test");
  loop.run([&] { call.finish(noting(&destroyedOn), capnp::AnyStruct::Reader()); });
  REQUIRE(call.serve(1000ms));
  loop.destroyOnLoop(call.takeReplyMessage());
  CHECK((destroyedOn == std::thread::id()));  // kept until the loop's next run
  loop.run([] {});
  CHECK((destroyedOn == loopId));

  // Still kept when the loop ends: destroyed there too.
  std::thread::id lastOn;
  {
    EventLoopThread last;
    std::thread::id lastId = last.run([] { return std::this_thread::get_id(); });
    last.destroyOnLoop(noting(&lastOn));
    CHECK((lastOn == std::thread::id()));
    loopId = lastId;
  }
  CHECK((lastOn == loopId));
}
