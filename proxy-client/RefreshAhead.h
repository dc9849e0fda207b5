// RefreshAhead: under the epoch policy, what the shim knows of each process's next update, and
// the refreshes the server made ahead of a process's own update (docs/round-trips.md,
// "The whole job").
//
// Per process it keeps the memory its next update is likely to read (the "next epoch", named by
// the server's last reply about the process or by a peer's guess), whether that was learned
// from an earlier session, whether the server reads the process on its node, how often and when
// the debugger refreshed it, and a refresh made ahead, waiting to be proved. From these it
// decides which processes to refresh with another's update (candidates) and which guesses of a
// first update to take (takePeerGuesses), by the cost rule (CostRule.h).
//
// It only decides and remembers: it reads no memory and sends nothing. The client reads the
// windows it names, sends them, and proves a refresh ahead by reading its windows again
// (sameReads) before serving it. Not thread-safe: the client's call lock guards it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "CostRule.h"
#include "ReadAhead.h"
#include "RecordedWalk.h"
#include "mqd.capnp.h"

namespace mqd::client {

class RefreshAhead {
 public:
  // A refresh the server made ahead of the process's own update.
  struct Refreshed {
    std::unique_ptr<RecordedWalk> walk;  // the answers of the process's next iteration
    std::vector<Window> nextEpoch;       // what the update after it will read
    // What the proof reads again and must find the same: of the blocks sent, what its update
    // read (RefreshedAhead.read, readOf), or every block sent (`whole`: the server did not
    // say, or its update read none of them). Only this is kept of what was sent.
    std::vector<ReadAhead> proof;
    bool whole = true;
    bool held = false;  // the process's last epoch held (hold), not a refresh by the server
    // Made on the process's node (RefreshAhead.checkLate): `proof` is the node's bytes of its
    // epoch check, which the debugger must read the same; never held as its last epoch.
    bool onNode = false;
  };
  // A refresh made on the process's node from its check `windows`, whose node bytes are
  // `nodeBytes` (RefreshedAhead.nodeBytes); nullopt when they are not one block each, in
  // order, readable whole. Throws ProxyError(PROTOCOL) for a payload that does not unpack.
  static std::optional<Refreshed> madeOnNode(std::unique_ptr<RecordedWalk> walk,
                                             std::vector<Window> nextEpoch,
                                             const std::vector<Window>& windows,
                                             capnp::List<wire::MemoryBlock>::Reader nodeBytes);
  // What a refresh of the blocks `sent` keeps for its proof, its update having read `used`
  // (nullopt: the server did not say); `fetched`: the blocks the server fetched for its misses
  // (RefreshFetches), proved as those sent.
  static Refreshed madeFrom(std::unique_ptr<RecordedWalk> walk, std::vector<Window> nextEpoch,
                            std::vector<ReadAhead> sent,
                            const std::optional<std::vector<Window>>& used,
                            std::vector<ReadAhead> fetched = {});

  // The most memory of other processes one update carries (openSession's refreshAheadBytes;
  // 0, a server that does not say: wire::MAX_REFRESH_AHEAD_BYTES), which is also the most
  // the refreshes waiting hold.
  void setRequestBytes(uint32_t bytes);
  uint64_t requestBytes() const { return requestBytes_; }

  // The rule for reading memory again; roundTripTook() feeds it.
  void setCostRule(CostRule rule) { rule_ = rule; }
  CostRule& costRule() { return rule_; }

  // A reply named what the process's next update reads (`windows`, empty: nothing); `learned`:
  // it is what an earlier session's first update read (a set-up reply's), `readOnNode`: the
  // server reads the process on its node (refreshed ahead only with another such one's
  // update, its check made late).
  void keepNextEpoch(uint64_t process, std::vector<Window> windows, bool learned,
                     bool readOnNode);
  // The same from a reply that names it (a set-up's, a has-queues', an update's).
  template <typename Reader>
  void keepNextEpochOf(uint64_t process, Reader reply, bool learned) {
    keepNextEpoch(process, windowsOf(reply.getNextEpoch()), learned, reply.getReadOnNode());
  }
  // The process's next epoch becomes `windows` (empty: none), its other facts unchanged.
  void setNextEpoch(uint64_t process, std::vector<Window> windows);
  // Null when no reply named it.
  const std::vector<Window>* nextEpoch(uint64_t process) const;
  bool readOnNode(uint64_t process) const { return readOnNode_.count(process) != 0; }

  // The debugger updates the process now: its learned first epoch is no longer offered to
  // others' updates, and its next epoch is given to the caller (and forgotten here).
  std::vector<Window> beginUpdate(uint64_t process);
  // The debugger's update of the process is done (its place in the refresh order).
  void visited(uint64_t process);

