#include "Replay.h"

#include <capnp/dynamic.h>
#include <kj/async-io.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <new>
#include <optional>
#include <set>

#include "CapnpCompat.h"
#include "Connection.h"
#include "DumpFormat.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "RecordFile.h"
#include "RecordedDebugger.h"
#include "ReplayedDump.h"
#include "ResultDiff.h"
#include "WireMethods.h"

namespace mqd::replay {

using namespace client;  // the shim's parts the replay runs as the shim would

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Usage errors and unusable input: exit 2, with the reason.
struct Unusable {
  std::string why;
};

struct Options {
  std::string file;
  std::string dll;  // --dll: instead of the recorded one
  bool stats = false;
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--dll") {
      if (i + 1 >= args.size()) throw Unusable{"--dll needs a path"};
      o.dll = args[++i];
    } else if (a == "--stats") {
      o.stats = true;
    } else if (!a.empty() && a[0] == '-') {
      throw Unusable{"unknown option \"" + a + "\" for replay (see --help)"};
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      throw Unusable{"replay takes one recording, not \"" + a + "\" too"};
    }
  }
  if (o.file.empty()) throw Unusable{"replay needs a recording: mqd-proxy replay FILE"};
  return o;
}

// A call that failed: the code the debugger would have seen, and why.
struct Failed {
  int code;
  std::string detail;
};

// The `failure` of Session method `method`'s results (every Session result has one), if set.
std::optional<Failed> failureIn(uint16_t method, capnp::AnyPointer::Reader results) {
  auto schema = capnp::Schema::from<wire::Session>().getMethods()[method].getResultType();
  auto fields = results.getAs<capnp::DynamicStruct>(schema);
  if (!fields.has("failure")) return std::nullopt;
  auto failure = fields.get("failure").as<wire::Failure>();
  return Failed{checkedFailureCode(failure.getCode()), failure.getDetail()};
}

// A call the RPC system failed (the session broke, the server gave no answer in time, ...).
Failed failedWith(kj::Exception::Type type, const std::string& description) {
  kj::Exception e(type, __FILE__, __LINE__);
  return Failed{codeOfRpcException(e), description};
}

// The first place two notification lists differ, or "".
std::string compareNotifications(const std::vector<std::string>& recorded,
                                  const std::vector<std::string>& replayed) {
  for (size_t i = 0; i < recorded.size() || i < replayed.size(); ++i) {
    const char* none = "nothing";
    std::string a = i < recorded.size() ? recorded[i] : none;
    std::string b = i < replayed.size() ? replayed[i] : none;
    if (a != b) {
      return "notification " + std::to_string(i + 1) + ": recorded " + a + ", replayed " + b;
    }
  }
  return "";
}

class SessionReplay {
 public:
  SessionReplay(const ClientConfig& config, const Options& options, const RecordReader& recording)
      : config_(config), options_(options), recording_(recording), answers_(recording) {}

  // Runs the whole recording. Throws Unusable when the server cannot be used at all.
  void run();

  const ReplayedDump& dump() const { return dump_; }
  int exitStatus() const { return differences_ == 0 ? 0 : 1; }
  void report(bool stats) const;

 private:
  struct Outstanding {
    uint16_t method;
    uint64_t number;  // 1-based, in the order the recording made them
    capnp::AnyPointer::Reader params;
    kj::Promise<capnp::Response<capnp::AnyPointer>> reply;
  };
  struct MethodStats {
    uint64_t calls = 0;
    double seconds = 0;
  };

  void open(record::SessionOpened::Reader opened);
  void issue(record::SessionCall::Reader call);
  void complete(record::SessionReturn::Reader recorded);
  void difference(const std::string& where, const std::string& what);
  std::string callName(const Outstanding& call) const;

