// Worker: the process that serves one connection.
//
// Forked by the Supervisor for each accepted connection (no exec: a qemu-user emulated server
// cannot exec itself). It runs the kj event loop and Cap'n Proto RPC on the connection, and
// loads at most one vendor DLL, for at most one session. When the peer disconnects, the worker
// ends; a DLL crash ends only this worker.
#pragma once

#include "DllAllowList.h"

namespace mqd::server {

// Serves the connection on `fd` (taking ownership) until the peer disconnects. Returns the
// process exit status: 0 after a normal disconnect, 1 on an internal failure.
int runWorker(int fd, const DllAllowList& dlls);

}  // namespace mqd::server
