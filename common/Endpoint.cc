#include "Endpoint.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace mqd {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw std::invalid_argument("invalid endpoint \"" + text + "\": " + why +
                              " (expected unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, "
                              "ssh://[USER@]HOST[:PORT][/PATH] or slurm:JOB[@NODE][/PATH])");
}

// Characters that never appear in a user or host name, and would let the value act as an
// option or a shell word on either side of ssh.
// Control characters (a NUL would cut the argument ssh gets short of what was shown) count too.
bool hasControl(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// What a shell would interpret.
constexpr const char* kShellCharacters = " \t\n'\"\\;&|`$<>(){}*?!#";

bool unsafeName(const std::string& s) {
  return s.empty() || s[0] == '-' || hasControl(s) ||
         s.find_first_of(kShellCharacters) != std::string::npos;
}

// A server path a launcher runs: no control or shell characters, nor any of `extra`.
bool unsafePath(const std::string& s, const std::string& extra) {
  return hasControl(s) || s.find_first_of(kShellCharacters + extra) != std::string::npos;
}

}  // namespace

Endpoint Endpoint::parseSsh(const std::string& text) {
  Endpoint e;
  e.kind = Kind::Ssh;
  std::string rest = text.substr(6);
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    e.path = rest.substr(slash);
    rest = rest.substr(0, slash);
    // ssh://host/~/bin/mqd-proxy-server names a path in the remote home directory.
    if (e.path.rfind("/~/", 0) == 0) e.path = e.path.substr(1);
    if (e.path == "/") e.path.clear();
    if (!e.path.empty() && unsafePath(e.path, "")) {
      bad(text, "the server path contains a character ssh's remote shell would interpret");
    }
  }
  size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    e.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (unsafeName(e.user)) bad(text, "invalid user name");
  }
  std::string portText;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) bad(text, "unterminated [IPv6] host");
    e.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') bad(text, "unexpected text after ]");
      portText = rest.substr(close + 2);
      if (portText.empty()) bad(text, "empty port");
    }
  } else {
    size_t colon = rest.find(':');
    e.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      portText = rest.substr(colon + 1);
      if (portText.empty()) bad(text, "empty port");
    }
  }
  if (e.host.empty()) bad(text, "empty host");
  if (unsafeName(e.host) || e.host.find_first_of("[]@") != std::string::npos) {
    bad(text, "invalid host");
  }
  if (!portText.empty()) {
    if (portText.size() > 5 || portText.find_first_not_of("0123456789") != std::string::npos) {
      bad(text, "port must be a number");
    }
    unsigned long port = std::strtoul(portText.c_str(), nullptr, 10);
    if (port == 0 || port > 65535) bad(text, "port out of range");
    e.port = static_cast<uint16_t>(port);
  }
  return e;
}

Endpoint Endpoint::parseSlurm(const std::string& text) {
  Endpoint e;
  e.kind = Kind::Slurm;
  std::string rest = text.substr(6);
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    // srun runs it without a shell, on a node whose working directory is the caller's: only
    // an absolute path means the same there.
    e.path = rest.substr(slash);
    rest = rest.substr(0, slash);
    if (e.path == "/" || unsafePath(e.path, "~")) {
      bad(text, "the server path must be an absolute path of plain characters");
    }
  }
  size_t at = rest.find('@');
  e.job = rest.substr(0, at);
  // Slurm's job ids: 1234, an array task 1234_7, a heterogeneous component 1234+1.
  if (e.job.empty() || e.job.size() > 32 || !std::isdigit(static_cast<unsigned char>(e.job[0])) ||
      e.job.find_first_not_of("0123456789_+") != std::string::npos) {
    bad(text, "the job must be a Slurm job id (1234, 1234_7, 1234+1)");
  }
  if (at != std::string::npos) {
    e.host = rest.substr(at + 1);
    if (unsafeName(e.host) || e.host.find_first_of("[]@,:") != std::string::npos) {
      bad(text, "invalid node name");
    }
  }
  return e;
}

Endpoint Endpoint::parse(const std::string& text) {
  Endpoint e;
  if (text.rfind("ssh://", 0) == 0) return parseSsh(text);
  if (text.rfind("slurm:", 0) == 0) return parseSlurm(text);
  if (text.rfind("unix:", 0) == 0) {
    e.kind = Kind::Unix;
    e.path = text.substr(5);
    if (e.path.empty()) bad(text, "empty socket path");
    return e;
  }
  bool tcp = text.rfind("tcp:", 0) == 0;
  bool tls = text.rfind("tls:", 0) == 0;
  if (!tcp && !tls) bad(text, "unknown scheme");
  e.kind = Kind::Tcp;
  e.tls = tls;
  std::string rest = text.substr(4);
  std::string portText;
  bool hostless = !rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos;
  if (hostless || (rest.size() > 1 && rest[0] == ':' &&
                   rest.find_first_not_of("0123456789", 1) == std::string::npos)) {
    // tcp:PORT and tcp::PORT: the loopback address, never a wildcard.
    e.host = "127.0.0.1";
    portText = hostless ? rest : rest.substr(1);
  } else if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) bad(text, "unterminated [IPv6] host");
    e.host = rest.substr(1, close - 1);
    if (close + 1 >= rest.size() || rest[close + 1] != ':') bad(text, "missing :PORT");
    portText = rest.substr(close + 2);
  } else {
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos) bad(text, "missing :PORT");
    e.host = rest.substr(0, colon);
    if (e.host.find(':') != std::string::npos) bad(text, "write IPv6 hosts as [ADDR]");
    portText = rest.substr(colon + 1);
  }
  if (e.host.empty()) bad(text, "empty host");
  // No host name or address contains a bracket; "tcp:[[]:1" would otherwise give a host that
  // toString() cannot write back.
  if (e.host.find_first_of("[]") != std::string::npos) bad(text, "stray [ or ] in the host");
  if (portText.empty() || portText.size() > 5 ||
      portText.find_first_not_of("0123456789") != std::string::npos) {
    bad(text, "port must be a number");
  }
  unsigned long port = std::strtoul(portText.c_str(), nullptr, 10);
  if (port > 65535) bad(text, "port out of range");
  e.port = static_cast<uint16_t>(port);
  return e;
}

std::string Endpoint::toString() const {
  if (kind == Kind::Unix) return "unix:" + path;
  if (kind == Kind::Ssh) {
    bool v6 = host.find(':') != std::string::npos;
    std::string h = v6 ? "[" + host + "]" : host;  // parse() needs the brackets, port or not
    return "ssh://" + (user.empty() ? "" : user + "@") + h +
           (port != 0 ? ":" + std::to_string(port) : "") +
           (path.empty() ? "" : (path[0] == '/' ? path : "/" + path));
  }
  if (kind == Kind::Slurm) return "slurm:" + job + (host.empty() ? "" : "@" + host) + path;
  bool v6 = host.find(':') != std::string::npos;
  return (tls ? "tls:" : "tcp:") + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Endpoint::toKjAddress() const {
  if (kind == Kind::Unix) return "unix:" + path;
  if (isLaunched()) {
    throw std::invalid_argument(toString() + " is reached through " + launcherName() +
                                ", not an address");
  }
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool Endpoint::isLoopback() const {
  if (kind == Kind::Unix) return true;
  if (kind == Kind::Slurm) return false;
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string privateSocketDirectory() { return "/tmp/mqd-proxy-" + std::to_string(geteuid()); }

std::string defaultSocketPath() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') return std::string(runtime) + "/mqd-proxy.sock";
  return privateSocketDirectory() + "/mqd-proxy.sock";
}

}  // namespace mqd
