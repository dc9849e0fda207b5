// WalkLimits: the most a recorded walk (wire CommunicatorWalk) holds. The server does not
// record a walk beyond them (CommunicatorWalker); the client refuses one as malformed
// (RecordedWalk), so a hostile peer cannot make a debugger iterate an arbitrary number of
// records (Cap'n Proto charges a list of empty structs only one word per element against the
// traversal limit, so a small message can claim tens of millions of them).
#pragma once

#include <cstddef>

namespace mqd {

constexpr size_t kMaxWalkCommunicators = 1u << 16;
constexpr size_t kMaxWalkOperations = 1u << 20;  // in all queues of all communicators

}  // namespace mqd
