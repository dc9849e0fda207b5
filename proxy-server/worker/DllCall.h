// DllCall: the context of one vendor-DLL entry point while it runs.
//
// A DllCall exists exactly while the worker executes DLL code for one Session method. It runs
// on a kj fiber, so a callback that needs the debugger can wait for the RPC reply on the
// fiber's WaitScope (waiting on the event loop from a plain event callback is not allowed).
// The C callback trampolines find it through current(); outside a call current() is none and
// the trampolines refuse politely.
#pragma once

#include <kj/async.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "CpuWatchdog.h"
#include "EntryPoints.h"
#include "mqd.capnp.h"

namespace mqd::server {

class DebuggerObjects;
class DllCall;
class Metrics;
class RemoteDebugger;

// What DLL code running in a DllCall may reach, and nothing more: the stand-ins of the objects
// the DLL was handed, the debugger behind them (with its caches), the DLL's captured output,
// and the session's counters. The session provides it (SessionService); unit tests of the
// caches provide their own.
class DllHost {
 public:
  virtual RemoteDebugger& remote() = 0;
  virtual DebuggerObjects& objects() = 0;
  virtual Metrics& metrics() = 0;
  // Relays (or records, see DllCall::setRecorder) what the DLL printed since the last call.
  virtual void relayDllOutput(DllCall& call) = 0;

 protected:
  ~DllHost() = default;
};

// A debugger-visible effect of DLL code (not a query): delivered to the debugger as it
// happens, or recorded with the call that caused it when the call is recorded for a walk.
struct Effect {
  enum class Kind { Dprints, PutInfo, DllOutput } kind;
  std::string text;  // Dprints text, DllOutput bytes
  wire::InfoKind infoKind = wire::InfoKind::IMAGE;
  uint64_t handle = 0;
  uint64_t info = 0;
};

// The wire form of an effect (mqd.capnp, struct Effect), the same sent at once or recorded.
void writeEffect(const Effect& effect, wire::Effect::Builder out);
void writeEffects(const std::vector<Effect>& effects, capnp::List<wire::Effect>::Builder out);

class DllCall {
 public:
  DllCall(DllHost& host, kj::WaitScope& waitScope, EntryPoint entryPoint);
  ~DllCall();
  DllCall(const DllCall&) = delete;
  DllCall& operator=(const DllCall&) = delete;

  // The call in progress on this thread; none between calls.
  static kj::Maybe<DllCall&> current();

  DllHost& host() { return host_; }
  Metrics& metrics() { return host_.metrics(); }
  kj::WaitScope& waitScope() { return waitScope_; }
  EntryPoint entryPoint() const { return entryPoint_; }
  const char* name() const { return nameOf(entryPoint_); }  // its C name: mqs_next_operation

  // A callback could not be completed (peer gone, bad token). The DLL got an error value; the
  // first such failure is logged when the call ends.
  void recordCallbackFailure(const std::string& what);

  // While set, the effects of DLL code go here instead of to the debugger.
  void setRecorder(std::vector<Effect>* recorder) { recorder_ = recorder; }
  std::vector<Effect>* recorder() const { return recorder_; }

 private:
  CpuWatchdog::Guard watchdog_;  // first: armed for as long as the call lives
  DllHost& host_;
  kj::WaitScope& waitScope_;
  EntryPoint entryPoint_;
  DllCall* outer_;
  std::chrono::steady_clock::time_point started_;
  uint64_t callbacksAtStart_;
  uint64_t blocksAtStart_;
  std::string firstFailure_;
  std::vector<Effect>* recorder_ = nullptr;
};

// While it lives, the effects of DLL code running in `call` go into `effects` instead of to the
// debugger; the previous destination comes back when it ends, also by an exception.
class HeldEffects {
 public:
  HeldEffects(DllCall& call, std::vector<Effect>* effects)
      : call_(call), outer_(call.recorder()) {
    call_.setRecorder(effects);
  }
  ~HeldEffects() { call_.setRecorder(outer_); }
  HeldEffects(const HeldEffects&) = delete;
  HeldEffects& operator=(const HeldEffects&) = delete;

 private:
  DllCall& call_;
  std::vector<Effect>* outer_;
};

}  // namespace mqd::server
