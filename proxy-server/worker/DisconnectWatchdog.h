// DisconnectWatchdog: ends a worker that is stuck in the vendor DLL after its debugger left.
//
// The worker runs vendor DLL calls on its only event-loop thread. A DLL that loops on corrupt
// target data (e.g. a circular list) without asking the debugger for anything never yields,
// so the worker cannot notice that the debugger gave up on the call (MQD_PROXY_ERR_TIMEOUT
// drops the connection) and would spin forever. The watchdog is a thread that watches the
// connection for the peer's hang-up. A worker that is not busy ends by itself when the peer
// hangs up (and destroys the watchdog on the way); one still alive `grace` after the hang-up
// is busy beyond help: the watchdog logs which DLL call it was in and sends the worker
// SIGKILL, which the supervisor reports like any other death of a worker.
#pragma once

#include <kj/io.h>

#include <chrono>
#include <thread>

#include "SessionBoard.h"

namespace mqd::server {

class DisconnectWatchdog {
 public:
  // Watches `connectionFd` (not taken: the watchdog polls its own duplicate). `slot`, if any,
  // names the DLL and the last call in the log line. Throws std::system_error when the thread
  // or its descriptors cannot be created.
  DisconnectWatchdog(int connectionFd, std::chrono::milliseconds grace,
                     kj::Maybe<const SessionBoard::Slot&> slot);
  // Stops and joins the thread: the worker is ending normally.
  ~DisconnectWatchdog();
  DisconnectWatchdog(const DisconnectWatchdog&) = delete;
  DisconnectWatchdog& operator=(const DisconnectWatchdog&) = delete;

 private:
  void watch();

  kj::AutoCloseFd connectionFd_;  // a duplicate
  kj::AutoCloseFd stopRead_;      // a pipe: the destructor writes to stop the thread
  kj::AutoCloseFd stopWrite_;
  std::chrono::milliseconds grace_;
  kj::Maybe<const SessionBoard::Slot&> slot_;
  std::thread thread_;
};

}  // namespace mqd::server
