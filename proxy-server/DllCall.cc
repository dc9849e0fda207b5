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

void DllCall::recordCallbackFailure(const std::string& what) {
  if (firstFailure_.empty()) firstFailure_ = what;
}

}  // namespace mqd::server
