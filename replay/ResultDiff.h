// ResultDiff: where two Cap'n Proto values of one struct type first differ, said so that a
// person can act on it: "operation.desiredTag: recorded 5, replayed 7". `mqd-proxy replay`
// compares each replayed result with the recorded one through it.
//
// Fields are compared by value in schema order (the active union member, then the rest).
// Bulk payloads compare by content, not by encoding (compressed or not); a `walk` Bulk is
// read as the CommunicatorWalk it carries and compared field by field. Capabilities and
// AnyPointer fields are not compared, nor fields annotated $readAhead (which memory the shim
// should read ahead: hints that depend on what the server learned in earlier sessions, not
// answers the debugger sees).
#pragma once

#include <capnp/any.h>
#include <capnp/schema.h>

#include <string>

namespace mqd::replay {

// "" when equal.
std::string firstDifference(capnp::StructSchema type, capnp::AnyPointer::Reader recorded,
                            capnp::AnyPointer::Reader replayed);

}  // namespace mqd::replay
