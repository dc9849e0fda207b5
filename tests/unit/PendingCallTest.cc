#include <doctest/doctest.h>

#include <ostream>
#include <thread>
#include <vector>

#include "PendingCall.h"
#include "ProxyErrors.h"

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
    call.finish(std::make_unique<capnp::MallocMessageBuilder>());
    CHECK_FALSE(call.post([] {}));  // over: refused
  });
  CHECK(call.serve(5000ms));
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
  auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(slow.serve(150ms));  // each gap is 60 ms: only the final silence times out
  CHECK(std::chrono::steady_clock::now() - start >= 240ms);
  loop.join();
  CHECK(slow.errorCode() == MQD_PROXY_ERR_TIMEOUT);

  PendingCall failed("mqs_test");
  failed.fail(MQD_PROXY_ERR_SESSION_LOST, "gone");
  CHECK_FALSE(failed.serve(1000ms));
  CHECK(failed.errorCode() == MQD_PROXY_ERR_SESSION_LOST);
  CHECK(failed.errorDetail() == "gone");
}
