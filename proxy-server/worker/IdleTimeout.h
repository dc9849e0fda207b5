// IdleTimeout: notices that a session has exchanged nothing with its debugger for too long
// (--idle-timeout). Lives on the worker's kj event loop.
#pragma once

#include <kj/async.h>
#include <kj/timer.h>

namespace mqd::server {

class IdleTimeout {
 public:
  // Counts from now. `limit` must be positive.
  IdleTimeout(kj::Timer& timer, kj::Duration limit);

  // Records activity (a byte read from or written to the debugger): the count restarts.
  void touch() { last_ = timer_.now(); }

  // Resolves once `limit` has passed without touch(). Only one wait at a time; the
  // IdleTimeout must outlive the promise.
  kj::Promise<void> expired();

 private:
  kj::Timer& timer_;
  kj::Duration limit_;
  kj::TimePoint last_;
};

}  // namespace mqd::server
