// LearnedLookups: the symbol and type look-ups sessions made with one vendor DLL, kept on disk
// between sessions, so that the next session with the same DLL build can have them answered in
// one go at image set-up. Both sides keep one: the server (--state-dir) asks the debugger for
// them in one round trip; the shim (MQD_PROXY_STATE_DIR) asks its debugger itself and sends the
// answers with mqs_setup_image, so that a server that never saw the DLL (a new node) does not
// ask one by one.
//
// One file per DLL build: <state-dir>/lookups-<build-id>.capnp, replaced atomically; a file
// that cannot be read is ignored (and rewritten), so learning can only save round trips, never
// change an answer: answers given ahead are the debugger's own.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "LookupKey.h"

namespace mqd {

class LearnedLookups {
 public:
  // `stateDir` empty: learning is off. `buildId` names the DLL build (its GNU build-id).
  LearnedLookups(std::string stateDir, std::string dll, std::string buildId);

  bool enabled() const { return !file_.empty(); }

  // What earlier sessions looked up (empty when nothing is known), read from the file.
  std::vector<LookupKey> load() const;
  // What the file held when this was made, and what was saved since.
  const std::set<LookupKey>& known() const { return known_; }
  const std::string& buildId() const { return buildId_; }

  // Adds `seen` to what is known; writes only when something is new. Never throws.
  void save(const std::set<LookupKey>& seen);

 private:
  std::string dll_;
  std::string buildId_;
  std::string file_;
  std::set<LookupKey> known_;
};

// The default state directory of both sides (the server's --state-dir, the shim's
// MQD_PROXY_STATE_DIR): $XDG_STATE_HOME/mqd-proxy, else $HOME/.local/state/mqd-proxy.
std::string defaultStateDir();

}  // namespace mqd