  const ClientConfig& config_;
  const Options& options_;
  const RecordReader& recording_;
  RecordedDebugger answers_;
  ReplayedDump dump_;
  kj::AsyncIoContext io_ = kj::setupAsyncIo();
  std::vector<kj::Own<Connection>> connections_;
  kj::Maybe<wire::Session::Client> session_;
  std::set<uint64_t> returned_;  // ids of recorded calls that have a recorded return
  std::map<uint64_t, Outstanding> outstanding_;
  RecordedDebugger::Notifications recordedNotifications_;
  uint64_t calls_ = 0;
  uint64_t cut_ = 0;  // recorded calls without a recorded return (the recording ends there)
  uint64_t apiCalls_ = 0;
  uint64_t sessions_ = 0;
  uint64_t differences_ = 0;
  std::string firstDifference_;
  std::map<uint16_t, MethodStats> perMethod_;
  double seconds_ = 0;
  double recordedSeconds_ = 0;
  bool stopped_ = false;  // the server stopped answering: nothing more is sent
};

void SessionReplay::run() {
  for (const record::Entry::Reader& e : recording_.entries()) {
    if (e.isSessionReturn()) returned_.insert(e.getSessionReturn().getId());
  }
  Clock::time_point started = Clock::now();
  uint64_t firstMicros = 0, lastMicros = 0;
  for (const record::Entry::Reader& e : recording_.entries()) {
    if (stopped_) break;
    if (firstMicros == 0 && e.isSessionOpened()) firstMicros = e.getMicros();
    lastMicros = e.getMicros();
    switch (e.which()) {
      case record::Entry::SESSION_OPENED:
        open(e.getSessionOpened());
        break;
      case record::Entry::SESSION_CALL:
        issue(e.getSessionCall());
        break;
      case record::Entry::SESSION_RETURN:
        complete(e.getSessionReturn());
        break;
      case record::Entry::DEBUGGER_CALL: {
        auto call = e.getDebuggerCall();
        if (RecordedDebugger::Notifications::is(call.getMethod())) {
          recordedNotifications_.add(call.getMethod(), call.getParams());
        } else if (!call.hasFailure()) {
          dump_.debuggerAnswer(call.getMethod(), call.getParams(), call.getResults());
        }
        break;
      }
      case record::Entry::API_CALL:
        ++apiCalls_;
        break;
      case record::Entry::PROCESS_LABEL:
        dump_.label(e.getProcessLabel().getProcess(), e.getProcessLabel().getLabel());
        break;
    }
  }
  seconds_ = secondsSince(started);
  recordedSeconds_ = static_cast<double>(lastMicros - firstMicros) / 1e6;
}

void SessionReplay::open(record::SessionOpened::Reader opened) {
  ++sessions_;
  std::string where = "session " + std::to_string(sessions_);
  kj::Own<Connection> connection;
  try {
    connection = Connection::connectNow(io_, config_);
  } catch (const ProxyError& e) {
    throw Unusable{std::string("cannot reach the server: ") + e.what()};
  }
  auto request = connection->proxy().openSessionRequest();
  request.setOptions(opened.getOptions());
  auto options = request.getOptions();
  std::string dllAsked = options_.dll.empty() ? std::string(opened.getDll().getPath())
                                              : options_.dll;
  options.setDll(dllAsked);
  request.setDebugger(answers_.capability(options.getCompress()));
  auto refused = [&](const std::string& why) {
    return Unusable{"the server refused " + where + " (DLL " + dllAsked + "): " + why};
  };
  capnp::Response<wire::Proxy::OpenSessionResults> response = [&]() {
    try {
      return request.send().wait(io_.waitScope);
    } catch (const kj::Exception& e) {
      throw refused(e.getDescription().cStr());
    }
  }();
  if (response.hasFailure()) throw refused(response.getFailure().getDetail());
  auto recorded = opened.getDll();
  auto replayed = response.getDll();
  // What the DLL is, not where it lies or which build it is: a copy or a rebuild that behaves
  // the same replays the same.
  auto same = [&](const std::string& what, const std::string& a, const std::string& b) {
    if (a != b) difference(where, "the DLL's " + what + ": recorded \"" + a + "\", replayed \"" +
                                      b + "\"");
  };
  same("version string", recorded.getVersionString(), replayed.getVersionString());
  same("compatibility", std::to_string(recorded.getCompatibility()),
       std::to_string(replayed.getCompatibility()));
  same("taddr width", std::to_string(recorded.getTaddrWidth()),
       std::to_string(replayed.getTaddrWidth()));
  auto names = [](capnp::List<capnp::Text>::Reader list) {
    std::string out;
    for (auto t : list) out += (out.empty() ? "" : " ") + std::string(t.cStr());
    return out;
  };
  same("optional entry points", names(recorded.getEntryPoints()), names(replayed.getEntryPoints()));
  bool hasGroup = false;
  for (auto t : replayed.getEntryPoints()) hasGroup |= t == nameOf(EntryPoint::get_comm_group);
  dump_.setDll(replayed.getVersionString(), hasGroup);
  session_ = response.getSession();
  connections_.push_back(kj::mv(connection));
}

