// The shim's session engine class by class (proxy-client/): the call machinery (SessionLink),
// held has-queues answers (HeldAnswers), set-up records' bookkeeping (SetUpRecords) and a
// process's update (CommunicatorUpdates), each driven directly, without MqsClient, against a
// real mqd-proxy-server running the test DLL and a fake debugger (DebuggerHarness over a
// synthetic target). MqsClient's own sequences are the round-trips, transparency and failure
// tests'.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CommunicatorUpdates.h"
#include "DebuggerHarness.h"
#include "Handshake.h"
#include "HeldAnswers.h"
#include "ServerProcess.h"
#include "SessionLink.h"
#include "SetUpRecords.h"
#include "SetUpRequests.h"
#include "SyntheticMpi.h"
#include "TestPaths.h"
#include "mqd_proxy.h"

using namespace mqd::harness;
using mqd::EntryPoint;
using mqd::ProxyError;
namespace client = mqd::client;
namespace wire = mqd::wire;

namespace {

// A fake debugger (the harness's callback tables over a synthetic job of `ops` operations a
// queue) with the shim's DebuggerSide answering for it, one image and one process, and a link
// to a real server running the test DLL.
struct Parts {
  TempDir dir;
  ServerProcess server{mqd::test::kServer,
                       {"--listen", "unix:" + (dir / "s.sock"), "--dll", mqd::test::kTestDll3,
                        "--log-file", dir / "server.log"}};
  TargetModel target{8, false};
  DebuggerHarness d{mqd::test::kTestDll3, DebuggerHarness::Options{}};
  DebuggerHarness::Image* image;
  DebuggerHarness::Process* process;
  client::ClientConfig config;
  client::ClientCounters counters;
  client::DebuggerSide side;
  client::RefreshAhead refreshAhead;
  client::NamedWindows imageSetUpAhead;
  client::HeldAnswers held;
  client::SessionLink link{config, counters};
  uint64_t imageToken = 0;
  uint64_t processToken = 0;

  explicit Parts(size_t ops, wire::CachePolicy cache = wire::CachePolicy::EPOCH)
      : Parts(standardJob(ops), cache) {}
  Parts(const Job& job, wire::CachePolicy cache) {
    layOut(target, job);
    image = d.addImage(target, "a.out");
    process = d.addProcess(image, 0, "rank0");
    config.server = server.endpoint();
    config.dll = mqd::test::kTestDll3;
    config.cache = cache;
    side.setBasicCallbacks(d.basicCallbacks());
    imageToken = side.images.tokenOf(reinterpret_cast<mqs_image*>(image));
    side.setImageCallbacks(imageToken, d.imageCallbacks());
    processToken = side.processes.tokenOf(reinterpret_cast<mqs_process*>(process));
    side.setProcessCallbacks(processToken, d.processCallbacks());
  }
  // The infos the harness holds are the server's tokens, not the loaded DLL's.
  ~Parts() { d.forgetInfos(); }

  client::SessionLink::Opened open() {
    client::SessionLink::Opened opened = link.open(side, nullptr);
    side.setLevel3(opened.dll.compatibility >= MQS_INTERFACE_COMPATIBILITY_MPI2);
    link.roundTrip<wire::Session::SetupBasicCallbacksResults>(
        EntryPoint::setup_basic_callbacks,
        [](wire::Session::Client& s) { return s.setupBasicCallbacksRequest().send(); });
    return opened;
  }

  // mqs_setup_image, mqs_image_has_queues, mqs_setup_process and mqs_process_has_queues,
  // through the set-up requests, each answered mqs_ok.
  void setUp() {
    client::LookupsAhead none;
    auto image = link.finish<wire::Session::SetupImageResults>(
        client::startSetupImage(link, imageToken, none, 0, false), EntryPoint::setup_image);
    REQUIRE(image.dllResult() == mqs_ok);
    auto imageQueues = link.finish<wire::Session::ImageHasQueuesResults>(
        client::startHasQueuesBehind(link, EntryPoint::image_has_queues, imageToken),
        EntryPoint::image_has_queues);
    REQUIRE(imageQueues.get().getRc() == mqs_ok);
    auto setUp = link.finish<wire::Session::SetupProcessResults>(
        client::startSetupProcess(link, processToken, false, nullptr, {}, 0, false,
                                  refreshAhead.costRule(), side.readPrice()),
        EntryPoint::setup_process);
    REQUIRE(setUp.dllResult() == mqs_ok);
    auto queues = link.finish<wire::Session::ProcessHasQueuesResults>(
        client::startHasQueuesBehind(link, EntryPoint::process_has_queues, processToken),
        EntryPoint::process_has_queues);
    REQUIRE(queues.get().getRc() == mqs_ok);
  }

