// mqd-proxy doctor: a checklist a user can act on (Cli.h). Each check prints one line:
//   ok    what was found
//   FAIL  what is wrong, then "fix:" and what to do
//   note  something worth knowing that is not an error
// and the exit status is 1 when any check failed. Later checks that need an earlier one
// (the server reachable) are skipped with a line saying so.
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>

#include "Cli.h"
#include "Endpoint.h"
#include "ProxyErrors.h"
#include "mqs_interface.h"

namespace mqd::client::cli {
namespace {

struct Checklist {
  int failures = 0;
  void ok(const std::string& what) { std::printf("ok    %s\n", what.c_str()); }
  void note(const std::string& what) { std::printf("note  %s\n", what.c_str()); }
  void fail(const std::string& what, const std::string& fix) {
    ++failures;
    std::printf("FAIL  %s\n      fix: %s\n", what.c_str(), fix.c_str());
  }
};

// What to do about a failure to connect, by its code.
std::string fixFor(int code, const Endpoint* endpoint) {
  bool ssh = endpoint != nullptr && endpoint->kind == Endpoint::Kind::Ssh;
  switch (code) {
    case MQD_PROXY_ERR_AUTH_FAILED:
      if (endpoint != nullptr && endpoint->kind == Endpoint::Kind::Unix) {
        return "a unix socket is trusted only when it, its directory and its server belong to "
               "you, root or MQD_PROXY_SERVER_UID (server_uid): see the reason above; a token "
               "goes in a private (chmod 600) MQD_PROXY_TOKEN_FILE (token_file)";
      }
      return "MQD_PROXY_TOKEN_FILE (token_file) must name a private (chmod 600) file holding "
             "the token of the server's --token-file";
    case MQD_PROXY_ERR_TLS:
      return "for a tls: server set MQD_PROXY_TLS_CA to the CA that signed its certificate and "
             "MQD_PROXY_TLS_NAME to the name in it; for a plain server use tcp:";
    case MQD_PROXY_ERR_TIMEOUT:
      return "the server did not answer within the timeout: check the host and port, and "
             "raise MQD_PROXY_TIMEOUT for a slow link";
    case MQD_PROXY_ERR_SESSION_REFUSED:
      return "the server refused: see its reason above (a protocol mismatch needs matching "
             "mqd-proxy versions; --max-sessions limits concurrent sessions)";
    default:
      if (endpoint != nullptr && endpoint->kind == Endpoint::Kind::Slurm) {
        return "check that `squeue -j " + endpoint->job + "` lists the job running and yours, "
               "and that `srun --jobid=" + endpoint->job + " --overlap -N1 -n1 " +
               (endpoint->path.empty() ? "mqd-proxy-server" : endpoint->path) +
               " --version` works here (Slurm's commands on PATH, the job's nodes with "
               "mqd-proxy-server installed)";
      }
      if (ssh) {
        return "check that `ssh " +
               (endpoint->port != 0 ? "-p " + std::to_string(endpoint->port) + " " : "") +
               (endpoint->user.empty() ? "" : endpoint->user + "@") +
               endpoint->host + " " +
               (endpoint->path.empty() ? "mqd-proxy-server" : endpoint->path) +
               " --version` works without a prompt (keys or an agent; options in "
               "MQD_PROXY_SSH_OPTIONS), and that mqd-proxy-server is installed there";
      }
      return "start mqd-proxy-server there (`mqd-proxy-server --dll PATH --listen ...`), or "
             "point MQD_PROXY_SERVER (server) at where it listens";
  }
}

}  // namespace

int doctorCommand(Context& c) {
  Checklist list;
  std::printf("mqd-proxy doctor: checking %s\n\n", c.config.server.c_str());

  // 1. Configuration.
  if (c.problems.empty()) {
    list.ok("configuration: " + (c.config.fileRead ? c.config.file : "no configuration file") +
            ", environment and command line are well-formed");
  } else {
    for (const std::string& p : c.problems) {
      list.fail("configuration: " + p, "correct or remove the value (`mqd-proxy config` shows "
                                       "every setting and where it comes from)");
    }
  }
  Endpoint endpoint;
  try {
    endpoint = Endpoint::parse(c.config.server);
  } catch (const std::invalid_argument& e) {
    list.fail(std::string("server: ") + e.what(), "set MQD_PROXY_SERVER (server) to a valid "
                                                  "endpoint");
    std::printf("\n%d problem(s) found\n", list.failures);
    return 1;
  }

  // 2. Reachability and authentication (the handshake is the admission).
  auto io = kj::setupAsyncIo();
  kj::Own<Connection> connection;
  auto start = std::chrono::steady_clock::now();
  try {
    connection = Connection::connectNow(io, c.config);
  } catch (...) {
    ProxyError failure = currentFailure();
    int code = failure.code();
    std::string why = describeFailure(failure);
    list.fail("server reachable and admitting us: " + why, fixFor(code, &endpoint));
    std::printf("skip  the remaining checks need the server\n\n%d problem(s) found\n",
                list.failures);
    return 1;
  }
  double connectMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  list.ok("server reachable at " + endpoint.toString() + " (connected in " +
          formatMs(connectMs) + ")");
  list.ok(std::string("authentication: ") +
          (endpoint.kind == Endpoint::Kind::Ssh     ? "by ssh"
           : endpoint.kind == Endpoint::Kind::Slurm ? "by Slurm (srun, as the job's user)"
           : c.config.tokenFile.empty()         ? "the server asks for no token"
                                                : "the token was accepted") +
          (endpoint.tls ? ", TLS certificate verified" : ""));

  // 3. Version and architecture.
  auto description = connection->proxy().describeRequest().send().wait(io.waitScope);
  auto server = description.getServer();
  if (server.getProtocolVersion() == wire::PROTOCOL_VERSION) {
    list.ok(std::string("version: server ") + server.getVersion().cStr() + ", protocol " +
            std::to_string(server.getProtocolVersion()) + " as this client");
  } else {
    list.fail("version: the server speaks protocol " +
                  std::to_string(server.getProtocolVersion()) + ", this client " +
                  std::to_string(wire::PROTOCOL_VERSION),
              "install the same mqd-proxy release on both sides");
  }
  struct utsname here;
  std::string local = ::uname(&here) == 0 ? here.machine : "unknown";
  std::string arch = std::string(server.getArch().cStr()) + ", " +
                     (server.getBigEndian() ? "big-endian" : "little-endian") + ", " +
                     std::to_string(server.getPointerSize()) + "-byte pointers";
  list.ok("architecture: the server (and the vendor DLL) run on " + arch +
          (local == server.getArch().cStr() ? "; this machine is the same"
                                            : "; this machine is " + local +
                                                  ": the proxy bridges the difference"));

  // 4. Latency.
  std::vector<double> rtt = measureRoundTrips(*connection, io.waitScope, std::max(c.count, 3));
  std::sort(rtt.begin(), rtt.end());
  double median = rtt[rtt.size() / 2];
  std::string latency = "latency: median round trip " + formatMs(median) +
                        "; a cached Open MPI dump takes tens of round trips, about " +
                        formatMs(median * 30);
  if (median > 200) {
    list.fail(latency, "a round trip over 200 ms makes the debugger sluggish: run the server "
                       "closer to the debugger, or check the network");
  } else {
    list.ok(latency);
  }

  // 5. The vendor DLL loads (in a worker, as a debugger's session would).
  std::string dll = c.config.dll;
  if (server.getAnyDll() && dll.empty()) {
    list.fail("vendor DLL: this server loads the DLL the debugger names, and none is set",
              "set MQD_PROXY_DLL (dll) to the DLL's absolute path on the server's host, e.g. "
              "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/libompi_dbg_msgq.so");
  } else if (!server.getAnyDll() && server.getDlls().size() == 0) {
    list.fail("vendor DLL: the server allows none", "restart the server with --dll PATH");
  } else {
    try {
      DllInfo info = probeDll(*connection, io.waitScope, dll);
      std::string what = "vendor DLL: " + info.path + " loads: \"" + info.versionString +
                         "\", compatibility " + std::to_string(info.compatibility);
      list.ok(what);
      if (info.taddrWidth > static_cast<int>(sizeof(mqs_taddr_t))) {
        list.fail("the DLL's target addresses are " + std::to_string(info.taddrWidth) +
                      " bytes, wider than this shim's",
                  "use a 64-bit build of the shim");
      }
    } catch (...) {
      std::string why = describeFailure(currentFailure());
      list.fail("vendor DLL " + (dll.empty() ? std::string("(the server's default)") : dll) +
                    " does not load: " + why,
                dll.empty() || server.getAnyDll()
                    ? "check the path on the server's host; the DLL must be the one of the "
                      "job's own MPI installation and for the server's architecture"
                    : "set MQD_PROXY_DLL (dll) to one of the server's --dll (`mqd-proxy info` "
                      "lists them)");
    }
  }

  if (list.failures == 0) {
    std::printf("\nall checks passed\n");
    return 0;
  }
  std::printf("\n%d problem(s) found\n", list.failures);
  return 1;
}

}  // namespace mqd::client::cli