void SessionReplay::issue(record::SessionCall::Reader call) {
  ++calls_;
  if (returned_.count(call.getId()) == 0) {
    ++cut_;
    return;  // the debugger died (or the recording stopped) during it
  }
  KJ_IF_MAYBE(session, session_) {
    uint16_t method = call.getMethod();
    auto params = call.getParams();
    if (method == sessionMethodOf(EntryPoint::update_communicator_list)) {
      answers_.beginEpoch(params.getAs<wire::Session::UpdateCommunicatorListParams>().getProcess());
    }
    auto request = capnp_compat::typelessRequest(*session, capnp::typeId<wire::Session>(),
                                                 method, params.targetSize());
    request.set(params);
    // The live shim's timings size a server's reads around a miss until it has timed its own
    // (LinkTimings); a fresh server answered from the recording times nothing alike, and with
    // them would read around where the live one did not. Without them it reads as the live
    // server did with no timing yet.
    if (method == sessionMethodOf(EntryPoint::setup_process)) {
      request.getAs<wire::Session::SetupProcessParams>().initTimings();
    } else if (method == sessionMethodOf(EntryPoint::update_communicator_list)) {
      request.getAs<wire::Session::UpdateCommunicatorListParams>().initTimings();
    }
    kj::Promise<capnp::Response<capnp::AnyPointer>> reply = request.send();
    outstanding_.emplace(call.getId(), Outstanding{method, calls_, params, kj::mv(reply)});
  } else {
    difference("call " + std::to_string(calls_), "the recording has a call before any session");
  }
}

std::string SessionReplay::callName(const Outstanding& call) const {
  return "call " + std::to_string(call.number) + " (" + describeSessionMethod(call.method).cStr() +
         ")";
}

