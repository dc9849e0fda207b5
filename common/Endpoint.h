// Endpoint: where a server listens and a shim connects, as written by users.
//
//   unix:/absolute/or/relative/path     a unix-domain stream socket
//   tcp:HOST:PORT                       TCP; HOST is a name, an IPv4 address or [IPv6]
//   tcp:PORT, tcp::PORT                 TCP on the loopback address 127.0.0.1
//   tls:HOST:PORT (tls:PORT, tls::PORT) TCP carrying TLS (kj-tls): the server needs a
//                                       certificate and key, the client verifies them
//   ssh://[USER@]HOST[:PORT][/PATH]     clients only: run PATH (default mqd-proxy-server from
//                                       the remote PATH; /~/x is x in the remote home) with
//                                       --stdio through ssh, and speak over its stdin/stdout
//   slurm:JOB[@NODE][/PATH]             clients only: run /PATH (default mqd-proxy-server from
//                                       the node's PATH) with --stdio --node-memory on NODE of
//                                       the running Slurm job JOB, through srun in a step of
//                                       the job; without @NODE, one on every node of the job
//                                       (SlurmJob.h)
//
// The same syntax is used by `mqd-proxy-server --listen` and by MQD_PROXY_SERVER. A host is
// never implied to be a wildcard: listening on every interface must be asked for by address
// (tcp:0.0.0.0:PORT, tcp:[::]:PORT).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mqd {

struct Endpoint {
  enum class Kind { Unix, Tcp, Ssh, Slurm };
  Kind kind = Kind::Unix;
  std::string path;  // Unix: the socket; Ssh, Slurm: the server program ("" = mqd-proxy-server)
  std::string host;  // Tcp, Ssh: without brackets; Slurm: the node ("" = every node of the job)
  std::string job;   // Slurm: the job id
  uint16_t port = 0; // Tcp; Ssh: 0 = ssh's own default
  std::string user;  // Ssh: "" = ssh's own default
  bool tls = false;   // Tcp: written tls:..., the stream carries TLS

  // Parses `text`; throws std::invalid_argument with a message that quotes the input and
  // shows the accepted forms.
  static Endpoint parse(const std::string& text);
  static Endpoint parseSsh(const std::string& text);    // text starts with ssh://
  static Endpoint parseSlurm(const std::string& text);  // text starts with slurm:

  // The canonical user-facing form, e.g. "tcp:[::1]:4000", "tls:example.org:4000".
  std::string toString() const;

  // The form kj's network parser accepts ("unix:/p", "host:port", "[::1]:port"); throws
  // std::invalid_argument for ssh:// and slurm:, which a launcher reaches.
  std::string toKjAddress() const;

  // Reached through a launcher that runs the server with --stdio: ssh://, slurm:.
  bool isLaunched() const { return kind == Kind::Ssh || kind == Kind::Slurm; }

  // The program that starts a launched server ("ssh", "srun"), as log lines and errors name
  // it; "" for the others.
  const char* launcherName() const {
    return kind == Kind::Ssh ? "ssh" : kind == Kind::Slurm ? "srun" : "";
  }

  // Whether HOST is written as a loopback address or "localhost" (unix sockets count as
  // loopback). A name is not resolved: a server decides on the address it actually binds.
  bool isLoopback() const;
};

// The first field of the line a `--stdio` server writes to stderr when its worker ends:
//   mqd-proxy-postmortem<TAB>PID<TAB>HOW<TAB>LAST CALL<TAB>DLL
// (HOW as "exit N" or a signal name), so that a shim at the other end of ssh learns how the
// worker ended without asking a server that is gone.
constexpr const char* kStdioPostMortemPrefix = "mqd-proxy-postmortem";

// Default unix socket for a server started without --listen and a shim without
// MQD_PROXY_SERVER: $XDG_RUNTIME_DIR/mqd-proxy.sock, else mqd-proxy.sock in
// privateSocketDirectory(), never a name in a shared directory.
std::string defaultSocketPath();

// The default socket's directory without $XDG_RUNTIME_DIR, /tmp/mqd-proxy-$UID: private to the
// user (mode 0700), made and checked by client and server alike (SocketTrust.h).
std::string privateSocketDirectory();

}  // namespace mqd
