#include "CommunicatorUpdates.h"

#include <capnp/message.h>

#include <algorithm>
#include <optional>
#include <set>

#include "Log.h"
#include "ProxyErrors.h"
#include "RefreshFetches.h"

namespace mqd::client {

CommunicatorUpdates::Outcome CommunicatorUpdates::update(uint64_t process) {
  bool readOnNode = refreshAhead_.readOnNode(process);
  std::vector<Window> named = refreshAhead_.beginUpdate(process);
  Outcome outcome;
  std::vector<ReadAhead> ahead;
  bool stale = false;
  outcome.walk = takeRefreshedAhead(process, &ahead, &named, &stale);
  if (outcome.walk) {
    refreshAhead_.visited(process);
    outcome.rc = mqs_ok;
    return outcome;
  }
  std::vector<Window> checkLate;  // a process read on its node: its check overlaps the trip
  bool epoch = config_.cache == wire::CachePolicy::EPOCH;
  if (ahead.empty() && epoch && !named.empty() &&
      bytesOf(named) <= wire::MAX_BLOCKS_AHEAD_BYTES) {
    if (readOnNode) {
      checkLate = std::move(named);
    } else {
      ahead = readAhead(side_, process, named);
    }
  }
  std::optional<OwnProof> proof;
  // Others go with an update of a process read on its node only with its check made late.
  std::vector<uint64_t> others;
  if (epoch && (!readOnNode || !checkLate.empty())) {
    others = refreshAhead_.candidates(process, side_.readPrice());
  }
  auto reply = checkLate.empty()
                   ? send(process, std::move(ahead), others, stale ? Held::check : Held::trust,
                          epoch ? &proof : nullptr)
                   : sendCheckedLate(process, checkLate, others);
  refreshAhead_.visited(process);
  outcome.rc = reply.get().getRc();
  if (reply.call().callbackErrorCode() != 0) {
    outcome.callbackError = ProxyError(reply.call().callbackErrorCode(),
                                       reply.call().callbackErrorDetail());
    return outcome;
  }
  if (reply.get().getWalk().getSize() > 0) {
    outcome.walk = std::make_unique<RecordedWalk>(reply.get().getWalk());
    // Held as the process's last epoch: its next update is served from it if it reads the
    // same (takeRefreshedAhead), no round trip. Not one that read nothing to prove, nor one
    // whose proof costs the debugger more than that round trip.
    if (proof) {
      RefreshAhead::Refreshed made = RefreshAhead::madeFrom(
          outcome.walk->fromStart(), windowsOf(reply.get().getNextEpoch()),
          std::move(proof->sent), proof->used, std::move(proof->fetched));
      bool worth = !made.proof.empty() && refreshAhead_.worthProving(made, side_.readPrice());
      MQD_LOG(Debug, "process %llu: its update %s as its last epoch (a proof of %llu bytes)",
              static_cast<unsigned long long>(process), worth ? "held" : "not held",
              static_cast<unsigned long long>(bytesOf(made.proof)));
      if (worth) refreshAhead_.hold(process, std::move(made));
    }
  }
  return outcome;
}

std::unique_ptr<RecordedWalk> CommunicatorUpdates::takeRefreshedAhead(
    uint64_t process, std::vector<ReadAhead>* fresh, std::vector<Window>* named, bool* stale) {
  std::optional<RefreshAhead::Refreshed> made = refreshAhead_.take(process);
  if (!made && config_.cache == wire::CachePolicy::EPOCH) made = refreshAhead_.takeHeld(process);
  if (!made) return nullptr;
  const std::vector<ReadAhead>& proof = made->proof;
  bool whole = made->whole;
  *fresh = readAhead(side_, process, windowsOf(proof));
  if (!sameReads(proof, *fresh)) {
    *stale = true;
    ++counters_.refreshesStale;
    MQD_LOG(Debug, "process %llu changed since its refresh ahead: refreshed again",
            static_cast<unsigned long long>(process));
    // Only what was read again whole serves the update as read ahead; else what the refresh's
    // update read (its misses' blocks too) is what this one will read.
    if (!whole) {
      fresh->clear();
      if (!made->nextEpoch.empty()) *named = std::move(made->nextEpoch);
    }
    return nullptr;
  }
  ++(made->held ? counters_.epochsHeld : counters_.refreshesAhead);
  refreshAhead_.setNextEpoch(process, made->nextEpoch);
  fresh->clear();
  std::unique_ptr<RecordedWalk> walk = std::move(made->walk);
  made->walk = walk->fromStart();
  refreshAhead_.hold(process, std::move(*made));
  return walk;
}

Reply<wire::Session::UpdateCommunicatorListResults> CommunicatorUpdates::send(
    uint64_t process, std::vector<ReadAhead> ahead, const std::vector<uint64_t>& others,
    Held held, std::optional<OwnProof>* own) {
  // The other processes' windows, read inside this call too: the server refreshes them after
  // this one, and what it made of them is served at their own updates once proved current.
  // Each one's blocks are packed for the request (compressed, when the link is) as soon as
  // they are read, and only that copy waits for the reply, which says what each proof needs:
  // the raw bytes of a whole batch never stay in the debugger's process at once.
  struct Other {
    uint64_t process;
    std::unique_ptr<capnp::MallocMessageBuilder> packed;  // its wire::RefreshAhead
  };
  std::vector<Other> batch;
  const bool compress = link_.compress();
  for (uint64_t token : others) {
    if (held == Held::trust && refreshAhead_.holds(token)) continue;  // proved at its update
    if (std::optional<RefreshAhead::Refreshed> last = refreshAhead_.takeHeld(token)) {
      // Its last epoch read every byte of its proof as the debugger reads it now: that
      // epoch's walk is this one's. Kept as its refresh ahead, proved again at its own update.
      if (sameReads(last->proof, readAhead(side_, token, windowsOf(last->proof)))) {
        refreshAhead_.keep(token, std::move(*last));
        refreshAhead_.offered(token);
        continue;
      }
    }
    const std::vector<Window>& windows = *refreshAhead_.nextEpoch(token);
    std::vector<ReadAhead> read = readAhead(side_, token, windows);
    if (read.empty()) continue;
    auto packed = std::make_unique<capnp::MallocMessageBuilder>();
    auto root = packed->initRoot<wire::RefreshAhead>();
    root.setProcess(token);
    writeAhead(read, compress, root);
    batch.push_back({token, std::move(packed)});
  }
  if (!batch.empty()) {
    MQD_LOG(Debug, "process %llu: %zu other processes refreshed ahead with its update",
            static_cast<unsigned long long>(process), batch.size());
  }
  // What the server fetches for their misses proves their refreshes too (and this process's
  // own walk, with `own`): as much as their refreshes waiting may hold. Listened for only
  // while there is a proof to make.
  std::optional<RefreshFetches> fetched;
  if (!batch.empty() || own != nullptr) {
    std::set<uint64_t> proved;
    for (const Other& o : batch) proved.insert(o.process);
    if (own != nullptr) proved.insert(process);
    fetched.emplace(side_, std::move(proved), refreshAhead_.requestBytes());
  }
  auto reply = link_.roundTrip<wire::Session::UpdateCommunicatorListResults>(
      EntryPoint::update_communicator_list,
      [this, process, compress, &ahead, &batch](wire::Session::Client& s) {
        auto r = s.updateCommunicatorListRequest();
        r.setProcess(process);
        describeShim(r);
        writeAhead(ahead, compress, r);
        if (!batch.empty()) {
          r.setOthersProvedByFetches(true);
          auto out = r.initOthers(static_cast<unsigned>(batch.size()));
          for (unsigned i = 0; i < batch.size(); ++i) {
            out.setWithCaveats(i, batch[i].packed->getRoot<wire::RefreshAhead>().asReader());
          }
        }
        return r.send();
      });
  refreshAhead_.keepNextEpochOf(process, reply.get(), false);
  if (own != nullptr && reply.get().getProvable() && !fetched->incomplete(process)) {
    *own = OwnProof{std::move(ahead), windowsOf(reply.get().getRead()), fetched->take(process)};
  }
  if (config_.cache == wire::CachePolicy::EPOCH) {
    auto peers = reply.get().getPeers();
    counters_.peersNamed += peers.size();
    counters_.peersTaken += refreshAhead_.takePeerGuesses(peers, side_.readPrice());
  }
  for (const Other& o : batch) refreshAhead_.offered(o.process);
  for (auto refreshed : reply.get().getRefreshed()) {
    auto it = std::find_if(batch.begin(), batch.end(), [&](const Other& o) {
      return o.process == refreshed.getProcess();
    });
    if (it == batch.end() || !it->packed) continue;  // not sent, or named twice
    if (fetched->incomplete(it->process)) continue;  // its own update goes to the server
    try {
      std::optional<std::vector<Window>> used;
      if (refreshed.hasRead()) used = windowsOf(refreshed.getRead());
      auto sent = it->packed->getRoot<wire::RefreshAhead>().asReader();
      std::vector<ReadAhead> proved = unpackFor(sent.getAhead(), sent.getBlocks(), used);
      it->packed.reset();
      refreshAhead_.keep(it->process,
                         RefreshAhead::madeFrom(std::make_unique<RecordedWalk>(refreshed.getWalk()),
                                                windowsOf(refreshed.getNextEpoch()),
                                                std::move(proved), used,
                                                fetched->take(it->process)));
    } catch (const ProxyError& e) {  // that process's own update will go to the server
      MQD_LOG(Warn, "a refresh ahead dropped: %s", e.what());
    }
  }
  return reply;
}

void CommunicatorUpdates::describeShim(
    wire::Session::UpdateCommunicatorListParams::Builder request) const {
  counters_.write(request.initClientCounters(ClientCounters::kCount));
  refreshAhead_.costRule().describe(request.initTimings(), side_.readPrice());
}

Reply<wire::Session::UpdateCommunicatorListResults> CommunicatorUpdates::sendCheckedLate(
    uint64_t process, const std::vector<Window>& windows, const std::vector<uint64_t>& others) {
  // The others, read on this node too, go with their checks, of which nothing is read now:
  // each is read at the other's own update, its check made late.
  std::vector<std::pair<uint64_t, std::vector<Window>>> batch;
  for (uint64_t token : others) {
    if (const std::vector<Window>* check = refreshAhead_.nextEpoch(token)) {
      batch.push_back({token, *check});
      refreshAhead_.offered(token);
    }
  }
  if (!batch.empty()) {
    MQD_LOG(Debug, "process %llu: %zu other processes refreshed ahead on its node with its update",
            static_cast<unsigned long long>(process), batch.size());
  }
  link_.settle();  // the calls sent earlier come first
  auto pending = link_.start(
      EntryPoint::update_communicator_list,
      [this, process, &windows, &batch](wire::Session::Client& s) {
        auto r = s.updateCommunicatorListRequest();
        r.setProcess(process);
        describeShim(r);
        writeWindows(windows, r.initCheckLate(static_cast<unsigned>(windows.size())));
        if (!batch.empty()) {
          auto out = r.initOthers(static_cast<unsigned>(batch.size()));
          for (unsigned i = 0; i < batch.size(); ++i) {
            out[i].setProcess(batch[i].first);
            writeWindows(batch[i].second,
                         out[i].initCheckLate(static_cast<unsigned>(batch[i].second.size())));
          }
        }
        return r.send();
      });
  // The debugger reads while the request travels and the server walks; the callbacks the
  // server asks meanwhile wait for finish().
  std::vector<ReadAhead> read;
  try {
    read = readAhead(side_, process, windows);
  } catch (...) {
    link_.drain(std::move(pending));
    throw;
  }
  auto reply = link_.finish<wire::Session::UpdateCommunicatorListResults>(
      std::move(pending), EntryPoint::update_communicator_list);
  // Each other refreshed is kept for its own update, whatever this process's check finds.
  for (auto refreshed : reply.get().getRefreshed()) {
    auto it = std::find_if(batch.begin(), batch.end(), [&](const auto& sent) {
      return sent.first == refreshed.getProcess();
    });
    if (it == batch.end() || it->second.empty()) continue;  // not sent, or named twice
    try {
      std::optional<RefreshAhead::Refreshed> made = RefreshAhead::madeOnNode(
          std::make_unique<RecordedWalk>(refreshed.getWalk()),
          windowsOf(refreshed.getNextEpoch()), it->second, refreshed.getNodeBytes());
      if (made) refreshAhead_.keep(it->first, std::move(*made));
    } catch (const ProxyError& e) {  // that process's own update will go to the server
      MQD_LOG(Warn, "a refresh ahead dropped: %s", e.what());
    }
    it->second.clear();
  }
  auto node = reply.get().getNodeBytes();
  if (reply.get().getLateCheckDeclined() || (node.size() > 0 && !sameAsNode(read, node))) {
    ++counters_.lateChecksRedone;
    MQD_LOG(Debug, "process %llu: %s: its update sent again with the debugger's bytes",
            static_cast<unsigned long long>(process),
            reply.get().getLateCheckDeclined() ? "the server declined the late check"
                                               : "the node's bytes are not the debugger's");
    return send(process, std::move(read));
  }
  if (node.size() > 0) ++counters_.lateChecks;
  refreshAhead_.keepNextEpochOf(process, reply.get(), false);
  return reply;
}

}  // namespace mqd::client
