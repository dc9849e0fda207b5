#include "CpuWatchdog.h"

#include <signal.h>
#include <sys/time.h>

namespace mqd::server {
namespace {

int gLimitSeconds = 0;
int gDepth = 0;

void setTimer(int seconds) {
  itimerval value{};
  value.it_value.tv_sec = seconds;
  ::setitimer(ITIMER_PROF, &value, nullptr);
}

}  // namespace

void CpuWatchdog::setLimit(int seconds) {
  gLimitSeconds = seconds;
  if (seconds > 0) ::signal(SIGPROF, SIG_DFL);  // its default action ends the process
}

CpuWatchdog::Guard::Guard() {
  if (gDepth++ == 0 && gLimitSeconds > 0) {
    setTimer(gLimitSeconds);
    armed_ = true;
  }
}

CpuWatchdog::Guard::~Guard() {
  --gDepth;
  if (armed_) setTimer(0);
}

}  // namespace mqd::server
