// ClientConfig: every setting of the shim and the mqd-proxy CLI, in one table (settings()).
//
// Where a value comes from, lowest to highest precedence:
//   1. the default in the table;
//   2. the configuration file: $MQD_PROXY_CONFIG if set (empty: no file), else
//      $XDG_CONFIG_HOME/mqd-proxy/config, else ~/.config/mqd-proxy/config. Lines are
//      `key = value` (the key is the variable's name without MQD_PROXY_, in lower case, e.g.
//      `server = ssh://node7`); `#` starts a comment line; a value may be double-quoted;
//   3. the environment (MQD_PROXY_SERVER, ...): an empty variable counts as unset.
// The shim reads it when a session is opened, so a debugger can change the environment before
// loading the shim. help() describes each setting; `mqd-proxy --help` prints it,
// docs/configuration.md mirrors it, and `mqd-proxy config` shows the effective values with
// their sources.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Log.h"
#include "mqd.capnp.h"

namespace mqd::client {

struct ClientConfig {
  enum class Compress { Auto, On, Off };

  std::string server;
  std::string dll;
  std::chrono::milliseconds timeout{30000};
  LogLevel logLevel = LogLevel::Warn;
  std::string logFile;
  wire::CachePolicy cache = wire::CachePolicy::EPOCH;
  Compress compress = Compress::Auto;
  std::string stateDir;  // the shim's learned look-ups (LearnedLookups); empty: off
  std::string serverUser;       // MQD_PROXY_SERVER_UID as written: name or number
  long long serverUid = -1;     // that user's uid, trusted with a unix: socket (-1: none)
  std::string tokenFile;  // the token to present (read at connect time)
  std::string tlsCa;      // PEM CA certificate(s) for tls: servers
  std::string tlsName;    // name the certificate must carry (default: HOST)
  std::string ssh = "ssh";           // the ssh program for ssh:// servers
  std::string sshOptions;            // extra ssh arguments, split at white space
  std::string record;                // record the session into this file (SessionRecorder)
  // What the debugger's reads of target memory cost, in seconds per byte, for the shim's cost
  // rule (CostRule.h), pinned by the read_cost setting; nullopt: measured from its reads.
  std::optional<double> readCost;

  // The largest configuration file read (a few lines are expected); a larger one, or anything
  // but a regular file (a FIFO, a device, a directory), is a problem and is not read.
  static constexpr size_t kMaxFileBytes = 64 << 10;

  // Where each setting's value came from, by key: "default", "FILE:LINE" or "MQD_PROXY_X".
  std::map<std::string, std::string> sources;
  std::string file;        // the configuration file consulted (may not exist)
  bool fileRead = false;   // whether it existed and was read

  // Defaults, then the configuration file, then the environment. Malformed values and lines
  // are reported in `problems` (and the lower-precedence value kept) rather than thrown: the
  // shim must keep working inside the debugger.
  static ClientConfig load(std::vector<std::string>* problems);

  // Sets one setting by its key (e.g. "timeout" for the command line's --timeout) by the
  // table's rule; returns "" or why the value is not taken (the previous value is then kept).
  std::string set(const std::string& key, const std::string& value);

  // The configuration file load() consults (see above); empty when MQD_PROXY_CONFIG is set
  // but empty.
  static std::string configFilePath();

  // The servers `server` names: its words when there are several and each names a server
  // (unix:, tcp:, tls:, ssh://), one on each node of a job (NodeRouter); else the whole
  // setting, one server.
  std::vector<std::string> servers() const;

  // Every setting, its values and its default, as help text.
  static std::string help();
};

// One row of the settings table.
struct Setting {
  const char* key;          // in the configuration file, e.g. "log_file"
  const char* variable;     // in the environment, e.g. "MQD_PROXY_LOG_FILE"
  const char* help;         // what it does, its values and default (wrapped, indented text)
  // Sets `value` into `c`; returns an empty string, or why the value is not taken (the
  // previous value is then kept).
  std::string (*apply)(ClientConfig& c, const std::string& value);
  // The effective value, as it would be written in the file.
  std::string (*show)(const ClientConfig& c);
};

const std::vector<Setting>& settings();

}  // namespace mqd::client
