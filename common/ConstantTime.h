// ConstantTime: comparing secrets without telling an attacker how much of a guess was right.
#pragma once

#include <string_view>

namespace mqd {

// True when `a` and `b` hold the same bytes. The time taken depends only on the lengths of
// the two inputs, never on where they first differ: every byte of the longer input is
// examined, and a length mismatch is folded into the same accumulator instead of returning
// early. (The lengths themselves are not hidden.)
bool constantTimeEqual(std::string_view a, std::string_view b);

}  // namespace mqd
