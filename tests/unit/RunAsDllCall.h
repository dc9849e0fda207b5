// RunAsDllCall: runs a unit test's body as the body of one mqs_* call of the server, as
// SessionService::runDll runs the DLL: on a kj fiber (where a callback may wait for the
// debugger), with a DllCall of `host` current, after the caches started the call. CacheHost is
// the session's side of such a call, reduced to the caches and the objects.
#pragma once

#include <kj/async.h>

#include <cstddef>

#include "AsanFiber.h"
#include "DebuggerObjects.h"
#include "DllCall.h"
#include "RemoteDebugger.h"
#include "SessionBoard.h"

namespace mqd::server::test {

class CacheHost final : public DllHost {
 public:
  CacheHost(wire::Debugger::Client debugger, RemoteDebugger::Options options)
      : remote_(kj::mv(debugger), options) {}
  RemoteDebugger& remote() override { return remote_; }
  DebuggerObjects& objects() override { return objects_; }
  Metrics& metrics() override { return metrics_; }
  void relayDllOutput(DllCall&) override {}

 private:
  RemoteDebugger remote_;
  DebuggerObjects objects_;
  Metrics metrics_{nullptr};
};

template <typename Body>
void runAsDllCall(DllHost& host, kj::WaitScope& waitScope, Body&& body) {
  constexpr size_t kStack = 1u << 20;
  kj::startFiber(kStack, [&](kj::WaitScope& ws) {
    AsanFiber onFiber(kStack);
    DllCall call(host, ws, EntryPoint::update_communicator_list);
    host.remote().startCall(host.objects());
    body(call);
  }).attach(kj::defer([]() { AsanFiber::backOnLoopStack(); })).wait(waitScope);
}

}  // namespace mqd::server::test
