// fuzz_server_connection: the bytes a client sends to a server worker, from the first byte to
// end of stream, fed to the worker's real per-connection code (serveConnection: Cap'n Proto RPC
// with the ProxyService bootstrap, sessions, the test vendor DLL on the allow-list).
//
// Each input is one connection, in this process, over an in-memory pipe: the "client" end
// writes the input then shuts down its write side, and discards whatever the server sends. The
// event loop runs until serveConnection's promise resolves (the worker would exit) or for at
// most kMaxTurns turns; then the connection is torn down as the worker tears it down.
//
// Besides crashes and sanitizer reports, this target fails (abort) when
//   - the server neither finishes nor has anything left to do (a worker that would never
//     exit: the client's end of stream is always on its way), or
//   - an input leaves a file descriptor or a thread behind, or
//   - MQD_FUZZ_REQUIRE_DLL_CALLS is set and the input ran no vendor DLL call: run-fuzz.sh sets
//     it for the recorded sessions (session-*), which are stale once the protocol version
//     changes (the server refuses them, and the fuzzing would never get past openSession).
#include <dirent.h>
#include <dlfcn.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "DllAllowList.h"
#include "Log.h"
#include "SeedSessions.h"
#include "Worker.h"

#ifndef MQD_FUZZ_TESTDLL
#error "MQD_FUZZ_TESTDLL must name the test vendor DLL (tests/fuzz/CMakeLists.txt)"
#endif

namespace {

using mqd::server::DllAllowList;
using mqd::server::WorkerConfig;

// An upper bound on the event-loop turns of one connection. The longest seed (a whole session
// with caching off) takes under 20,000; an input that needs more is cut off there, as a hang
// would be by the fuzzer's -timeout.
constexpr unsigned kMaxTurns = 1u << 20;

const WorkerConfig* config = nullptr;

// Entries in a /proc/self directory (fds: `fd`; threads: `task`).
size_t countEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir)) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

// Reads and drops everything `stream` delivers, until end of stream.
kj::Promise<void> discardAll(kj::AsyncIoStream& stream, kj::byte* buffer, size_t size) {
  return stream.tryRead(buffer, 1, size).then([&stream, buffer, size](size_t n) -> kj::Promise<void> {
    if (n == 0) return kj::READY_NOW;
    return discardAll(stream, buffer, size);
  });
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_server_connection: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The worker's own log is off unless asked for (MQD_FUZZ_LOG=debug): refused sessions and
  // protocol errors are the normal outcome of most inputs.
  const char* level = std::getenv("MQD_FUZZ_LOG");
  mqd::logSetLevel(level != nullptr ? mqd::parseLogLevel(level) : mqd::LogLevel::Error);
  static DllAllowList dlls({MQD_FUZZ_TESTDLL});
  // Each session still dlopen()s and dlclose()s the DLL (VendorDll), but this reference keeps
  // it mapped: loading a library costs more than most sessions, and the allocations the
  // dynamic loader keeps would make every input look like a leak to libFuzzer (which then
  // re-runs it under LeakSanitizer). The test DLL keeps no session state in globals but the
  // basic-callback table, which every session sets first (the server refuses calls before).
  if (::dlopen(MQD_FUZZ_TESTDLL, RTLD_NOW | RTLD_LOCAL) == nullptr) {
    fail(::dlerror());
  }
  // As the server the seeds were recorded from (SeedSessions.h): no learned state, which also
  // keeps inputs independent of each other.
  static WorkerConfig c{&dlls,
                        /*stateDir=*/"",
                        mqd::fuzz::kSeedBlockSize,
                        /*board=*/nullptr,  // none
                        /*slot=*/nullptr,
                        /*admission=*/nullptr,  // serveConnection starts after admission
                        /*traversalLimitWords=*/uint64_t(128) << 17,  // --max-message-mib 128
                        /*idleTimeoutS=*/0,
                        /*dllCpuLimitS=*/0,  // the fuzzer's own -timeout
                        /*disconnectGraceMs=*/0,
                        /*nodeMemory=*/false,
                        /*readAround=*/uint64_t{0},  // pinned: an input's path never the clock's
                        /*lookupDiscovery=*/false};  // as the seeds' server (SeedSessions.h)
  config = &c;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t fdsBefore = countEntries("/proc/self/fd");
  const size_t threadsBefore = countEntries("/proc/self/task");
  static const bool requireDllCalls = std::getenv("MQD_FUZZ_REQUIRE_DLL_CALLS") != nullptr;
  uint64_t dllCalls = 0;
  {
    kj::EventLoop loop;
    kj::WaitScope waitScope(loop);
    auto pipe = kj::newTwoWayPipe();
    kj::AsyncIoStream& client = *pipe.ends[0];

    bool done = false;
    kj::TimerImpl timer(kj::origin<kj::TimePoint>());  // never advanced: nothing waits on it
    mqd::server::Metrics metrics(config->slot);         // no board: counted where nobody reads
    auto server = mqd::server::serveConnection(*pipe.ends[1], *config, /*output=*/nullptr, timer,
                                               metrics)
                      .then([&done]() { done = true; },
                            [&done](kj::Exception&&) { done = true; })
                      .eagerlyEvaluate(nullptr);
    auto send = client.write(data, size)
                    .then([&client]() { client.shutdownWrite(); })
                    .eagerlyEvaluate([](kj::Exception&&) {});
    kj::byte buffer[8192];
    auto receive = discardAll(client, buffer, sizeof buffer).eagerlyEvaluate([](kj::Exception&&) {});

    unsigned turns = 0;
    while (!done && turns < kMaxTurns && loop.isRunnable()) {
      loop.run(1024);
      turns += 1024;
    }
    if (!done && !loop.isRunnable()) {
      fail("the server is idle but not finished (it neither reads the client's end of stream "
           "nor ends the connection): a worker would never exit");
    }
    dllCalls = metrics.get(mqd::server::Count::DllCalls);
    // Torn down here, last declared first: the client's promises, the connection (RPC system,
    // sessions, the DLL), the pipe, the event loop.
  }
  if (requireDllCalls && dllCalls == 0) {
    fail("this recorded session ran no DLL call: the server refused it (a seed recorded for "
         "another protocol version? regenerate the seeds: tests/fuzz/README.md)");
  }
  if (countEntries("/proc/self/fd") != fdsBefore) fail("an input leaked a file descriptor");
  if (countEntries("/proc/self/task") != threadsBefore) fail("an input leaked a thread");
  return 0;
}
