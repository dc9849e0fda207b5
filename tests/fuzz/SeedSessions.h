// SeedSessions: what the recorded seed sessions (make-corpus) and fuzz_server_connection must
// agree on, for a recorded client byte stream to replay as the same conversation.
//
// A client's replies answer the server's questions in the order the server asks them, and that
// order depends on the server's configuration: its memory block size (how it splits fetches)
// and its learned state (a server with learned look-ups asks for them up front). The seeds are
// recorded from a server with this block size, no state directory and no look-up discovery
// (--no-lookup-discovery: a first session's look-ups asked one by one, the DLL's own questions,
// not a batch found by a forked child, whose names come from the DLL, never from the client),
// and the fuzz target's worker is configured the same way.
#pragma once

#include <cstdint>

namespace mqd::fuzz {

// The server's --block-size; small, to keep recorded sessions (and so the seeds) small.
constexpr uint32_t kSeedBlockSize = 4096;

}  // namespace mqd::fuzz
