// LearnedLookups: the symbol and type look-ups sessions made with one vendor DLL, kept on disk
// between sessions (and worker processes), so that the next session with the same DLL can ask
// the debugger for all of them in one round trip at image set-up.
//
// One file per DLL build: <state-dir>/lookups-<build-id>.capnp, replaced atomically; a file
// that cannot be read is ignored (and rewritten), so learning can only save round trips, never
// change an answer: prefetched answers are the debugger's own.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "RemoteDebugger.h"

namespace mqd::server {

class LearnedLookups {
 public:
  // `stateDir` empty: learning is off. `buildId` names the DLL build (its GNU build-id).
  LearnedLookups(std::string stateDir, std::string dll, std::string buildId);

  bool enabled() const { return !file_.empty(); }

  // What earlier sessions looked up (empty when nothing is known).
  std::vector<LookupKey> load() const;

  // Adds `seen` to what is known; writes only when something is new. Never throws.
  void save(const std::set<LookupKey>& seen);

 private:
  std::string dll_;
  std::string buildId_;
  std::string file_;
  std::set<LookupKey> known_;
};

// The default --state-dir: $XDG_STATE_HOME/mqd-proxy, else $HOME/.local/state/mqd-proxy.
std::string defaultStateDir();

}  // namespace mqd::server
