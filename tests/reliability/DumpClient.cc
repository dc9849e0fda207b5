// mqd-dump-client: a debugger process that dumps message queues through libmqdproxy.so over
// and over, and checks every answer against a native load of the same test DLL.
//
//   mqd-dump-client [--ops N] [--dumps D | --seconds S] [--crash-at K] [--allow-errors]
//                   [--quiet]
//
// --crash-at K makes the test DLL crash (SIGSEGV) during dump K (from 0), by turning the
// target's plain receives into the test DLL's crash-on-demand kind for that dump only.
//
// The server and the rest come from the usual MQD_PROXY_* environment. The target is the
// standard synthetic job with N operations per queue. First the test DLL is loaded natively
// and dumped once: that is the reference. Then, through the shim, each dump is:
//   complete and identical to the reference            -> ok
//   cut short by a proxy error (mqd_proxy.h) with a sentence from mqs_dll_error_string, and
//   everything before it identical to the reference    -> a clear error
//   anything else                                      -> a wrong answer
// It prints one JSON line with the counts and exits 0 when there was no wrong answer and (unless
// --allow-errors) no error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "DebuggerHarness.h"
#include "QueueDump.h"
#include "SyntheticMpi.h"
#include "TestPaths.h"
#include "mqd_proxy.h"

using namespace mqd::harness;

namespace {

struct Debugger {
  TargetModel target{8, false};
  std::unique_ptr<DebuggerHarness> d;
  DebuggerHarness::Process* process = nullptr;

  Debugger(const std::string& dll, size_t ops) {
    layOut(target, standardJob(ops));
    d = std::make_unique<DebuggerHarness>(dll, DebuggerHarness::Options{});
    auto* image = d->addImage(target, "a.out");
    process = d->addProcess(image, 0, "rank0");
  }
  mqs_process* p() { return reinterpret_cast<mqs_process*>(process); }
  // The usual set-up; the first failing call's rc (mqs_ok when all worked).
  int setUp() {
    d->dll().setup_basic_callbacks(d->basicCallbacks());
    auto* i = reinterpret_cast<mqs_image*>(process->image);
    char* m = nullptr;
    int rc;
    if ((rc = d->dll().setup_image(i, d->imageCallbacks())) != mqs_ok) return rc;
    if ((rc = d->dll().image_has_queues(i, &m)) != mqs_ok) return rc;
    if ((rc = d->dll().setup_process(p(), d->processCallbacks())) != mqs_ok) return rc;
    return d->dll().process_has_queues(p(), &m);
  }
};

// The request kind the test DLL answers with SIGSEGV (testing/testdll/testdll.c).
constexpr int kCrashKind = 98;

std::string withoutLastLine(const std::string& text) {
  if (text.empty()) return text;
  size_t end = text.rfind('\n', text.size() - 2);
  return end == std::string::npos ? std::string() : text.substr(0, end + 1);
}

}  // namespace

int main(int argc, char** argv) {
  size_t ops = 3;
  long dumps = 20;
  double seconds = 0;
  bool allowErrors = false, quiet = false;
  long crashAt = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mqd-dump-client: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--ops") {
      ops = std::strtoul(value(), nullptr, 10);
    } else if (a == "--dumps") {
      dumps = std::strtol(value(), nullptr, 10);
    } else if (a == "--seconds") {
      seconds = std::atof(value());
    } else if (a == "--crash-at") {
      crashAt = std::strtol(value(), nullptr, 10);
    } else if (a == "--allow-errors") {
      allowErrors = true;
    } else if (a == "--quiet") {
      quiet = true;
    } else {
      std::fprintf(stderr, "mqd-dump-client: unknown option %s\n", a.c_str());
      return 2;
    }
  }

  std::string reference;
  {
    Debugger native(mqd::test::kTestDll3, ops);
    if (native.setUp() != mqs_ok) {
      std::fprintf(stderr, "mqd-dump-client: the native set-up failed\n");
      return 2;
    }
    QueueDump d = dumpQueues(native.d->dll(), native.p());
    if (!d.complete()) {
      std::fprintf(stderr, "mqd-dump-client: the native dump failed: %s", d.text.c_str());
      return 2;
    }
    reference = d.text;
  }

  Debugger proxied(mqd::test::kShim, ops);
  long ok = 0, errors = 0, wrong = 0, calls = 0, setUpErrors = 0;
  double maxDumpMs = 0;
  std::map<int, long> byCode;
  std::string firstWrong, lastError;
  auto clear = [&](int rc) {
    const char* text = proxied.d->dll().dll_error_string(rc);
    bool clearText = text != nullptr && std::strstr(text, "mqd-proxy") != nullptr;
    if (clearText) lastError = text;
    return clearText;
  };
  int rc = proxied.setUp();
  while (rc != mqs_ok && MQD_PROXY_IS_PROXY_ERROR(rc) && clear(rc) && setUpErrors < 100) {
    // The set-up itself may meet a fault: a debugger would try again.
    ++setUpErrors;
    rc = proxied.setUp();
  }
  if (rc != mqs_ok) {
    std::fprintf(stderr, "mqd-dump-client: set-up through the shim failed: %d\n", rc);
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  for (long n = 0;; ++n) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0 ? elapsed >= seconds : n >= dumps) break;
    if (n == crashAt) rewriteRequestKinds(proxied.target, 1, kCrashKind);
    auto t0 = std::chrono::steady_clock::now();
    QueueDump d = dumpQueues(proxied.d->dll(), proxied.p());
    if (n == crashAt) rewriteRequestKinds(proxied.target, kCrashKind, 1);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > maxDumpMs) maxDumpMs = ms;
    calls += d.calls;
    if (d.complete()) {
      if (d.text == reference) {
        ++ok;
      } else {
        ++wrong;
        if (firstWrong.empty()) firstWrong = d.text;
      }
    } else if (MQD_PROXY_IS_PROXY_ERROR(d.failedRc) && clear(d.failedRc) &&
               reference.compare(0, withoutLastLine(d.text).size(), withoutLastLine(d.text)) == 0) {
      ++errors;
      ++byCode[d.failedRc];
    } else {
      ++wrong;
      if (firstWrong.empty()) firstWrong = d.text;
    }
  }
  std::string codes;
  for (auto& [code, count] : byCode) {
    codes += (codes.empty() ? "" : ", ") + std::string("\"") + std::to_string(code) + "\": " +
             std::to_string(count);
  }
  std::printf(
      "{\"dumps\": %ld, \"ok\": %ld, \"errors\": %ld, \"wrong\": %ld, \"calls\": %ld, "
      "\"set_up_errors\": %ld, \"max_dump_ms\": %.1f, \"error_codes\": {%s}}\n",
      ok + errors + wrong, ok, errors, wrong, calls, setUpErrors, maxDumpMs, codes.c_str());
  if (!quiet && !lastError.empty()) std::fprintf(stderr, "last error: %s\n", lastError.c_str());
  if (!firstWrong.empty()) {
    std::fprintf(stderr, "first wrong dump:\n%s\nreference:\n%s", firstWrong.c_str(),
                 reference.c_str());
  }
  return wrong == 0 && (allowErrors || errors + setUpErrors == 0) ? 0 : 1;
}