void SessionReplay::complete(record::SessionReturn::Reader recorded) {
  auto it = outstanding_.find(recorded.getId());
  if (it == outstanding_.end()) return;
  Outstanding call = kj::mv(it->second);
  outstanding_.erase(it);
  std::string where = callName(call);

  kj::Maybe<capnp::Response<capnp::AnyPointer>> response;
  kj::Maybe<kj::Exception> failure;
  Clock::time_point started = Clock::now();
  auto ms = config_.timeout.count();
  try {
    response = io_.provider->getTimer()
                   .timeoutAfter(ms * kj::MILLISECONDS, kj::mv(call.reply))
                   .wait(io_.waitScope);
  } catch (const kj::Exception& e) {
    failure = e;
  }
  MethodStats& stats = perMethod_[call.method];
  ++stats.calls;
  stats.seconds += secondsSince(started);

  std::vector<std::string> recordedNotes = recordedNotifications_.take();
  std::vector<std::string> replayedNotes = answers_.takeNotifications();
  // How the call ended, recorded and replayed: failed (with the `failure` of its results, or
  // with an exception of the RPC system), or returned (nullopt).
  std::optional<Failed> recordedFailed;
  if (recorded.hasFailure()) {
    auto r = recorded.getFailure();
    recordedFailed = failedWith(static_cast<kj::Exception::Type>(r.getType()),
                                r.getDescription().cStr());
  } else {
    recordedFailed = failureIn(call.method, recorded.getResults());
  }
  std::optional<Failed> replayedFailed;
  capnp::AnyPointer::Reader results;
  KJ_IF_MAYBE(e, failure) {
    if (e->getType() == kj::Exception::Type::OVERLOADED && !recordedFailed) {
      difference(where, "no answer from the server within " + std::to_string(ms) + " ms");
      stopped_ = true;
      return;
    }
    replayedFailed = failedWith(e->getType(), e->getDescription().cStr());
  } else KJ_IF_MAYBE(r, response) {
    results = *r;
    replayedFailed = failureIn(call.method, results);
  }

  if (replayedFailed) {
    const Failed& now = *replayedFailed;
    if (recordedFailed) {
      if (recordedFailed->code != now.code) {
        difference(where, "failed with \"" + now.detail + "\"; recorded: \"" +
                              recordedFailed->detail + "\"");
      }
    } else {
      difference(where, "the call failed: " + now.detail + "; recorded: it returned");
    }
    dump_.add(call.method, call.params, nullptr, now.code);
    return;
  }
  if (recordedFailed) {
    difference(where, "it returned; recorded: it failed with \"" + recordedFailed->detail + "\"");
  } else {
    auto schema =
        capnp::Schema::from<wire::Session>().getMethods()[call.method].getResultType();
    std::string d = firstDifference(schema, recorded.getResults(), results);
    if (!d.empty()) difference(where, d);
  }
  std::string notes = compareNotifications(recordedNotes, replayedNotes);
  if (!notes.empty()) difference(where, notes);
  dump_.add(call.method, call.params, &results, 0);
}

void SessionReplay::difference(const std::string& where, const std::string& what) {
  if (differences_++ == 0) firstDifference_ = where + ": " + what;
}

void SessionReplay::report(bool stats) const {
  const RecordedDebugger::Counts& c = answers_.counts();
  std::fprintf(stderr,
               "replay: %llu Session calls in %llu session(s) replayed in %.3f s (the recorded "
               "session: %.3f s); %llu mqs_* calls by the recorded debugger\n",
               static_cast<unsigned long long>(calls_ - cut_),
               static_cast<unsigned long long>(sessions_), seconds_, recordedSeconds_,
               static_cast<unsigned long long>(apiCalls_));
  std::fprintf(stderr,
               "replay: %llu debugger callbacks answered from the recording (%llu not recorded, "
               "%llu from another epoch), %llu notifications\n",
               static_cast<unsigned long long>(c.answered),
               static_cast<unsigned long long>(c.unrecorded),
               static_cast<unsigned long long>(c.otherEpoch),
               static_cast<unsigned long long>(c.notifications));
  for (const std::string& u : answers_.unrecorded()) {
    std::fprintf(stderr, "replay:   not recorded: %s\n", u.c_str());
  }
  if (cut_ > 0) {
    std::fprintf(stderr, "replay: %llu call(s) at the end have no recorded result (the recording "
                         "stops during them) and were not replayed\n",
                 static_cast<unsigned long long>(cut_));
  }
  if (stats) {
    std::fprintf(stderr, "replay: recording %s: %llu bytes in %zu chunks (%llu bytes raw), "
                         "%zu entries\n",
                 options_.file.c_str(), static_cast<unsigned long long>(recording_.fileBytes()),
                 recording_.chunks(), static_cast<unsigned long long>(recording_.rawBytes()),
                 recording_.entries().size());
    std::fprintf(stderr, "replay: %-34s %8s %10s\n", "Session calls by entry point", "calls",
                 "seconds");
    for (const auto& [method, m] : perMethod_) {
      std::fprintf(stderr, "replay:   %-32s %8llu %10.3f\n", describeSessionMethod(method).cStr(),
                   static_cast<unsigned long long>(m.calls), m.seconds);
    }
  }
  if (differences_ == 0) {
    std::fprintf(stderr, "replay: every result matched the recording\n");
  } else {
    std::fprintf(stderr, "replay: %llu difference(s) from the recording; the first: %s\n",
                 static_cast<unsigned long long>(differences_), firstDifference_.c_str());
  }
}

}  // namespace

