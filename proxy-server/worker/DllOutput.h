// DllOutput: capture what the vendor DLL prints, so it can reach the debugger.
//
// A natively loaded DLL writes its warnings (Open MPI: missing debug types) to the debugger's
// own stderr. In a worker, file descriptors 1 and 2 are redirected into a pipe; the session
// drains it (without blocking) after each callback and at the end of each call and relays the
// bytes to the shim, which writes them to the debugger process's stderr. The worker's own log
// keeps using the original stderr, duplicated before the redirection.
#pragma once

#include <kj/io.h>

#include <string>

namespace mqd::server {

class DllOutput {
 public:
  // Redirects fds 1 and 2 into a fresh pipe. Returns a duplicate of the original stderr for
  // the worker's log (through logSetFd). Throws std::runtime_error on failure.
  DllOutput();
  ~DllOutput();
  DllOutput(const DllOutput&) = delete;
  DllOutput& operator=(const DllOutput&) = delete;

  int originalStderr() const { return originalStderr_.get(); }

  // Everything written since the last drain (possibly empty). Never blocks.
  std::string drain();

 private:
  kj::AutoCloseFd originalStderr_;  // put back on fd 2 when this ends
  kj::AutoCloseFd readEnd_;         // the pipe fds 1 and 2 write into
};

}  // namespace mqd::server
