// CpuWatchdog: a bound on the CPU time one vendor DLL entry point may burn.
//
// A DLL that loops forever on corrupt target data would hold its worker forever: the event
// loop runs on the same thread, so the worker cannot even notice its client give up. While a
// Guard lives, the process's profiling timer (ITIMER_PROF: user and system CPU time) is armed
// with the limit; if it expires, SIGPROF's default action ends the worker, the supervisor logs
// "killed by SIGPROF in vendor DLL ... during mqs_...", and the debugger's call (if it is still
// waiting) gets MQD_PROXY_ERR_WORKER_DIED saying so. Waiting for the debugger costs no CPU, so a
// slow network never trips it. Only in workers: the server never loads a DLL itself.
#pragma once

namespace mqd::server {

class CpuWatchdog {
 public:
  // Seconds of CPU time per outermost DLL call (--dll-cpu-limit); 0 disables the watchdog.
  static void setLimit(int seconds);

  // Arms the timer for the outermost call; nested guards do nothing.
  class Guard {
   public:
    Guard();
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    bool armed_ = false;
  };
};

}  // namespace mqd::server
