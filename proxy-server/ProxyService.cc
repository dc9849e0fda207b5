#include "ProxyService.h"

#include <capnp/message.h>

#include "Log.h"
#include "ProxyErrors.h"
#include "SessionService.h"
#include "VendorDll.h"
#include "mqs_interface.h"

#ifndef MQD_VERSION
#define MQD_VERSION "unknown"
#endif

namespace mqd::server {

const char* ProxyService::architecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__i386__)
  return "i686";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__powerpc64__)
  return "ppc64";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv)
  return "riscv64";
#else
  return "unknown";
#endif
}

kj::Promise<void> ProxyService::describe(DescribeContext context) {
  auto server = context.getResults().initServer();
  server.setVersion(MQD_VERSION);
  server.setArch(architecture());
  server.setBigEndian(__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
  server.setPointerSize(static_cast<uint8_t>(sizeof(void*)));
  auto paths = dlls_.paths();
  auto list = server.initDlls(static_cast<unsigned>(paths.size()));
  for (size_t i = 0; i < paths.size(); ++i) list.set(static_cast<unsigned>(i), paths[i]);
  server.setProtocolVersion(wire::PROTOCOL_VERSION);
  return kj::READY_NOW;
}

kj::Promise<void> ProxyService::openSession(OpenSessionContext context) {
  auto params = context.getParams();
  auto options = params.getOptions();
  if (options.getProtocolVersion() != wire::PROTOCOL_VERSION) {
    throw toWireException(MQD_PROXY_ERR_SESSION_REFUSED,
                          "client speaks protocol " +
                              std::to_string(options.getProtocolVersion()) +
                              ", server speaks " + std::to_string(wire::PROTOCOL_VERSION) +
                              "; use matching mqd-proxy versions");
  }
  if (sessionOpened_) {
    throw toWireException(MQD_PROXY_ERR_SESSION_REFUSED,
                          "this connection already has a session");
  }
  std::unique_ptr<VendorDll> dll;
  try {
    const std::string& path = dlls_.select(options.getDll());
    dll = VendorDll::load(path);
  } catch (const std::exception& e) {
    MQD_LOG(Warn, "session refused: %s", e.what());
    throw toWireException(MQD_PROXY_ERR_SESSION_REFUSED, e.what());
  }
  sessionOpened_ = true;
  MQD_LOG(Info, "session opened: %s for a %s debugger", dll->path().c_str(),
          options.getClientArch().cStr());
  auto results = context.getResults();
  dll->describe(results.initDll());
  results.setSession(kj::heap<SessionService>(std::move(dll), params.getDebugger(), output_));
  return kj::READY_NOW;
}

}  // namespace mqd::server