  // mqs_dll_error_string of `code`, forwarded, as its text ("(null)" for NULL).
  std::string errorText(int code) {
    auto reply = link.roundTrip<wire::Session::DllErrorStringResults>(
        EntryPoint::dll_error_string, [code](wire::Session::Client& s) {
          auto r = s.dllErrorStringRequest();
          r.setCode(code);
          return r.send();
        });
    return textOf(reply.get().getText());
  }
  static std::string textOf(wire::OutString::Reader text) {
    return text.isText() ? std::string(text.getText().cStr()) : std::string("(null)");
  }
  // The same from the test DLL loaded natively in the harness.
  std::string nativeErrorText(int code) {
    char* text = d.dll().dll_error_string(code);
    return text != nullptr ? std::string(text) : std::string("(null)");
  }
};

// The operations a recorded walk holds, every queue of every communicator.
size_t operationsIn(client::RecordedWalk& walk) {
  size_t operations = 0;
  wire::RecordedRc::Reader rc;
  REQUIRE(walk.setupCommunicatorIterator(&rc));
  while (rc.getRc() == mqs_ok) {
    wire::RecordedCommunicator::Reader communicator;
    REQUIRE(walk.getCommunicator(&communicator));
    for (int opClass = 0; opClass < 3; ++opClass) {
      wire::RecordedRc::Reader set;
      REQUIRE(walk.setupOperationIterator(opClass, &set));
      if (set.getRc() != mqs_ok) continue;
      wire::RecordedOperation::Reader op;
      while (walk.nextOperation(&op) && op.getRc() == mqs_ok) ++operations;
    }
    REQUIRE(walk.nextCommunicator(&rc));
  }
  return operations;
}

// Every operation `job` puts in a queue.
size_t operationsOf(const Job& job) {
  size_t operations = 0;
  for (const Communicator& c : job.communicators) {
    for (const auto& queue : c.queues) operations += queue.size();
  }
  return operations;
}

// The pid of the server's worker (its only child, once a session is open).
pid_t workerOf(const ServerProcess& server) {
  std::ifstream children("/proc/" + std::to_string(server.pid()) + "/task/" +
                         std::to_string(server.pid()) + "/children");
  pid_t worker = 0;
  children >> worker;
  return worker;
}

}  // namespace

