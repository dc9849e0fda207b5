#include "DllCall.h"

#include <chrono>

#include "Log.h"
#include "SessionBoard.h"

namespace mqd::server {
namespace {
thread_local DllCall* tCurrent = nullptr;
}

DllCall::DllCall(DllHost& host, kj::WaitScope& waitScope, EntryPoint entryPoint)
    : host_(host),
      waitScope_(waitScope),
      entryPoint_(entryPoint),
      outer_(tCurrent),
      started_(std::chrono::steady_clock::now()),
      callbacksAtStart_(host.metrics().get(Count::Callbacks)),
      blocksAtStart_(host.metrics().get(Count::BlocksFetched)) {
  tCurrent = this;
  host.metrics().setLastCall(name());
}

DllCall::~DllCall() {
  tCurrent = outer_;
  if (logEnabled(LogLevel::Trace)) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - started_)
                  .count();
    MQD_LOG(Trace, "%s: %lld us, %llu callback round trip(s), %llu memory block(s)", name(),
            static_cast<long long>(us),
            static_cast<unsigned long long>(metrics().get(Count::Callbacks) - callbacksAtStart_),
            static_cast<unsigned long long>(metrics().get(Count::BlocksFetched) - blocksAtStart_));
  }
  if (!firstFailure_.empty()) {
    MQD_LOG(Warn, "during %s: %s", name(), firstFailure_.c_str());
  }
}

kj::Maybe<DllCall&> DllCall::current() {
  if (tCurrent == nullptr) return nullptr;
  return *tCurrent;
}

void DllCall::recordCallbackFailure(const std::string& what) {
  if (firstFailure_.empty()) firstFailure_ = what;
}

void writeEffect(const Effect& effect, wire::Effect::Builder out) {
  switch (effect.kind) {
    case Effect::Kind::Dprints:
      out.setDprints(effect.text);
      return;
    case Effect::Kind::PutInfo: {
      auto u = out.initPutInfo();
      u.setKind(effect.infoKind);
      u.setHandle(effect.handle);
      u.setInfo(effect.info);
      return;
    }
    case Effect::Kind::DllOutput:
      out.setDllOutput(kj::arrayPtr(reinterpret_cast<const kj::byte*>(effect.text.data()),
                                    effect.text.size()));
      return;
  }
}

void writeEffects(const std::vector<Effect>& effects, capnp::List<wire::Effect>::Builder out) {
  for (size_t i = 0; i < effects.size(); ++i) {
    writeEffect(effects[i], out[static_cast<unsigned>(i)]);
  }
}

}  // namespace mqd::server