  // The processes to refresh with `process`'s update: those the debugger refreshed as often as
  // it and after its last refresh, oldest first (a debugger that refreshes a job rank by rank
  // refreshes them next); at its first update, the never-updated ones with a learned first
  // epoch. Each has a named next epoch, is read on the node as `process` is or is not, and has
  // no refresh waiting; together with what the refreshes waiting keep they stay within
  // requestBytes(), and each is worth reading twice (now, and for its proof) by the cost rule,
  // with the debugger's reads priced `measured` (nullopt: not measured yet). Of a process read
  // on its node: at its first update, every other one never updated; no cost rule (the shim
  // reads only their checks, at their own updates, as it would without).
  std::vector<uint64_t> candidates(uint64_t process, std::optional<ReadPrice> measured) const;
  // A learned first epoch sent ahead once is not offered again (kept, it is served at the
  // process's own update; dropped, its reply named what the update will read).
  void offered(uint64_t process) {
    learnedFirstEpoch_.erase(process);
    offeredFirst_.insert(process);
  }

  // A reply's guesses of other processes' first updates (wire PeerEpoch): each becomes that
  // process's next epoch and a candidate like a learned one, if the process was never updated
  // nor refreshed ahead, is not read on the node, the guess is within
  // wire::MAX_BLOCKS_AHEAD_BYTES and reading it is worth the round trips the guess saves.
  // Returns how many were taken.
  size_t takePeerGuesses(capnp::List<wire::PeerEpoch>::Reader peers,
                         std::optional<ReadPrice> measured);

  // The server refreshed the process ahead: kept until its own update takes it (its proof's
  // bytes counted against requestBytes()).
  void keep(uint64_t process, Refreshed made);
  // The refresh made ahead of the process, taken out (to be proved and served, or dropped).
  std::optional<Refreshed> take(uint64_t process);

  // A refresh ahead just proved and served (its walk from its start): held as the process's
  // last epoch, while the epochs held keep at most requestBytes() for their proofs in all.
  // An epoch that reads every byte of its proof the same is answered by it, as by a refresh
  // ahead (CommunicatorUpdates; docs/round-trips.md, "An epoch like the last").
  void hold(uint64_t process, Refreshed served);
  // The epoch held for the process, taken out.
  std::optional<Refreshed> takeHeld(uint64_t process);
  // Whether proving `made` at its process's next update (reading its proof again, twice when
  // the process changed) is worth the round trip it saves there, by the cost rule: an update
  // of the process's own is held only then.
  bool worthProving(const Refreshed& made, std::optional<ReadPrice> measured) const {
    return worthReading(windowsOf(made.proof), 1, measured);
  }
  bool holds(uint64_t process) const { return held_.has(process); }

  // The process is set up again: everything about it starts over; the others' places stand.
  void forget(uint64_t process);
  // Drops every refresh waiting, and the refresh order the next ones are chosen by (the
  // debugger let an image or process go).
  void forgetRefreshes();
  // Forgets everything (a new session: nothing the lost DLL named holds).
  void clear();

 private:
  // Whether reading `windows` again is worth `roundTrips` round trips (CostRule).
  bool worthReading(const std::vector<Window>& windows, uint64_t roundTrips,
                    std::optional<ReadPrice> measured) const {
    return rule_.worthReading(bytesOf(windows), readsOf(windows), roundTrips, measured);
  }

  CostRule rule_;
  std::unordered_map<uint64_t, std::vector<Window>> nextEpoch_;
  // Never updated, with a next epoch an earlier session (or a peer's guess) named.
  std::set<uint64_t> learnedFirstEpoch_;
  std::set<uint64_t> readOnNode_;
  // Offered at another's first update (offered): a process read on its node is offered so
  // once, as a learned one is (which leaves learnedFirstEpoch_ then).
  std::set<uint64_t> offeredFirst_;
  // Refreshes by process, and the bytes of their proofs in all.
  class Kept {
   public:
    void put(uint64_t process, Refreshed made);  // replaces the process's
    std::optional<Refreshed> take(uint64_t process);
    bool has(uint64_t process) const { return byProcess_.count(process) != 0; }
    uint64_t bytes() const { return bytes_; }
    void clear() {
      byProcess_.clear();
      bytes_ = 0;
    }

   private:
    std::unordered_map<uint64_t, Refreshed> byProcess_;
    uint64_t bytes_ = 0;
  };
  Kept refreshed_;  // made ahead, waiting for their processes' updates
  Kept held_;       // each process's last epoch served from a refresh ahead
  uint64_t requestBytes_ = wire::MAX_REFRESH_AHEAD_BYTES;
  // Per process: how often and when (in updates_) the debugger last refreshed it.
  struct Visits {
    uint64_t count = 0;
    uint64_t last = 0;
  };
  std::unordered_map<uint64_t, Visits> visits_;
  uint64_t updates_ = 0;
};

}  // namespace mqd::client
