#include "DllCall.h"

#include "Log.h"

namespace mqd::server {
namespace {
thread_local DllCall* tCurrent = nullptr;
}

DllCall::DllCall(SessionService& session, kj::WaitScope& waitScope, const char* entryPoint)
    : session_(session), waitScope_(waitScope), entryPoint_(entryPoint), outer_(tCurrent) {
  tCurrent = this;
}

DllCall::~DllCall() {
  tCurrent = outer_;
  if (!firstFailure_.empty()) {
    MQD_LOG(Warn, "during %s: %s", entryPoint_, firstFailure_.c_str());
  }
}

DllCall* DllCall::current() { return tCurrent; }

void DllCall::recordInfoUpdate(wire::InfoKind kind, uint64_t handle, uint64_t info) {
  infoUpdates_.push_back({kind, handle, info});
}

void DllCall::recordCallbackFailure(const std::string& what) {
  if (firstFailure_.empty()) firstFailure_ = what;
}

void DllCall::writeEffects(wire::CallEffects::Builder out) const {
  auto list = out.initInfoUpdates(static_cast<unsigned>(infoUpdates_.size()));
  for (size_t i = 0; i < infoUpdates_.size(); ++i) {
    auto u = list[static_cast<unsigned>(i)];
    u.setKind(infoUpdates_[i].kind);
    u.setHandle(infoUpdates_[i].handle);
    u.setInfo(infoUpdates_[i].info);
  }
}

}  // namespace mqd::server
