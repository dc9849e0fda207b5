// LookupKey: one look-up by name that a vendor DLL made through the debugger (a symbol, a
// function, a type, a field of a type, a type's size), and its wire form (wire::Lookup), used
// both to prefetch learned look-ups in one round trip and to keep them on disk.
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include "mqd.capnp.h"

namespace mqd {

struct LookupKey {
  enum Kind { Symbol, Function, Type, Field, SizeOf } kind;
  std::string name;   // symbol, function or type name
  int lang = 0;
  std::string field;  // Field
  bool operator<(const LookupKey& o) const {
    return std::tie(kind, name, lang, field) < std::tie(o.kind, o.name, o.lang, o.field);
  }
  bool operator==(const LookupKey& o) const {
    return std::tie(kind, name, lang, field) == std::tie(o.kind, o.name, o.lang, o.field);
  }

  void writeTo(wire::Lookup::Builder out) const;
  // Nothing for a kind this build does not know (a newer writer's).
  static std::optional<LookupKey> from(wire::Lookup::Reader in);
};

}  // namespace mqd
