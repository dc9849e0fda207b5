// WireMethods: which method of mqd.capnp a recorded call names. A recording names a call by its
// method's ordinal (record::SessionCall.method, record::DebuggerCall.method); the replay reasons
// in MQD entry points for Session calls and in the generated parameter types for Debugger
// calls. Every ordinal is read from the schema: a Session method's through
// schema/mqs_entry_points.h (whose `method` column names the Session method of each entry
// point), a Debugger method's through its generated Params type. There is no list of method
// names to keep in step with the schema.
#pragma once

#include <capnp/schema.h>
#include <kj/common.h>
#include <kj/debug.h>
#include <kj/string.h>

#include <cstdint>
#include <optional>

#include "EntryPoints.h"
#include "mqd.capnp.h"

namespace mqd::replay {

// The entry point the Session method of that ordinal forwards; none for a Session method that
// forwards none (Session.reposition) and for an ordinal mqd.capnp does not have.
std::optional<EntryPoint> entryPointOfSessionMethod(uint16_t ordinal);

// The ordinal of the Session method that forwards `entryPoint`. Throws (KJ_REQUIRE) for the
// entry points the shim answers itself (version_string, version_compatibility, dll_taddr_width).
uint16_t sessionMethodOf(EntryPoint entryPoint);

// How the replay names a recorded call: "mqs_next_operation", "Session.reposition", or
// "Session method 42" for an ordinal the schema does not have.
kj::String describeSessionMethod(uint16_t ordinal);

// The ordinal of the Debugger method whose parameters are `Params`
// (debuggerMethod<wire::Debugger::FetchDataParams>()): the compiler checks the name, the schema
// gives the number.
template <typename Params>
uint16_t debuggerMethod() {
  static const uint16_t ordinal = [] {
    for (auto method : capnp::Schema::from<wire::Debugger>().getMethods()) {
      if (method.getParamType().getProto().getId() == capnp::typeId<Params>()) {
        return method.getOrdinal();
      }
    }
    KJ_FAIL_ASSERT("no Debugger method takes these parameters");
  }();
  return ordinal;
}

// The Debugger method's name ("fetchData"), or "Debugger method N" for an ordinal the schema
// does not have.
kj::String describeDebuggerMethod(uint16_t ordinal);

}  // namespace mqd::replay
