// mqd-proxy info: what the server is and which DLLs it offers, each as loaded (Cli.h).
#include <cstdio>

#include "Cli.h"
#include "Json.h"

namespace mqd::client::cli {
namespace {

struct Probe {
  std::string name;  // as the server lists it, or as configured
  bool ok = false;
  DllInfo info;
  std::string error;
};

std::string compatibilityName(int level) {
  switch (level) {
    case 2: return "2 (the classic MPI-1 interface)";
    case 3: return "3 (MPI-2 additions: jobs, process identity, new processes)";
    default: return "compatibility " + std::to_string(level);
  }
}

}  // namespace

int infoCommand(Context& c) {
  auto io = kj::setupAsyncIo();
  // The connection the server is described on serves the first DLL's probe too.
  kj::Own<Connection> connection = Connection::connectNow(io, c.config);
  auto server = [&]() {
    auto response = connection->proxy().describeRequest().send().wait(io.waitScope);
    struct Description {
      std::string version, arch;
      bool bigEndian;
      unsigned pointerSize, protocol;
      bool anyDll;
      std::vector<std::string> dlls;
    } d;
    auto s = response.getServer();
    d.version = s.getVersion();
    d.arch = s.getArch();
    d.bigEndian = s.getBigEndian();
    d.pointerSize = s.getPointerSize();
    d.protocol = s.getProtocolVersion();
    d.anyDll = s.getAnyDll();
    for (auto p : s.getDlls()) d.dlls.push_back(p);
    return d;
  }();
  // Each DLL is loaded in a session of its own (one per connection, in a worker of its own).
  std::vector<std::string> names = server.dlls;
  if (server.anyDll && !c.config.dll.empty()) names.push_back(c.config.dll);
  std::vector<Probe> probes;
  for (const std::string& name : names) {
    Probe p;
    p.name = name;
    try {
      if (connection) {
        kj::Own<Connection> first = kj::mv(connection);
        p.info = probeDll(*first, io.waitScope, name);
      } else {
        p.info = probeDll(io, c.config, name);
      }
      p.ok = true;
    } catch (...) {
      p.error = describeFailure(currentFailure());
    }
    probes.push_back(p);
  }
  if (c.json) {
    Json dlls = Json::array();
    for (const Probe& p : probes) {
      Json dll = Json::object().set("name", p.name).set("loaded", p.ok);
      if (p.ok) {
        dll.set("path", p.info.path)
            .set("version_string", p.info.versionString)
            .set("compatibility", p.info.compatibility)
            .set("taddr_width", p.info.taddrWidth)
            .set("build_id", p.info.buildId);
      } else {
        dll.set("error", p.error);
      }
      dlls.push(std::move(dll));
    }
    std::fputs(Json::object()
                   .set("server", c.config.server)
                   .set("version", server.version)
                   .set("arch", server.arch)
                   .set("byte_order", server.bigEndian ? "big-endian" : "little-endian")
                   .set("pointer_size", server.pointerSize)
                   .set("protocol", server.protocol)
                   .set("any_dll", server.anyDll)
                   .set("dlls", std::move(dlls))
                   .encode()
                   .c_str(),
               stdout);
  } else {
    std::printf("server:        %s\n", c.config.server.c_str());
    std::printf("version:       mqd-proxy-server %s (protocol %u)\n", server.version.c_str(),
                server.protocol);
    std::printf("architecture:  %s, %s, %u-byte pointers\n", server.arch.c_str(),
                server.bigEndian ? "big-endian" : "little-endian", server.pointerSize);
    if (server.anyDll) {
      std::printf("vendor DLLs:   any absolute path the debugger names (a --stdio server "
                  "without --dll)%s\n",
                  c.config.dll.empty() ? "; set MQD_PROXY_DLL or --dll to describe one" : "");
    } else if (server.dlls.empty()) {
      std::printf("vendor DLLs:   none (the server was started without --dll)\n");
    }
    for (size_t i = 0; i < probes.size(); ++i) {
      const Probe& p = probes[i];
      std::printf("\nDLL %s%s\n", p.name.c_str(),
                  i == 0 && !server.anyDll ? " (the default)" : "");
      if (!p.ok) {
        std::printf("  does not load: %s\n", p.error.c_str());
        continue;
      }
      std::printf("  version:       %s\n", p.info.versionString.c_str());
      std::printf("  compatibility: %s\n", compatibilityName(p.info.compatibility).c_str());
      std::printf("  address width: %s\n",
                  p.info.taddrWidth != 0 ? (std::to_string(p.info.taddrWidth) + " bytes").c_str()
                                         : "not stated (no mqs_dll_taddr_width)");
      std::printf("  build id:      %s\n", p.info.buildId.c_str());
    }
  }
  for (const Probe& p : probes) {
    if (!p.ok) return 1;
  }
  return 0;
}

}  // namespace mqd::client::cli