TEST_SUITE("SessionLink") {
  TEST_CASE("not usable before it opens; opened, it describes the server's DLL") {
    Parts parts(1);
    CHECK_FALSE(parts.link.usable());
    client::SessionLink::Opened opened = parts.open();
    CHECK(parts.link.usable());
    CHECK(opened.dll.path == mqd::test::kTestDll3);
    CHECK(opened.dll.versionString == std::string(parts.d.dll().version_string()));
    CHECK(opened.dll.compatibility == parts.d.dll().version_compatibility());
    CHECK(opened.takesInfoTokens);
    CHECK_FALSE(opened.readsOnNode);  // no --node-memory
  }

  TEST_CASE("a round trip serves what is settled first, then reports what it took") {
    Parts parts(1);
    parts.open();
    std::vector<std::string> order;
    parts.link.setRoundTripHooks([&]() { order.push_back("settle"); },
                                 [&](double seconds) {
                                   CHECK(seconds >= 0);
                                   order.push_back("took");
                                 });
    uint64_t before = parts.counters.callsForwarded;
    CHECK(parts.errorText(mqs_no_information) == parts.nativeErrorText(mqs_no_information));
    CHECK(order == std::vector<std::string>{"settle", "took"});
    CHECK(parts.counters.callsForwarded == before + 1);
    // A call started by hand settles only when asked to.
    order.clear();
    parts.link.drain(parts.link.start(EntryPoint::dll_error_string, [](wire::Session::Client& s) {
      return s.dllErrorStringRequest().send();
    }));
    CHECK(order.empty());
    parts.link.settle();
    CHECK(order == std::vector<std::string>{"settle"});
  }

  TEST_CASE("calls started together are finished in order, each with its own reply") {
    Parts parts(1);
    parts.open();
    std::vector<int> codes{mqs_ok, mqs_no_information, mqs_end_of_list, 12345};
    std::vector<std::shared_ptr<mqd::client::PendingCall>> pending;
    for (int code : codes) {
      pending.push_back(
          parts.link.start(EntryPoint::dll_error_string, [code](wire::Session::Client& s) {
            auto r = s.dllErrorStringRequest();
            r.setCode(code);
            return r.send();
          }));
    }
    // The second's reply is drained unread: the third still gets its own.
    parts.link.drain(pending[1]);
    for (size_t i : {0u, 2u, 3u}) {
      auto reply = parts.link.finish<wire::Session::DllErrorStringResults>(
          pending[i], EntryPoint::dll_error_string);
      CHECK(Parts::textOf(reply.get().getText()) == parts.nativeErrorText(codes[i]));
    }
  }

  TEST_CASE("a session's request travels behind the admission hello; a refusal is still read") {
    // A server of the test's own on a TCP port: it reads the hello, waits for the bytes sent
    // behind it before it answers (a client that waited for the answer first would send none
    // until its timeout, and the test fails), then refuses as mqd-proxy-server does: its
    // line, then what the client still sends read and dropped until the client closes.
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listener >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener, 1) == 0);
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    std::atomic<size_t> helloBytes{0};
    std::atomic<ssize_t> behind{0};
    std::thread server([&]() {
      int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) return;
      char buffer[65536];
      auto readable = [fd](int ms) {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, ms) > 0;
      };
      while (helloBytes < mqd::kHelloHeaderBytes && readable(60000)) {
        ssize_t n = ::recv(fd, buffer, mqd::kHelloHeaderBytes - helloBytes, 0);
        if (n <= 0) break;
        helloBytes += static_cast<size_t>(n);
      }
      if (readable(60000)) behind = ::recv(fd, buffer, sizeof buffer, 0);
      std::string line = mqd::refusalLine(MQD_PROXY_ERR_AUTH_FAILED, "the test's refusal");
      ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
      ::shutdown(fd, SHUT_WR);
      while (readable(60000) && ::recv(fd, buffer, sizeof buffer, 0) > 0) {
      }
      ::close(fd);
    });
    client::ClientConfig config;
    config.server = "tcp:127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    config.dll = mqd::test::kTestDll3;
    client::ClientCounters counters;
    client::DebuggerSide side;
    int code = 0;
    std::string why;
    {
      client::SessionLink link{config, counters};
      try {
        link.open(side, nullptr);
      } catch (const ProxyError& e) {
        code = e.code();
        why = e.what();
      }
    }
    server.join();
    ::close(listener);
    CHECK(helloBytes == mqd::kHelloHeaderBytes);  // no token: the header alone
    CHECK(behind > 0);                             // openSession's, before any answer
    CHECK(code == MQD_PROXY_ERR_AUTH_FAILED);
    CHECK(why.find("the test's refusal") != std::string::npos);
  }

  TEST_CASE("a worker that dies fails the call with the server's account of it") {
    Job job = standardJob(1);
    // The test DLL abort()s on it: SIGABRT ends the worker in the sanitized copy too, where
    // AddressSanitizer would turn a SIGSEGV into its own exit (tests/reliability/FailureTest).
    job.communicators[0].queues[0][0].kind = 97;
    Parts parts(job, wire::CachePolicy::EPOCH);
    parts.open();
    parts.setUp();
    pid_t worker = workerOf(parts.server);
    REQUIRE(worker > 0);
    client::CommunicatorUpdates updates(parts.link, parts.side, parts.refreshAhead,
                                        parts.counters, parts.config);
    try {
      updates.update(parts.processToken);  // the server walks the queues: the DLL crashes
      FAIL("the update succeeded");
    } catch (const ProxyError& e) {
      CHECK(e.code() == MQD_PROXY_ERR_WORKER_DIED);
      std::string what = e.what();
      CHECK(what.find("SIGABRT") != std::string::npos);
      CHECK(what.find(std::to_string(worker)) != std::string::npos);
      CHECK(what.find("re-establishes") != std::string::npos);
    }
    CHECK_FALSE(parts.link.usable());
    // Every later call fails at once, the same way, and never hangs.
    CHECK_THROWS_AS(parts.errorText(mqs_ok), ProxyError);
  }
}

