#include "ClientConfig.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "Endpoint.h"
#include "LearnedLookups.h"
#include "RegularFile.h"

namespace mqd::client {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string setText(std::string& field, const std::string& value) {
  field = value;
  return "";
}

std::string setServer(ClientConfig& c, const std::string& v) {
  c.server = v;  // kept even when malformed: connecting reports the same problem to the debugger
  try {
    std::vector<std::string> servers = c.servers();
    if (servers.size() <= 1) Endpoint::parse(v);
    for (const std::string& s : servers) Endpoint::parse(s);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string setServerUid(ClientConfig& c, const std::string& v) {
  long long uid = -1;
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.size() < 11) {
    uid = std::stoll(v);
  } else {
    struct passwd entry;
    struct passwd* found = nullptr;
    char buffer[4096];
    if (::getpwnam_r(v.c_str(), &entry, buffer, sizeof buffer, &found) == 0 && found) {
      uid = found->pw_uid;
    }
  }
  if (uid < 0 || uid >= 0xffffffffll) {
    return "\"" + v + "\" is no user name or uid on this machine";
  }
  c.serverUser = v;
  c.serverUid = uid;
  return "";
}

// `v` as a number from `min` to `max` (no NaN, nothing after it); nullopt otherwise.
std::optional<double> numberIn(const std::string& v, double min, double max) {
  char* end = nullptr;
  double n = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || std::isnan(n) || !(n >= min) || n > max) return std::nullopt;
  return n;
}

std::string setTimeout(ClientConfig& c, const std::string& v) {
  // At least a millisecond (the deadline's unit): 1e-9 is no timeout anyone means.
  std::optional<double> seconds = numberIn(v, 0.001, 86400);
  if (!seconds) return "\"" + v + "\" is not a number of seconds from 0.001 to 86400";
  c.timeout = std::chrono::milliseconds(static_cast<long long>(*seconds * 1000.0 + 0.5));
  return "";
}

std::string showTimeout(const ClientConfig& c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(c.timeout.count()) / 1000.0);
  return buf;
}

// read_cost is written in seconds per MiB (a debugger's reads are seconds per MiB over a
// network, milliseconds locally) and kept per byte.
constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kMaxReadCostPerMiB = 1e6;

std::string setReadCost(ClientConfig& c, const std::string& v) {
  if (v == "measured") {
    c.readCost.reset();
    return "";
  }
  std::optional<double> perMiB = numberIn(v, 0, kMaxReadCostPerMiB);
  if (!perMiB) {
    return "\"" + v + "\" is not measured or a number of seconds per MiB from 0 to 1e6";
  }
  c.readCost = *perMiB / kBytesPerMiB;
  return "";
}

std::string showReadCost(const ClientConfig& c) {
  if (!c.readCost) return "measured";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", *c.readCost * kBytesPerMiB);
  return buf;
}

