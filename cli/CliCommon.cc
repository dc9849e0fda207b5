// Helpers shared by the mqd-proxy commands (Cli.h).
#include <cstdio>

#include "Cli.h"
#include "ProxyErrors.h"

namespace mqd::client::cli {
namespace {

// The Debugger capability of a probe session: a DLL being loaded and described makes no
// callbacks, so every method is left unimplemented (an attempt would fail that call).
class NoDebugger final : public wire::Debugger::Server {};

}  // namespace

std::string formatMs(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10 ? "%.3f ms" : "%.1f ms", ms);
  return buf;
}

std::string describeFailure(const ProxyError& e) {
  const char* text = proxyErrorText(e.code());
  return std::string(text != nullptr ? text : "error") + ": " + e.what();
}

std::vector<double> measureRoundTrips(Connection& connection, kj::WaitScope& waitScope,
                                      int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i) {
    auto start = std::chrono::steady_clock::now();
    connection.proxy().describeRequest().send().wait(waitScope);
    out.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                            start)
                      .count());
  }
  return out;
}

DllInfo probeDll(Connection& connection, kj::WaitScope& waitScope, const std::string& dll) {
  auto request = connection.proxy().openSessionRequest();
  describeClient(request.initOptions(), dll);
  request.setDebugger(kj::heap<NoDebugger>());
  auto response = request.send().wait(waitScope);
  if (response.hasFailure()) {
    auto failure = response.getFailure();
    throw ProxyError(checkedFailureCode(failure.getCode()), failure.getDetail().cStr());
  }
  return DllInfo::from(response.getDll());
}

DllInfo probeDll(kj::AsyncIoContext& io, const ClientConfig& config, const std::string& dll) {
  auto connection = Connection::connectNow(io, config);
  return probeDll(*connection, io.waitScope, dll);
}

}  // namespace mqd::client::cli
