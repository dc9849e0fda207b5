// SessionRecorder: records a shim's sessions into a file (MQD_PROXY_RECORD) that
// `mqd-proxy replay` plays back against a server, without the debugger or the job.
//
// What is recorded (schema/record.capnp), in the order it happened: every session opened
// (options, the DLL the server loaded), every Session request with its results, every Debugger
// request the server made with the debugger's answer, every mqs_* call the debugger made with
// the result it got, and the labels a debugger gives its processes (kLabelVariable).
//
// How: the shim puts a tap in front of both capabilities of a session. Each tap forwards every
// call unchanged and records its parameters and results. The Debugger tap dispatches to the
// shim's DebuggerService in place, in the same event-loop turn, so callbacks reach the debugger
// exactly when they would without recording; the Session tap is a local capability in front of
// the server's Session.
//
// Threads: the taps, describeServer() and sessionOpened() run on the event-loop thread;
// apiCall() and labelProcess() on the debugger's; one mutex guards the file. The recorder
// outlives every connection it tapped.
//
// Durability: chunks are written after every mqs_update_communicator_list the debugger makes,
// whenever kFlushEntries entries or kFlushBytes bytes are pending, and when the recorder is
// destroyed; a debugger that dies loses at most what came after the last chunk. A recording
// failure (a path that cannot be created, a full disk) is logged once as a warning and ends the
// recording; the session itself never notices.
#pragma once

#include <capnp/capability.h>
#include <capnp/message.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "EntryPoints.h"
#include "RecordFile.h"
#include "mqd.capnp.h"

namespace mqd::client {

class SessionRecorder {
 public:
  // Read at each mqs_setup_process: a label for the process being set up (the gdb front end
  // sets "inferior=N pid=P rank=R"), recorded with its token; the replay shows it.
  static constexpr const char* kLabelVariable = "MQD_PROXY_RECORD_LABEL";
  static constexpr size_t kFlushEntries = 1024;
  static constexpr size_t kFlushBytes = 4u << 20;

  // Nothing is created before the first session opens.
  explicit SessionRecorder(std::string path);
  ~SessionRecorder();
  SessionRecorder(const SessionRecorder&) = delete;
  SessionRecorder& operator=(const SessionRecorder&) = delete;

  // ---- event-loop thread, while a connection opens its session ----

  // Asks the server to describe itself, for the file header. The promise never fails.
  kj::Promise<void> describeServer(wire::Proxy::Client& proxy);
  // The Debugger capability to hand the server: `service` behind a recording tap.
  wire::Debugger::Client tapDebugger(kj::Own<wire::Debugger::Server> service);
  // The session is open: records it (the first time also creates the file and writes its
  // header) and returns what the shim should call instead of `session`: a recording tap in
  // front of it (or `session` itself once recording has stopped).
  wire::Session::Client sessionOpened(const std::string& endpoint,
                                      wire::SessionOptions::Reader options,
                                      wire::DllDescription::Reader dll,
                                      wire::Session::Client session);

  // ---- debugger thread ----

  // The debugger's call of `entryPoint` returned `rc`.
  void apiCall(EntryPoint entryPoint, int rc);
  // The debugger is setting up process `token`: records kLabelVariable's value, if set.
  void labelProcess(uint64_t token);

  // False once recording stopped (or never started: the file could not be created).
  bool recording() const { return active_; }

 private:
  class SessionTap;
  class DebuggerTap;

  // Entries, from the taps. sessionCall returns the call's id (0: not recorded).
  uint64_t sessionCall(uint16_t method, capnp::AnyPointer::Reader params);
  void sessionReturn(uint64_t id, uint16_t method, const capnp::AnyPointer::Reader* results,
                     const kj::Exception* failure);
  kj::Own<capnp::MallocMessageBuilder> beginDebuggerCall(uint16_t method,
                                                         capnp::AnyPointer::Reader params);
  void endDebuggerCall(capnp::MallocMessageBuilder& entry,
                       const capnp::AnyPointer::Reader* results, const kj::Exception* failure);

  // Adds an entry (stamping its time) and flushes by the rules above. Takes the lock.
  void add(capnp::MessageBuilder& entry, bool flushNow = false);
  // Logs why and stops recording. Called with the lock held.
  void stop(const std::string& why);

  const std::string path_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<bool> active_{true};
  std::mutex mutex_;
  std::unique_ptr<RecordWriter> writer_;
  uint64_t nextCallId_ = 1;
  // Proxy.describe of the server being connected to (loop thread), for the header.
  kj::Own<capnp::MallocMessageBuilder> server_;
};

}  // namespace mqd::client
