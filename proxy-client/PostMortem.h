// PostMortem: how the server worker behind a lost session ended, as the shim learns it after
// the connection is gone: from the listening server (Proxy.postMortem with the session's
// ticket, Connection::postMortem) or, for a --stdio server reached through ssh, from the
// post-mortem line it wrote on ssh's stderr (StdioTransport.h).
#pragma once

#include <string>

namespace mqd::client {

struct PostMortem {
  bool known = false;  // the server knows the session (ssh: it wrote its line)
  bool ended = false;  // and the worker has ended
  int worker = 0;
  std::string how;       // "exit 0", "SIGSEGV", ...
  std::string dll;
  std::string lastCall;  // vendor DLL entry point running or last run
};

}  // namespace mqd::client
