// Replay: `mqd-proxy replay FILE [--dll PATH] [--stats]` (with mqd-proxy's --server, --timeout
// and --json): plays a recorded session (MQD_PROXY_RECORD, schema/record.capnp) against a
// server, offline: no debugger, no job.
//
// It opens a session like the recorded one (the recorded DLL, or --dll; the recorded cache
// policy and compression), sends the recorded Session calls in their order (overlapping where
// they overlapped), answers the server's Debugger requests from the recording
// (RecordedDebugger), and compares every result, and the notifications that came with it,
// with the recorded ones (ResultDiff). Then it prints the session's message queues as the gdb
// front end prints them (ReplayedDump, DumpFormat: text, or with --json the JSON of
// `mqd dump --all --json`), and on stderr what it did: calls, callbacks answered and unrecorded,
// the time taken against the recorded session's (--stats: per entry point).
//
// Exit status: 0 when every result matched the recording; 1 when one did not (the first
// difference is named: call, entry point, field, both values) or the server stopped
// answering; 2 on a usage error, a recording that cannot be read (the message names the file
// and what is wrong), or a server that cannot be reached or refuses the session.
#pragma once

#include <string>
#include <vector>

#include "ClientConfig.h"

namespace mqd::replay {

using client::ClientConfig;

// `args` are the command's own arguments (after "replay"); `config` carries --server and
// --timeout. Returns the exit status.
int replayCommand(const ClientConfig& config, const std::vector<std::string>& args, bool json);

// The command's operands and what it does, for mqd-proxy --help: "OPERANDS\nTEXT", the form
// of a command's description in common/CommandLine.h's help layout.
const char* replayUsage();

}  // namespace mqd::replay