const char* replayUsage() {
  return "FILE [--dll PATH] [--stats]\n"
         "Plays a session recorded with MQD_PROXY_RECORD=FILE against the server, without the "
         "debugger or the job: the recorded calls in order, the server's callbacks answered "
         "from the recording. Prints the session's message queues as the gdb front end's `mqd "
         "dump --all` does (with --json, as `mqd dump --all --json`), and on stderr the calls, "
         "callbacks and time taken (--stats: also per entry point). --dll PATH replays against "
         "another DLL on the server's allow-list. Exit status 0 when every result matched the "
         "recording, 1 at a difference (the first is named), 2 when the recording or the "
         "server cannot be used.";
}

namespace {

int replayFile(const ClientConfig& config, const Options& options, bool json);

}  // namespace

int replayCommand(const ClientConfig& config, const std::vector<std::string>& args, bool json) {
  Options options;
  try {
    options = parse(args);
  } catch (const Unusable& u) {
    std::fprintf(stderr, "mqd-proxy replay: %s\n", u.why.c_str());
    return 2;
  }
  try {
    return replayFile(config, options, json);
  } catch (const std::bad_alloc&) {
    // The recording is within RecordLimits, but this process may not have that much memory.
    std::fprintf(stderr,
                 "mqd-proxy replay: %s: ran out of memory: the recording needs more than this "
                 "process may have\n",
                 options.file.c_str());
    return 2;
  }
}

namespace {

int replayFile(const ClientConfig& config, const Options& options, bool json) {
  std::unique_ptr<RecordReader> recording;
  try {
    recording = std::make_unique<RecordReader>(options.file);
  } catch (const RecordFileError& e) {
    std::fprintf(stderr, "mqd-proxy replay: %s\n", e.what());
    return 2;
  }
  for (const std::string& w : recording->warnings()) {
    std::fprintf(stderr, "mqd-proxy replay: warning: %s\n", w.c_str());
  }
  uint32_t protocol = recording->header().getProtocolVersion();
  if (protocol != wire::PROTOCOL_VERSION) {
    std::fprintf(stderr,
                 "mqd-proxy replay: %s: recorded with wire protocol version %u; this mqd-proxy "
                 "speaks version %u\n",
                 options.file.c_str(), protocol, wire::PROTOCOL_VERSION);
    return 2;
  }
  try {
    SessionReplay replay(config, options, *recording);
    try {
      replay.run();
    } catch (const Unusable& u) {
      std::fprintf(stderr, "mqd-proxy replay: %s\n", u.why.c_str());
      return 2;
    }
    std::vector<ProcessView> processes = replay.dump().processes();
    std::string out = json ? dumpJson(processes) : dumpText(processes);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    replay.report(options.stats);
    return replay.exitStatus();
  } catch (const RecordFileError& e) {
    std::fprintf(stderr, "mqd-proxy replay: %s: %s\n", options.file.c_str(), e.what());
    return 2;
  } catch (const kj::Exception& e) {
    std::fprintf(stderr, "mqd-proxy replay: %s: %s\n", options.file.c_str(),
                 e.getDescription().cStr());
    return 2;
  }
}

}  // namespace

}  // namespace mqd::replay
