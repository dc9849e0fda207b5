// EntryPoints: the MQD entry points of schema/mqs_entry_points.h, as C++ code names them.
//
// One enumerator per entry point (EntryPoint::next_operation for mqs_next_operation), and for
// each what the table says: its C name, the method that serves it (MqsClient's, and the
// Session method of mqd.capnp that forwards it, where there is one), and what the shim answers
// when the vendor DLL lacks it.
#pragma once

#include <kj/common.h>
#include <kj/string.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "mqs_entry_points.h"

namespace mqd {

enum class EntryPoint : uint8_t {
#define MQD_ENUMERATOR(result, name, method, parameters, arguments, absent) name,
  MQS_ENTRY_POINTS(MQD_ENUMERATOR)
#undef MQD_ENUMERATOR
};

#define MQD_ONE(result, name, method, parameters, arguments, absent) +1
constexpr size_t kEntryPointCount = 0 MQS_ENTRY_POINTS(MQD_ONE);
#undef MQD_ONE

// What the shim answers when the vendor DLL does not export an entry point (the last column of
// mqs_entry_points.h, which says what each means).
enum class Absent : uint8_t { REQUIRED, SHIM_ANSWERS, NO_ENTRY_POINT, NO_INFORMATION };

struct EntryPointInfo {
  const char* name;    // "mqs_next_operation"
  const char* method;  // "nextOperation"
  Absent absent;
};

const EntryPointInfo& entryPointInfo(EntryPoint entryPoint);
inline const char* nameOf(EntryPoint entryPoint) { return entryPointInfo(entryPoint).name; }

// The entry point a Session method ("nextOperation") forwards, if any.
std::optional<EntryPoint> entryPointOfMethod(kj::StringPtr method);

}  // namespace mqd
