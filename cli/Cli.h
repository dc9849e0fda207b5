// The mqd-proxy command-line client: what its commands share. Each command lives in its own
// file (cli/<Name>Command.cc) and is dispatched from MqdProxyCli.cc; each returns the
// process's exit status: 0 success, 1 failure (said on stderr), 2 usage error.
#pragma once

#include <kj/async-io.h>

#include <chrono>
#include <string>
#include <vector>

#include "ClientConfig.h"
#include "Connection.h"
#include "mqd.capnp.h"

namespace mqd::client::cli {

struct Context {
  ClientConfig config;                // loaded, then --server/--timeout/--dll applied
  std::vector<std::string> problems;  // from loading the configuration
  bool json = false;                  // --json
  int count = 5;                      // --count (ping)
  std::vector<std::string> args;      // the command's own operands
};

int statsCommand(Context& c);
int pingCommand(Context& c);
int infoCommand(Context& c);
int doctorCommand(Context& c);
int configCommand(Context& c);
// graph: runs the deadlock analysis (python3 -m mqd_analysis graph) on c.args; returns only
// when it cannot (GraphCommand.cc). graphUsage(): its operands and what it does, in the form
// replay::replayUsage() has.
int graphCommand(Context& c);
const char* graphUsage();

// ---- shared by the commands ----

// Milliseconds as "0.214 ms" / "12.3 ms".
std::string formatMs(double ms);

// "stopped by the server" sentences: the failure's code's text and its detail.
std::string describeFailure(const ProxyError& e);

// Round-trip times of `count` Proxy.describe calls on `connection`, in milliseconds.
std::vector<double> measureRoundTrips(Connection& connection, kj::WaitScope& waitScope,
                                      int count);

// Opens a session for `dll` ("" = the server's default) on `connection`, which must have none
// yet (a server worker serves one session, so one DLL, per connection), and reads how the
// server describes the loaded DLL. Needs no debugger: loading a DLL and asking its version
// makes no callbacks. Throws like Connection::open. The connection is spent afterwards.
DllInfo probeDll(Connection& connection, kj::WaitScope& waitScope, const std::string& dll);
// The same on a connection of its own (an ssh:// connection costs ssh's start-up: the
// commands reuse the one they described the server on for the first DLL).
DllInfo probeDll(kj::AsyncIoContext& io, const ClientConfig& config, const std::string& dll);

}  // namespace mqd::client::cli