TEST_SUITE("HeldAnswers") {
  TEST_CASE("an answer serves its object's own call once, with its message and effects") {
    Parts parts(1);
    mqd::StringPool strings;
    client::HeldAnswers::Answer answer;
    answer.rc = mqs_ok;
    capnp::MallocMessageBuilder builder;
    auto message = builder.initRoot<wire::OutString>();
    message.setText("%s has 100% of its queues");
    answer.message = capnp::clone(message.asReader());
    answer.effects.push_back({mqd::client::SetUpRecall::Effect::Dprints, "held"});
    parts.held.hold(wire::InfoKind::PROCESS, 7, std::move(answer));

    char* text = nullptr;
    // Another kind, another object: not this answer.
    CHECK(parts.held.serve(parts.side, strings, wire::InfoKind::IMAGE, 7, &text) == std::nullopt);
    CHECK(parts.held.serve(parts.side, strings, wire::InfoKind::PROCESS, 8, &text) == std::nullopt);
    CHECK(parts.d.effects().empty());
    if (auto rc = parts.held.serve(parts.side, strings, wire::InfoKind::PROCESS, 7, &text)) {
      CHECK(*rc == mqs_ok);
    } else {
      FAIL("the held answer was not served");
    }
    REQUIRE(text != nullptr);
    CHECK(std::string(text) == "%s has 100%% of its queues");  // made safe for printf
    CHECK(parts.d.effects() == std::vector<std::string>{"dprints: held"});
    // Once only: the next call goes to the DLL.
    CHECK(parts.held.serve(parts.side, strings, wire::InfoKind::PROCESS, 7, &text) == std::nullopt);
  }

  TEST_CASE("a held callback error is what the call answers; dropped answers serve nothing") {
    Parts parts(1);
    mqd::StringPool strings;
    auto untouched = [] {
      capnp::MallocMessageBuilder builder;
      builder.initRoot<wire::OutString>().setUntouched();
      return capnp::clone(builder.getRoot<wire::OutString>().asReader());
    };
    client::HeldAnswers::Answer failed;
    failed.message = untouched();
    failed.errorCode = MQD_PROXY_ERR_CALLBACK_FAILED;
    failed.errorDetail = "fetch_data failed";
    parts.held.hold(wire::InfoKind::IMAGE, 1, std::move(failed));
    char* text = nullptr;
    try {
      parts.held.serve(parts.side, strings, wire::InfoKind::IMAGE, 1, &text);
      FAIL("no error");
    } catch (const ProxyError& e) {
      CHECK(e.code() == MQD_PROXY_ERR_CALLBACK_FAILED);
      CHECK(std::string(e.what()) == "fetch_data failed");
    }
    for (uint64_t token : {2u, 3u}) {
      client::HeldAnswers::Answer a;
      a.message = untouched();
      parts.held.hold(wire::InfoKind::IMAGE, token, std::move(a));
    }
    client::HeldAnswers::Answer p;
    p.message = untouched();
    parts.held.hold(wire::InfoKind::PROCESS, 2, std::move(p));
    parts.held.drop(wire::InfoKind::IMAGE, 2);
    CHECK(parts.held.serve(parts.side, strings, wire::InfoKind::IMAGE, 2, &text) == std::nullopt);
    parts.held.dropAll(wire::InfoKind::IMAGE);
    CHECK(parts.held.serve(parts.side, strings, wire::InfoKind::IMAGE, 3, &text) == std::nullopt);
    // The other kind's answers stand.
    CHECK(parts.held.serve(parts.side, strings, wire::InfoKind::PROCESS, 2, &text) != std::nullopt);
    CHECK(text == nullptr);  // an untouched message leaves the debugger's pointer alone
  }
}

