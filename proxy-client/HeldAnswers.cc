#include "HeldAnswers.h"

#include "OutputApply.h"

namespace mqd::client {

void deliverRecordedEffects(DebuggerSide& side, const std::vector<SetUpRecall::Effect>& effects,
                            wire::InfoKind kind, uint64_t token, uint64_t infoToken) {
  for (const SetUpRecall::Effect& e : effects) {
    switch (e.kind) {
      case SetUpRecall::Effect::PutInfo: side.putInfo(kind, token, infoToken); break;
      case SetUpRecall::Effect::Dprints: side.dprints(e.bytes.c_str()); break;
      case SetUpRecall::Effect::Output: {
        capnp::MallocMessageBuilder builder;
        auto effect = builder.initRoot<wire::Effect>();
        effect.setDllOutput(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(e.bytes.data()), e.bytes.size()));
        side.effect(effect.asReader());
        break;
      }
    }
  }
}

std::optional<int> HeldAnswers::serve(DebuggerSide& side, StringPool& strings,
                                      wire::InfoKind kind, uint64_t token, char** message) {
  Answers& held = of(kind);
  auto it = held.find(token);
  if (it == held.end()) return std::nullopt;
  Answer answer = std::move(it->second);
  held.erase(it);
  if (answer.errorCode != 0) throw ProxyError(answer.errorCode, answer.errorDetail);
  deliverRecordedEffects(side, answer.effects, kind, token, 0);
  for (const auto& effect : answer.heldEffects) side.deliver(*effect);
  applyMessage(*answer.message, message, strings);
  return answer.rc;
}

}  // namespace mqd::client
