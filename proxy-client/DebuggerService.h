// DebuggerService: the Debugger capability the shim gives the server (wire Debugger).
//
// Runs on the event-loop thread, but answers nothing itself: each request is posted to the
// PendingCall the debugger thread is serving, executed there against DebuggerSide, and the
// answer comes back through a cross-thread promise. An effect (dprints, put_*_info, DLL output)
// is posted the same way, without an answer.
#pragma once

#include <functional>

#include "mqd.capnp.h"

namespace mqd::client {

class Connection;
class DebuggerSide;

class DebuggerService final : public wire::Debugger::Server {
 public:
  DebuggerService(Connection& connection, DebuggerSide& side)
      : connection_(connection), side_(side) {}

 protected:
  kj::Promise<void> findFunction(FindFunctionContext context) override;
  kj::Promise<void> findSymbol(FindSymbolContext context) override;
  kj::Promise<void> findType(FindTypeContext context) override;
  kj::Promise<void> fieldOffset(FieldOffsetContext context) override;
  kj::Promise<void> sizeOf(SizeOfContext context) override;
  kj::Promise<void> getTypeSizes(GetTypeSizesContext context) override;
  kj::Promise<void> fetchData(FetchDataContext context) override;
  kj::Promise<void> getGlobalRank(GetGlobalRankContext context) override;
  kj::Promise<void> getImage(GetImageContext context) override;
  kj::Promise<void> getProcessJob(GetProcessJobContext context) override;
  kj::Promise<void> getProcessIdentity(GetProcessIdentityContext context) override;
  kj::Promise<void> getProcess(GetProcessContext context) override;
  kj::Promise<void> errorString(ErrorStringContext context) override;
  kj::Promise<void> effect(EffectContext context) override;
  kj::Promise<void> fetchBlocks(FetchBlocksContext context) override;
  kj::Promise<void> lookUp(LookUpContext context) override;

 private:
  // Runs `run` on the calling thread of the current call; resolves to its result.
  template <typename Value>
  kj::Promise<Value> onCallingThread(const char* what, std::function<Value(DebuggerSide&)> run);

  Connection& connection_;
  DebuggerSide& side_;
};

}  // namespace mqd::client