TEST_SUITE("SetUpRecords") {
  TEST_CASE("records are kept under the epoch policy only, for a DLL with a build id, with a "
            "server that takes info tokens") {
    Parts parts(1);
    client::SetUpRecords records(parts.link, parts.side, parts.counters, parts.held,
                                 parts.refreshAhead, parts.imageSetUpAhead);
    client::DllInfo dll;
    dll.buildId = "0123abcd";
    client::ClientConfig config;  // no state directory: kept in memory
    struct Case {
      wire::CachePolicy cache;
      const char* buildId;
      bool takesInfoTokens;
      bool active;
    };
    for (Case c : {Case{wire::CachePolicy::EPOCH, "0123abcd", true, true},
                   Case{wire::CachePolicy::CALL, "0123abcd", true, false},
                   Case{wire::CachePolicy::OFF, "0123abcd", true, false},
                   Case{wire::CachePolicy::EPOCH, "", true, false},
                   Case{wire::CachePolicy::EPOCH, "0123abcd", false, false}}) {
      config.cache = c.cache;
      dll.buildId = c.buildId;
      records.open(config, dll, c.takesInfoTokens);
      CHECK(records.active() == c.active);
      // What the set-ups deliver is logged while, and only while, records are kept.
      CHECK((parts.side.effectLog != nullptr) == c.active);
    }
  }

  TEST_CASE("only an object's first set-up in the client takes part, per kind") {
    Parts parts(1);
    client::SetUpRecords records(parts.link, parts.side, parts.counters, parts.held,
                                 parts.refreshAhead, parts.imageSetUpAhead);
    CHECK(records.firstSetUp(wire::InfoKind::IMAGE, 5));
    CHECK_FALSE(records.firstSetUp(wire::InfoKind::IMAGE, 5));
    CHECK(records.firstSetUp(wire::InfoKind::PROCESS, 5));
    CHECK_FALSE(records.firstSetUp(wire::InfoKind::PROCESS, 5));
    CHECK(records.firstSetUp(wire::InfoKind::IMAGE, 6));
    // Nothing is contradicted: calls on either object go on.
    CHECK_NOTHROW(records.refuseContradicted(wire::InfoKind::PROCESS, 5,
                                             EntryPoint::update_communicator_list));
  }

  TEST_CASE("a set-up is marked where it starts: the callbacks answered and effects delivered") {
    Parts parts(1);
    client::SetUpRecords records(parts.link, parts.side, parts.counters, parts.held,
                                 parts.refreshAhead, parts.imageSetUpAhead);
    client::DllInfo dll;
    dll.buildId = "0123abcd";
    records.open(parts.config, dll, true);
    parts.open();
    client::SetUpRecords::Mark start = records.mark();
    parts.setUp();  // the DLL asks the debugger for symbols, types and memory
    client::SetUpRecords::Mark after = records.mark();
    CHECK(after.answered.callbacks > start.answered.callbacks);
    CHECK(after.effects > start.effects);  // put_image_info and put_process_info at least
    records.callStarts();
    CHECK(records.mark().effects == 0);
  }
}

TEST_SUITE("CommunicatorUpdates") {
  TEST_CASE("an update under the epoch policy brings the whole walk, as the target has it") {
    Parts parts(2);
    parts.open();
    parts.setUp();
    client::CommunicatorUpdates updates(parts.link, parts.side, parts.refreshAhead,
                                        parts.counters, parts.config);
    uint64_t before = parts.counters.callsForwarded;
    client::CommunicatorUpdates::Outcome first = updates.update(parts.processToken);
    CHECK(first.rc == mqs_ok);
    CHECK_FALSE(first.callbackError);
    CHECK(parts.counters.callsForwarded == before + 1);  // one round trip for the whole walk
    REQUIRE(first.walk != nullptr);
    CHECK(operationsIn(*first.walk) == operationsOf(standardJob(2)));

    // The program ran: another job in fresh memory. The next update reads what the last one
    // named (its next epoch) ahead, and the walk is the new job's.
    Job next = standardJob(4);
    next.sequence = 2;
    replaceCommunicators(parts.target, next);
    long fetchesBefore = parts.d.callbackCounts()["fetch_data"];
    client::CommunicatorUpdates::Outcome second = updates.update(parts.processToken);
    CHECK(second.rc == mqs_ok);
    REQUIRE(second.walk != nullptr);
    CHECK(operationsIn(*second.walk) == operationsOf(next));
    CHECK(parts.d.callbackCounts()["fetch_data"] > fetchesBefore);
  }

  TEST_CASE("under the call policy an update brings no walk: the calls are forwarded") {
    Parts parts(2, wire::CachePolicy::CALL);
    parts.open();
    parts.setUp();
    client::CommunicatorUpdates updates(parts.link, parts.side, parts.refreshAhead,
                                        parts.counters, parts.config);
    client::CommunicatorUpdates::Outcome outcome = updates.update(parts.processToken);
    CHECK(outcome.rc == mqs_ok);
    CHECK(outcome.walk == nullptr);
  }
}
