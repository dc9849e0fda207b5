// CommunicatorUpdates: a process's mqs_update_communicator_list as the shim makes it, the call
// that starts each refresh of the process's queues (docs/round-trips.md, "The epoch").
//
// Contract: update() answers exactly what the DLL answers at this update, by one of three ways:
// - from the process's refresh ahead (made inside another process's update), or else from its
//   last epoch held (the last refresh ahead it was served from, or its last update the server
//   said was provable), when the debugger reads every window it was made from as it was then:
//   the DLL read nothing else, so it would answer the same now. No round trip.
// - sent with what the shim read ahead for the process (its next epoch, under the epoch policy)
//   and for other processes whose next epochs the cost rule finds worth reading now
//   (RefreshAhead::candidates): the server refreshes those after this one, and each becomes a
//   refresh ahead for its own update.
// - for a process the server reads on its node, sent with its epoch check made late: the
//   debugger reads while the request travels, and the reply is taken only if the node's bytes
//   it carries are the debugger's; else the update goes again with the debugger's bytes. The
//   other processes read on that node (candidates) go with it, each with its check, which
//   the server reads there: each refresh ahead is proved at its process's own update by the
//   debugger reading that check the same (the first way), its check made late.
// Replies feed RefreshAhead: the process's next epoch, the peers the server guessed, the
// refreshes it made ahead. A ProxyError from the link goes to the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ClientConfig.h"
#include "ClientCounters.h"
#include "DebuggerSide.h"
#include "ProxyErrors.h"
#include "ReadAhead.h"
#include "RecordedWalk.h"
#include "RefreshAhead.h"
#include "SessionLink.h"

namespace mqd::client {

class CommunicatorUpdates {
 public:
  // All outlive this.
  CommunicatorUpdates(SessionLink& link, DebuggerSide& side, RefreshAhead& refreshAhead,
                      ClientCounters& counters, const ClientConfig& config)
      : link_(link), side_(side), refreshAhead_(refreshAhead), counters_(counters),
        config_(config) {}

  struct Outcome {
    int rc = 0;
    // A callback's error, which the debugger sees instead of rc (the update was made all the
    // same: the set-up replay makes it again).
    std::optional<ProxyError> callbackError;
    // The walk the debugger's next calls on the process are served from (null: none; they are
    // forwarded).
    std::unique_ptr<RecordedWalk> walk;
  };
  // The update of a set-up process, by the first of the contract's ways that applies.
  Outcome update(uint64_t process);

  // What an update does with the others whose last epoch is held (RefreshAhead::hold):
  // `trust` it, sending nothing of theirs (each is proved at its own update, and the first
  // found changed checks the rest), or `check` it, reading each one's proof now: one that reads
  // the same keeps its epoch as its refresh ahead, one that does not is sent.
  enum class Held { trust, check };
  // What proves an update's own walk current at the process's next update, as a refresh
  // ahead's proof does (RefreshAhead::madeFrom): the blocks sent with it, the windows it read
  // of them (the reply's `read`), the blocks the server fetched for it.
  struct OwnProof {
    std::vector<ReadAhead> sent;
    std::vector<Window> used;
    std::vector<ReadAhead> fetched;
  };
  // The second way alone, for a set-up replay: with `ahead` read for the process (may be
  // empty) and the processes `others` refreshed ahead in it. With `own`, under the epoch
  // policy, the blocks the server fetches for the process are kept too, and *own is set to
  // what proves its walk when the server says it is provable (wire `provable`).
  Reply<wire::Session::UpdateCommunicatorListResults> send(
      uint64_t process, std::vector<ReadAhead> ahead, const std::vector<uint64_t>& others = {},
      Held held = Held::check, std::optional<OwnProof>* own = nullptr);

 private:
  // The first way: the walk when proved current, else null with `fresh` holding what was read
  // now, for the update to send, or else `named` what the refresh's update read, for the
  // update to read ahead; *stale set when there was a refresh (or an epoch held) to prove and
  // the process changed since.
  std::unique_ptr<RecordedWalk> takeRefreshedAhead(uint64_t process,
                                                   std::vector<ReadAhead>* fresh,
                                                   std::vector<Window>* named, bool* stale);
  // The third way, with the processes `others`, read on the node too, refreshed ahead there.
  Reply<wire::Session::UpdateCommunicatorListResults> sendCheckedLate(
      uint64_t process, const std::vector<Window>& windows, const std::vector<uint64_t>& others);
  // What every update request carries besides its own: the shim's counters and the cost
  // rule's inputs (LinkTimings).
  void describeShim(wire::Session::UpdateCommunicatorListParams::Builder request) const;

  SessionLink& link_;
  DebuggerSide& side_;
  RefreshAhead& refreshAhead_;
  ClientCounters& counters_;
  const ClientConfig& config_;
};

}  // namespace mqd::client
