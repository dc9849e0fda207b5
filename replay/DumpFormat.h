// DumpFormat: a replayed dump (ReplayedDump) written exactly as the gdb front end writes a
// live one (frontends/gdb/mqd_gdb/render.py), so the two can be compared byte for byte:
//   json  `mqd dump --all --json`: Python's json.dumps(dumps, indent=1) and a newline (keys in
//         the front end's order, non-ASCII escaped as \uXXXX, bytes decoded as UTF-8 with
//         Python's "replace" rule);
//   text  `mqd dump --all`: the front end's render() of each process, one after the other.
#pragma once

#include <string>
#include <vector>

#include "ReplayedDump.h"

namespace mqd::replay {

std::string dumpJson(const std::vector<ProcessView>& processes);
std::string dumpText(const std::vector<ProcessView>& processes);

// Python's bytes.decode("utf-8", "replace") as code points (U+FFFD for each maximal invalid
// subsequence), of `bytes` up to the first NUL: how the front end reads a char array.
std::u32string decodeLikePython(const char* bytes, size_t size);

}  // namespace mqd::replay