std::string setLog(ClientConfig& c, const std::string& v) {
  try {
    c.logLevel = parseLogLevel(v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string setCache(ClientConfig& c, const std::string& v) {
  if (v == "off") {
    c.cache = wire::CachePolicy::OFF;
  } else if (v == "call") {
    c.cache = wire::CachePolicy::CALL;
  } else if (v == "epoch") {
    c.cache = wire::CachePolicy::EPOCH;
  } else {
    return "\"" + v + "\" is not off, call or epoch";
  }
  return "";
}

std::string setStateDir(ClientConfig& c, const std::string& v) {
  if (v == "off") {
    c.stateDir.clear();
    return "";
  }
  if (v[0] != '/') return "expected an absolute directory or off, got \"" + v + "\"";
  c.stateDir = v;
  return "";
}

std::string showCache(const ClientConfig& c) {
  switch (c.cache) {
    case wire::CachePolicy::OFF: return "off";
    case wire::CachePolicy::CALL: return "call";
    default: return "epoch";
  }
}

std::string setCompress(ClientConfig& c, const std::string& v) {
  if (v == "auto") {
    c.compress = ClientConfig::Compress::Auto;
  } else if (v == "on") {
    c.compress = ClientConfig::Compress::On;
  } else if (v == "off") {
    c.compress = ClientConfig::Compress::Off;
  } else {
    return "\"" + v + "\" is not auto, on or off";
  }
  return "";
}

std::string showCompress(const ClientConfig& c) {
  switch (c.compress) {
    case ClientConfig::Compress::On: return "on";
    case ClientConfig::Compress::Off: return "off";
    default: return "auto";
  }
}

std::string homeDirectory() {
  if (const char* home = env("HOME")) return home;
  struct passwd* pw = ::getpwuid(::getuid());
  return (pw != nullptr && pw->pw_dir != nullptr) ? pw->pw_dir : "";
}

// Applies `value` for `s`, recording the source or the problem.
void applyOne(ClientConfig& c, const Setting& s, const std::string& value,
              const std::string& source, std::vector<std::string>* problems) {
  std::string problem = s.apply(c, value);
  if (problem.empty() || std::string(s.key) == "server") c.sources[s.key] = source;
  if (!problem.empty()) {
    std::string label = source == s.variable ? source : source + ": " + s.key;
    problems->push_back(label + ": " + problem + "; using " +
                        (s.show(c).empty() ? "the default" : "\"" + s.show(c) + "\""));
  }
}

void readFile(ClientConfig& c, std::vector<std::string>* problems) {
  if (c.file.empty()) return;
  std::string text;
  try {
    text = readRegularFile(c.file, ClientConfig::kMaxFileBytes);
  } catch (const FileRefused& e) {
    if (!e.missing()) {
      problems->push_back(std::string(e.what()) + "; the configuration file was not read");
    }
    return;
  }
  std::istringstream in(text);
  c.fileRead = true;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string where = c.file + ":" + std::to_string(number);
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      problems->push_back(where + ": expected `key = value`, got \"" + line + "\"");
      continue;
    }
    std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    const Setting* found = nullptr;
    for (const Setting& s : settings()) {
      if (key == s.key) found = &s;
    }
    if (found == nullptr) {
      problems->push_back(where + ": unknown setting \"" + key + "\" (see mqd-proxy --help)");
      continue;
    }
    applyOne(c, *found, value, where, problems);
  }
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"server", "MQD_PROXY_SERVER",
       "the server: unix:PATH, tcp:HOST:PORT (IPv6: tcp:[ADDR]:PORT; tcp:PORT is\n"
       "127.0.0.1), tls:HOST:PORT for a server listening with TLS, or\n"
       "ssh://[USER@]HOST[:PORT][/PATH/TO/mqd-proxy-server] to start the server over ssh\n"
       "(`mqd-proxy-server --stdio`: ssh authenticates, no port or token is needed).\n"
       "Several servers, separated by spaces: one with --node-memory on each node of a\n"
       "job; each process is served by the one whose node runs its MPI rank.\n"
       "slurm:JOB[/PATH/TO/mqd-proxy-server]: one on every node of the running Slurm job\n"
       "JOB, each started by srun in a step of the job (slurm:JOB@NODE: on that node).\n"
       "Default unix:$XDG_RUNTIME_DIR/mqd-proxy.sock, else\n"
       "unix:/tmp/mqd-proxy-$UID/mqd-proxy.sock (a directory private to you, made 0700)",
       setServer, [](const ClientConfig& c) { return c.server; }},
      {"server_uid", "MQD_PROXY_SERVER_UID",
       "a user (name or uid) whose server you trust on a unix: socket, besides yourself\n"
       "and root, e.g. a shared server's service account. Before sending anything the\n"
       "client checks that the socket's directory is not writable by group or others\n"
       "(unless sticky), and that the socket and the process listening on it belong to\n"
       "one of these users. Default: none",
       setServerUid, [](const ClientConfig& c) { return c.serverUser; }},
      {"dll", "MQD_PROXY_DLL",
       "the vendor DLL to use on the server: a path or base name on its allow-list (over\n"
       "ssh, without --dll on the remote side: the DLL's path on that host). Default: the\n"
       "server's first --dll",
       [](ClientConfig& c, const std::string& v) { return setText(c.dll, v); },
       [](const ClientConfig& c) { return c.dll; }},
      {"timeout", "MQD_PROXY_TIMEOUT",
       "seconds (fractions allowed, 0.001 to 86400) without any sign of progress from\n"
       "the server before a call fails with MQD_PROXY_ERR_TIMEOUT. Default 30",
       setTimeout, showTimeout},
      {"cache", "MQD_PROXY_CACHE",
       "off: forward every call and callback; call: look-ups for the session, target\n"
       "memory within one mqs_* call; epoch: memory for the epoch (from one\n"
       "mqs_update_communicator_list to the next), recorded walks, learned look-ups and\n"
       "memory. Default epoch",
       setCache, showCache},
      {"state_dir", "MQD_PROXY_STATE_DIR",
       "where the shim keeps, per vendor DLL build, the look-ups its sessions made, so\n"
       "that it answers them ahead at mqs_setup_image, in the same request: a server\n"
       "that never saw the DLL (a new node) then need not ask one by one; and the\n"
       "set-ups it records, to answer a later session's set-up of the same process\n"
       "without waiting once its inputs prove the same. Under the epoch cache only;\n"
       "off: keep nothing on disk (set-up records are then kept in memory, for\n"
       "the debugger process's sessions only). Default $XDG_STATE_HOME/mqd-proxy, else\n"
       "~/.local/state/mqd-proxy (the server's default --state-dir)",
       setStateDir,
       [](const ClientConfig& c) { return c.stateDir.empty() ? std::string("off") : c.stateDir; }},
      {"compress", "MQD_PROXY_COMPRESS",
       "zstd for bulk data: auto (on for TCP and ssh, off for unix sockets), on, off.\n"
       "Default auto",
       setCompress, showCompress},
      {"read_cost", "MQD_PROXY_READ_COST",
       "what the debugger's own reads of target memory cost, in seconds per MiB, for\n"
       "the one rule that weighs reading memory again (to prove a rank refreshed ahead,\n"
       "or a guess of its first update) against the round trips to the server it saves:\n"
       "measured (from the debugger's last 64 reads that returned bytes) or a number from 0\n"
       "(reading is free) to 1e6, fixed, for a debugger whose read timings mislead.\n"
       "Default measured",
       setReadCost, showReadCost},
      {"log", "MQD_PROXY_LOG",
       "error, warn, info, debug or trace (trace: every mqs_* call with its duration\n"
       "and the callbacks it caused). Default warn",
       setLog, [](const ClientConfig& c) { return std::string(logLevelName(c.logLevel)); }},
      {"log_file", "MQD_PROXY_LOG_FILE",
       "append the log to this file instead of the debugger's stderr (created 0600; a\n"
       "link, a FIFO or another user's file is refused). Default: stderr",
       [](ClientConfig& c, const std::string& v) { return setText(c.logFile, v); },
       [](const ClientConfig& c) { return c.logFile; }},
      {"token_file", "MQD_PROXY_TOKEN_FILE",
       "a file holding the token the server was given (--token-file); it must be private\n"
       "to its owner (chmod 600). Default: no token",
       [](ClientConfig& c, const std::string& v) { return setText(c.tokenFile, v); },
       [](const ClientConfig& c) { return c.tokenFile; }},
      {"tls_ca", "MQD_PROXY_TLS_CA",
       "PEM file of the CA certificate(s) that signed a tls: server's certificate.\n"
       "Default: the system's trust store",
       [](ClientConfig& c, const std::string& v) { return setText(c.tlsCa, v); },
       [](const ClientConfig& c) { return c.tlsCa; }},
      {"tls_name", "MQD_PROXY_TLS_NAME",
       "the host name the tls: server's certificate must name. Default: the HOST of\n"
       "the server setting",
       [](ClientConfig& c, const std::string& v) { return setText(c.tlsName, v); },
       [](const ClientConfig& c) { return c.tlsName; }},
      {"ssh", "MQD_PROXY_SSH",
       "the ssh program that starts ssh:// servers. Default ssh (from PATH)",
       [](ClientConfig& c, const std::string& v) { return setText(c.ssh, v); },
       [](const ClientConfig& c) { return c.ssh; }},
      {"ssh_options", "MQD_PROXY_SSH_OPTIONS",
       "extra arguments for ssh, split at white space, e.g. \"-i ~/.ssh/cluster -J\n"
       "login.example.org\" (~/.ssh/config applies too). The shim always adds -T, -o\n"
       "BatchMode=yes (no prompts: use keys or an agent) and a ConnectTimeout from\n"
       "the timeout setting. Default: none",
       [](ClientConfig& c, const std::string& v) { return setText(c.sshOptions, v); },
       [](const ClientConfig& c) { return c.sshOptions; }},
      {"record", "MQD_PROXY_RECORD",
       "record the session into this file (a new file, mode 600 since it holds target\n"
       "memory, in the place of whatever file or link was there, never written through):\n"
       "calls, results and every answer the debugger gave, for `mqd-proxy replay FILE`.\n"
       "MQD_PROXY_RECORD_LABEL (environment only), when set at each mqs_setup_process,\n"
       "labels that process in the recording. Default: off",
       [](ClientConfig& c, const std::string& v) { return setText(c.record, v); },
       [](const ClientConfig& c) { return c.record; }},
  };
  return table;
}

