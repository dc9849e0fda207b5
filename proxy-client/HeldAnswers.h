// HeldAnswers: mqs_image_has_queues and mqs_process_has_queues answers the shim obtained before
// the debugger asked: sent behind their object's set-up, which the spec has the debugger call
// next (policy epoch; docs/round-trips.md, "Set-up"), or taken from a set-up record.
//
// Contract: an answer is held per object and serves the debugger's own has-queues call on that
// object once (serve()), with what the DLL said then: its rc and message, a callback's error
// instead of the rc, and (from a record) its effects, delivered inside that call. The caller
// drops an object's answer when any other call on it comes first: the debugger's call then goes
// to the DLL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "DebuggerSide.h"
#include "Log.h"
#include "SessionLink.h"
#include "SetUpRecall.h"
#include "StringPool.h"
#include "mqd.capnp.h"

namespace mqd::client {

// The object a set-up or has-queues call is about: an image (mqs_setup_image,
// mqs_image_has_queues) or a process (mqs_setup_process, mqs_process_has_queues).
inline wire::InfoKind objectKindOf(EntryPoint entryPoint) {
  return entryPoint == EntryPoint::setup_image || entryPoint == EntryPoint::image_has_queues
             ? wire::InfoKind::IMAGE
             : wire::InfoKind::PROCESS;
}

// Gives the debugger a recorded call's effects, in order; a put_*_info puts `infoToken` on the
// object `token` of `kind`.
void deliverRecordedEffects(DebuggerSide& side, const std::vector<SetUpRecall::Effect>& effects,
                            wire::InfoKind kind, uint64_t token, uint64_t infoToken);

class HeldAnswers {
 public:
  struct Answer {
    int rc = 0;
    kj::Own<wire::OutString::Reader> message;
    int errorCode = 0;  // a callback's proxy error, returned instead of rc
    std::string errorDetail;
    std::vector<SetUpRecall::Effect> effects;  // from a record: delivered as it is served
    // Held back by the server behind a set-up proved late (wire processHasQueues'
    // heldEffects): delivered as it is served.
    std::vector<kj::Own<wire::Effect::Reader>> heldEffects;
  };

  // kind: IMAGE (mqs_image_has_queues) or PROCESS (mqs_process_has_queues).
  void hold(wire::InfoKind kind, uint64_t token, Answer answer) {
    of(kind)[token] = std::move(answer);
  }
  // Serves `pending`, the has-queues call sent behind the set-up of `token`, and holds its
  // answer; `keep` takes the rest of its reply. Holds nothing when the server skipped it (the
  // set-up failed) or it failed: the debugger's own call meets that again, in the DLL.
  template <typename Results, typename Keep>
  void holdReply(SessionLink& link, std::shared_ptr<PendingCall> pending, EntryPoint entryPoint,
                 uint64_t token, Keep&& keep);
  // The debugger's own call on `token`, served from its held answer if there is one: delivers
  // its effects (a record's, or those the server held back), applies its message to *message
  // and returns its rc (throws ProxyError for a held error). Nothing when none is held.
  std::optional<int> serve(DebuggerSide& side, StringPool& strings, wire::InfoKind kind,
                       uint64_t token, char** message);
  void drop(wire::InfoKind kind, uint64_t token) { of(kind).erase(token); }
  void dropAll(wire::InfoKind kind) { of(kind).clear(); }
  void clear() {
    images_.clear();
    processes_.clear();
  }

 private:
  using Answers = std::unordered_map<uint64_t, Answer>;
  Answers& of(wire::InfoKind kind) {
    return kind == wire::InfoKind::IMAGE ? images_ : processes_;
  }
  Answers images_;
  Answers processes_;
};

template <typename Results, typename Keep>
void HeldAnswers::holdReply(SessionLink& link, std::shared_ptr<PendingCall> pending,
                            EntryPoint entryPoint, uint64_t token, Keep&& keep) {
  wire::InfoKind kind = objectKindOf(entryPoint);
  drop(kind, token);
  try {
    Reply<Results> reply = link.finish<Results>(std::move(pending), entryPoint);
    if (reply.get().getSkipped()) return;
    keep(reply.get());
    Answer answer;
    answer.rc = reply.get().getRc();
    answer.message = capnp::clone(reply.get().getMessage());
    answer.errorCode = reply.call().callbackErrorCode();
    answer.errorDetail = reply.call().callbackErrorDetail();
    if constexpr (std::is_same_v<Results, wire::Session::ProcessHasQueuesResults>) {
      for (auto e : reply.get().getHeldEffects()) answer.heldEffects.push_back(capnp::clone(e));
    }
    hold(kind, token, std::move(answer));
  } catch (const ProxyError& e) {
    MQD_LOG(Debug, "%s sent behind its set-up: %s", nameOf(entryPoint), e.what());
  }
}

}  // namespace mqd::client
