// ClientCounters: the shim's own count of a session's traffic, next to the server's.
//
// The server counts everything it sees (mqd-proxy stats). The shim counts what only it knows
// (calls it answered without the server: from recorded walks, error texts it kept) and its own
// view of the wire. It sends them to the server with each mqs_update_communicator_list, so that
// `mqd-proxy stats` shows both sides, and logs a one-line summary when its session ends.
// Updated from the debugger's calling thread and from the event-loop thread: atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "mqd.capnp.h"

namespace mqd::client {

struct ClientCounters {
  std::atomic<uint64_t> callsForwarded{0};    // mqs_* calls sent to the server
  std::atomic<uint64_t> callsFromWalk{0};     // answered from a recorded walk
  std::atomic<uint64_t> errorTextsLocal{0};   // mqs_dll_error_string answered from the session
  std::atomic<uint64_t> walksLeft{0};         // walks left before their end (repositions)
  std::atomic<uint64_t> callbacksServed{0};   // debugger callbacks the server waited for
  std::atomic<uint64_t> notifications{0};     // dprints, put_*_info, DLL output
  std::atomic<uint64_t> wireBytesIn{0};
  std::atomic<uint64_t> wireBytesOut{0};
  std::atomic<uint64_t> reconnects{0};        // lost sessions re-established
  std::atomic<uint64_t> refreshesAhead{0};    // updates served from a refresh ahead
  std::atomic<uint64_t> refreshesStale{0};    // refreshes ahead the target had changed since
  std::atomic<uint64_t> setUpsRecalled{0};    // image and process set-ups answered from records
  std::atomic<uint64_t> setUpsContradicted{0};  // of those calls, answered otherwise by the DLL
  // Of the process set-ups answered from records, those from another process's record moved
  // (SetUpRecall::shiftTo). In the summary only, as peersNamed.
  std::atomic<uint64_t> setUpsMoved{0};
  // Waits for the replies of set-ups answered from records (settleRecalled): each at most one
  // round trip, since every call waited for was sent before it started.
  std::atomic<uint64_t> recalledWaits{0};
  // Updates of processes read on the server's node whose epoch check overlapped the round
  // trip (CommunicatorUpdates::sendCheckedLate), and those sent again with the debugger's bytes.
  std::atomic<uint64_t> lateChecks{0};
  std::atomic<uint64_t> lateChecksRedone{0};
  // Process set-ups whose proof of identity the shim made late, overlapping the round trip
  // (MqsClient::sendSetupProcess), and those sent again with the debugger's bytes. In the
  // summary only.
  std::atomic<uint64_t> lateProofs{0};
  std::atomic<uint64_t> lateProofsRedone{0};
  // What other processes' updates would read, as replies named it (wire PeerEpoch: a guess
  // from a peer's first update, or what a dropped refresh ahead read), and of those what the
  // shim took (RefreshAhead::takePeerGuesses). In the summary only: the session board holds 16.
  std::atomic<uint64_t> peersNamed{0};
  std::atomic<uint64_t> peersTaken{0};
  // Updates served from the process's last epoch held (RefreshAhead::hold), proved as a
  // refresh ahead is: the server did not refresh it. In the summary only.
  std::atomic<uint64_t> epochsHeld{0};

  // Appends every counter as name/value pairs ("calls_forwarded", ...).
  void write(capnp::List<wire::Counter>::Builder out) const;
  static constexpr unsigned kCount = 16;

  // "N calls forwarded, M answered locally (from walks, error texts), ..."
  std::string summary() const;
};

}  // namespace mqd::client