std::string ClientConfig::configFilePath() {
  if (const char* set = std::getenv("MQD_PROXY_CONFIG")) return set;  // empty: no file
  if (const char* xdg = env("XDG_CONFIG_HOME")) {
    if (xdg[0] == '/') return std::string(xdg) + "/mqd-proxy/config";
  }
  std::string home = homeDirectory();
  return home.empty() ? "" : home + "/.config/mqd-proxy/config";
}

std::vector<std::string> ClientConfig::servers() const {
  // Several when every word names a server; otherwise one (a unix: path may hold spaces).
  std::vector<std::string> words;
  std::istringstream in(server);
  for (std::string w; in >> w;) words.push_back(w);
  for (const std::string& w : words) {
    bool named = false;
    for (const char* scheme : {"unix:", "tcp:", "tls:", "ssh://", "slurm:"}) {
      named = named || w.rfind(scheme, 0) == 0;
    }
    if (!named) return {server};
  }
  if (words.size() <= 1) return {server};
  return words;
}

std::string ClientConfig::help() {
  std::string out;
  for (const Setting& s : settings()) {
    out += "  " + std::string(s.variable) + "  (file: " + s.key + ")\n";
    std::istringstream lines(s.help);
    std::string line;
    while (std::getline(lines, line)) out += "      " + line + "\n";
  }
  out +=
      "  MQD_PROXY_CONFIG  (environment only)\n"
      "      the configuration file. Default $XDG_CONFIG_HOME/mqd-proxy/config, else\n"
      "      ~/.config/mqd-proxy/config; set but empty: no file. A regular file of at most\n"
      "      " +
      std::to_string(kMaxFileBytes >> 10) + " KiB; anything else is reported and not read\n";
  return out;
}

std::string ClientConfig::set(const std::string& key, const std::string& value) {
  for (const Setting& s : settings()) {
    if (key == s.key) return s.apply(*this, value);
  }
  return "unknown setting \"" + key + "\"";
}

ClientConfig ClientConfig::load(std::vector<std::string>* problems) {
  ClientConfig c;
  c.server = "unix:" + defaultSocketPath();
  c.stateDir = defaultStateDir();
  for (const Setting& s : settings()) c.sources[s.key] = "default";
  c.file = configFilePath();
  readFile(c, problems);
  for (const Setting& s : settings()) {
    if (const char* v = env(s.variable)) applyOne(c, s, v, s.variable, problems);
  }
  return c;
}

}  // namespace mqd::client
