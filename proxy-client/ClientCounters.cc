#include "ClientCounters.h"

#include <cstdio>

namespace mqd::client {

void ClientCounters::write(capnp::List<wire::Counter>::Builder out) const {
  struct Entry {
    const char* name;
    const std::atomic<uint64_t>* value;
  };
  const Entry entries[kCount] = {{"calls_forwarded", &callsForwarded},
                                 {"calls_from_walk", &callsFromWalk},
                                 {"error_texts_local", &errorTextsLocal},
                                 {"walks_left", &walksLeft},
                                 {"callbacks_served", &callbacksServed},
                                 {"notifications", &notifications},
                                 {"wire_bytes_in", &wireBytesIn},
                                 {"wire_bytes_out", &wireBytesOut},
                                 {"reconnects", &reconnects},
                                 {"refreshes_ahead", &refreshesAhead},
                                 {"refreshes_stale", &refreshesStale},
                                 {"setups_recalled", &setUpsRecalled},
                                 {"setups_contradicted", &setUpsContradicted},
                                 {"recalled_waits", &recalledWaits},
                                 {"late_checks", &lateChecks},
                                 {"late_checks_redone", &lateChecksRedone}};
  for (unsigned i = 0; i < kCount && i < out.size(); ++i) {
    out[i].setName(entries[i].name);
    out[i].setValue(entries[i].value->load());
  }
}

std::string ClientCounters::summary() const {
  char buf[1024];
  uint64_t calls = callsForwarded.load();
  uint64_t callbacks = callbacksServed.load();
  std::snprintf(buf, sizeof buf,
                "%llu round trips (%llu calls forwarded, %llu callbacks served), %llu calls "
                "answered in the shim (%llu from walks, %llu error texts), %llu notifications, "
                "%llu B in, %llu B out, %llu reconnects, %llu updates served from refreshes ahead "
                "and %llu from epochs held (%llu more found stale), %llu set-ups answered from "
                "records (%llu moved from another process's, %llu contradicted, %llu waits for "
                "their replies), %llu "
                "epoch checks made late (%llu sent again), %llu set-ups proved late (%llu sent "
                "again), %llu other processes' updates named by the server (%llu taken)",
                static_cast<unsigned long long>(calls + callbacks),
                static_cast<unsigned long long>(calls), static_cast<unsigned long long>(callbacks),
                static_cast<unsigned long long>(callsFromWalk.load() + errorTextsLocal.load()),
                static_cast<unsigned long long>(callsFromWalk.load()),
                static_cast<unsigned long long>(errorTextsLocal.load()),
                static_cast<unsigned long long>(notifications.load()),
                static_cast<unsigned long long>(wireBytesIn.load()),
                static_cast<unsigned long long>(wireBytesOut.load()),
                static_cast<unsigned long long>(reconnects.load()),
                static_cast<unsigned long long>(refreshesAhead.load()),
                static_cast<unsigned long long>(epochsHeld.load()),
                static_cast<unsigned long long>(refreshesStale.load()),
                static_cast<unsigned long long>(setUpsRecalled.load()),
                static_cast<unsigned long long>(setUpsMoved.load()),
                static_cast<unsigned long long>(setUpsContradicted.load()),
                static_cast<unsigned long long>(recalledWaits.load()),
                static_cast<unsigned long long>(lateChecks.load()),
                static_cast<unsigned long long>(lateChecksRedone.load()),
                static_cast<unsigned long long>(lateProofs.load()),
                static_cast<unsigned long long>(lateProofsRedone.load()),
                static_cast<unsigned long long>(peersNamed.load()),
                static_cast<unsigned long long>(peersTaken.load()));
  return buf;
}

}  // namespace mqd::client
