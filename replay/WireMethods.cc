#include "WireMethods.h"

#include <capnp/schema.h>
#include <kj/debug.h>

#include <vector>

#include "mqd.capnp.h"

namespace mqd::replay {
namespace {

capnp::InterfaceSchema sessionSchema() { return capnp::Schema::from<wire::Session>(); }

// Entry point by Session ordinal, made once from the schema's method names.
const std::vector<std::optional<EntryPoint>>& byOrdinal() {
  static const std::vector<std::optional<EntryPoint>> table = [] {
    std::vector<std::optional<EntryPoint>> out;
    for (auto method : sessionSchema().getMethods()) {
      out.push_back(entryPointOfMethod(method.getProto().getName()));
    }
    return out;
  }();
  return table;
}

}  // namespace

std::optional<EntryPoint> entryPointOfSessionMethod(uint16_t ordinal) {
  const auto& table = byOrdinal();
  if (ordinal >= table.size()) return std::nullopt;
  return table[ordinal];
}

uint16_t sessionMethodOf(EntryPoint entryPoint) {
  const char* method = entryPointInfo(entryPoint).method;
  KJ_IF_MAYBE(found, sessionSchema().findMethodByName(method)) return found->getOrdinal();
  KJ_FAIL_REQUIRE("no Session method forwards this entry point", nameOf(entryPoint), method);
}

kj::String describeSessionMethod(uint16_t ordinal) {
  if (auto entryPoint = entryPointOfSessionMethod(ordinal)) return kj::str(nameOf(*entryPoint));
  auto methods = sessionSchema().getMethods();
  if (ordinal < methods.size()) return kj::str("Session.", methods[ordinal].getProto().getName());
  return kj::str("Session method ", ordinal);
}

kj::String describeDebuggerMethod(uint16_t ordinal) {
  auto methods = capnp::Schema::from<wire::Debugger>().getMethods();
  if (ordinal < methods.size()) return kj::str(methods[ordinal].getProto().getName());
  return kj::str("Debugger method ", ordinal);
}

}  // namespace mqd::replay
