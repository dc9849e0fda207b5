// Worker: the process that serves one connection.
//
// Forked by the Supervisor for each accepted connection (no exec: a qemu-user emulated server
// cannot exec itself). It runs the kj event loop and Cap'n Proto RPC on the connection, and
// loads at most one vendor DLL, for at most one session. When the peer disconnects, the worker
// ends (killed by its DisconnectWatchdog if a DLL call keeps it busy past the grace period); a
// DLL crash ends only this worker.
#pragma once

#include <string>

#include "Admission.h"
#include "DllAllowList.h"
#include "SessionBoard.h"

namespace mqd::server {

struct WorkerConfig {
  const DllAllowList* dlls;
  std::string stateDir;       // learned look-ups (empty: not kept)
  uint32_t blockSize;         // target memory block size
  SessionBoard* board;        // shared with the supervisor and the other workers
  SessionBoard::Slot* slot;   // this worker's entry on it (may be null)
  const AdmissionPolicy* admission;  // TLS and token, checked before any RPC
  uint64_t traversalLimitWords;      // the largest message read (--max-message-mib)
  int idleTimeoutS;                  // end the session after this long silent (0: never)
  int dllCpuLimitS;                  // CPU seconds per DLL call (CpuWatchdog; 0: no limit)
  int disconnectGraceMs;             // --shutdown-grace-ms: a worker still busy in the DLL
                                     // this long after its debugger hung up is killed
                                     // (DisconnectWatchdog)
};

// Admits the connection on `fd` (taking ownership; see Admission.h), then serves it until the
// peer disconnects, a message exceeds the traversal limit, or the session stays idle for
// `idleTimeoutS`. Returns the process exit status: 0 after a normal disconnect, a refusal or
// an idle timeout, 1 on an internal failure (an oversized message included).
int runWorker(int fd, const WorkerConfig& config);

}  // namespace mqd::server
