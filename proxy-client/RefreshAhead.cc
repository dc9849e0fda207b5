#include "RefreshAhead.h"

#include <algorithm>

#include "Bulk.h"
#include "Log.h"

namespace mqd::client {

RefreshAhead::Refreshed RefreshAhead::madeFrom(std::unique_ptr<RecordedWalk> walk,
                                               std::vector<Window> nextEpoch,
                                               std::vector<ReadAhead> sent,
                                               const std::optional<std::vector<Window>>& used,
                                               std::vector<ReadAhead> fetched) {
  Refreshed made{std::move(walk), std::move(nextEpoch), {}, true};
  auto byAddress = [](const ReadAhead& a, const ReadAhead& b) {
    return a.window.address < b.window.address;
  };
  // In address order, as readOf takes them: the blocks fetched among those sent, and windows
  // a reply named out of order (a set-up's blocks, then the blocks around them).
  sent.insert(sent.end(), std::make_move_iterator(fetched.begin()),
              std::make_move_iterator(fetched.end()));
  std::stable_sort(sent.begin(), sent.end(), byAddress);
  if (used) made.proof = readOf(sent, *used);
  made.whole = made.proof.empty();
  if (made.whole) made.proof = std::move(sent);
  // In address order, which the proof's reads take in fewer spans (readWindows: a server's
  // windows and its guesses' regions come as runs of their own, and may overlap).
  std::stable_sort(made.proof.begin(), made.proof.end(), byAddress);
  return made;
}

std::optional<RefreshAhead::Refreshed> RefreshAhead::madeOnNode(
    std::unique_ptr<RecordedWalk> walk, std::vector<Window> nextEpoch,
    const std::vector<Window>& windows, capnp::List<wire::MemoryBlock>::Reader nodeBytes) {
  if (windows.empty() || nodeBytes.size() != windows.size()) return std::nullopt;
  Refreshed made{std::move(walk), std::move(nextEpoch), {}, true};
  made.onNode = true;
  for (unsigned i = 0; i < nodeBytes.size(); ++i) {
    const Window& w = windows[i];
    if (nodeBytes[i].getRc() != mqs_ok || nodeBytes[i].getAddress() != w.address) {
      return std::nullopt;
    }
    kj::Array<kj::byte> data = readBulk(nodeBytes[i].getData(), w.size);
    if (data.size() != w.size) return std::nullopt;
    made.proof.push_back(
        {w, DebuggerSide::Block{mqs_ok, w.address, {data.begin(), data.end()}}});
  }
  return made;
}

void RefreshAhead::setRequestBytes(uint32_t bytes) {
  requestBytes_ = bytes == 0 ? wire::MAX_REFRESH_AHEAD_BYTES
                             : std::min(bytes, wire::REFRESH_AHEAD_BYTES_CEILING);
}

void RefreshAhead::keepNextEpoch(uint64_t process, std::vector<Window> windows, bool learned,
                                 bool readOnNode) {
  if (learned) {
    learnedFirstEpoch_.insert(process);
  } else {
    learnedFirstEpoch_.erase(process);
  }
  if (readOnNode) {
    readOnNode_.insert(process);
  } else {
    readOnNode_.erase(process);
  }
  setNextEpoch(process, std::move(windows));
}

void RefreshAhead::setNextEpoch(uint64_t process, std::vector<Window> windows) {
  if (windows.empty()) {
    nextEpoch_.erase(process);
  } else {
    nextEpoch_[process] = std::move(windows);
  }
}

const std::vector<Window>* RefreshAhead::nextEpoch(uint64_t process) const {
  auto it = nextEpoch_.find(process);
  return it == nextEpoch_.end() ? nullptr : &it->second;
}

std::vector<Window> RefreshAhead::beginUpdate(uint64_t process) {
  learnedFirstEpoch_.erase(process);
  std::vector<Window> windows;
  auto it = nextEpoch_.find(process);
  if (it != nextEpoch_.end()) {
    windows = std::move(it->second);
    nextEpoch_.erase(it);
  }
  return windows;
}

void RefreshAhead::visited(uint64_t process) {
  Visits& v = visits_[process];
  ++v.count;
  v.last = ++updates_;
}

std::vector<uint64_t> RefreshAhead::candidates(uint64_t process,
                                               std::optional<ReadPrice> measured) const {
  // A process read on its node is refreshed ahead only with another one's update, whose
  // server reads it there; any other, only with another one's neither.
  const bool onNode = readOnNode(process);
  auto offered = [this, process, onNode](uint64_t token) {
    return token != process && !refreshed_.has(token) && nextEpoch_.count(token) != 0 &&
           readOnNode(token) == onNode;
  };
  std::vector<std::pair<uint64_t, uint64_t>> byLast;  // (last refresh, process)
  auto self = visits_.find(process);
  if (self == visits_.end()) {
    // The process's first update: the others never updated, whose set-up named what an
    // earlier session of them read (the only first updates likely to ask for nothing else),
    // or, on the node, every other one set up there (its node's memory is read there anyway).
    for (uint64_t token : onNode ? readOnNode_ : learnedFirstEpoch_) {
      bool again = onNode && offeredFirst_.count(token) != 0;
      if (visits_.count(token) == 0 && !again && offered(token)) {
        byLast.push_back({0, token});
      }
    }
  } else {
    for (const auto& [token, v] : visits_) {
      if (v.count == self->second.count && v.last > self->second.last && offered(token)) {
        byLast.push_back({v.last, token});
      }
    }
  }
  std::sort(byLast.begin(), byLast.end());
  std::vector<uint64_t> chosen;
  uint64_t budget =
      requestBytes_ > refreshed_.bytes() ? requestBytes_ - refreshed_.bytes() : 0;
  for (const auto& [last, token] : byLast) {
    const std::vector<Window>& windows = nextEpoch_.at(token);
    uint64_t bytes = bytesOf(windows);
    if (bytes > budget) break;
    // A process refreshed ahead has its memory read twice: now, and at its own update for the
    // proof. Not one read on its node: the shim reads nothing of it now, and at its own update
    // only its check, which that update makes anyway.
    if (!onNode && !worthReading(windows, 1, measured)) {
      MQD_LOG(Debug, "process %llu: not refreshed ahead: reading its %llu bytes again costs "
                     "more than a round trip",
              static_cast<unsigned long long>(token), static_cast<unsigned long long>(bytes));
      continue;
    }
    budget -= bytes;
    chosen.push_back(token);
  }
  return chosen;
}

size_t RefreshAhead::takePeerGuesses(capnp::List<wire::PeerEpoch>::Reader peers,
                                     std::optional<ReadPrice> measured) {
  size_t taken = 0;
  for (auto peer : peers) {
    uint64_t token = peer.getProcess();
    std::vector<Window> windows = windowsOf(peer.getNextEpoch());
    uint64_t bytes = bytesOf(windows);
    const char* declined = visits_.count(token) != 0       ? "it updated already"
                           : refreshed_.has(token)          ? "it was refreshed ahead"
                           : readOnNode_.count(token) != 0  ? "it is read on the server's node"
                           : windows.empty()                ? "it names no memory"
                           : bytes > wire::MAX_BLOCKS_AHEAD_BYTES ? "it is over the bound"
                           : !worthReading(windows, peer.getCallbacks(), measured)
                               ? "reading it costs more than the round trips it saves"
                               : nullptr;
    if (declined != nullptr) {
      std::optional<ReadPrice> price = rule_.readPrice(measured);
      MQD_LOG(Debug, "process %llu: the guess of its first update (%llu bytes, %llu reads, %u "
                     "callbacks) is not taken: %s (reads %g s + %g s/B, round trip %g s)",
              static_cast<unsigned long long>(token), static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(readsOf(windows)), peer.getCallbacks(), declined,
              price ? price->secondsPerRead : 0, price ? price->secondsPerByte : 0,
              rule_.fastestRoundTrip());
      continue;
    }
    nextEpoch_[token] = std::move(windows);
    learnedFirstEpoch_.insert(token);
    ++taken;
  }
  return taken;
}

void RefreshAhead::keep(uint64_t process, Refreshed made) {
  refreshed_.put(process, std::move(made));
}

std::optional<RefreshAhead::Refreshed> RefreshAhead::take(uint64_t process) {
  return refreshed_.take(process);
}

void RefreshAhead::hold(uint64_t process, Refreshed served) {
  held_.take(process);
  if (served.onNode) return;  // its proof is its check alone, not what its update read
  if (held_.bytes() + bytesOf(served.proof) > requestBytes_) return;
  served.held = true;
  held_.put(process, std::move(served));
}

std::optional<RefreshAhead::Refreshed> RefreshAhead::takeHeld(uint64_t process) {
  return held_.take(process);
}

void RefreshAhead::Kept::put(uint64_t process, Refreshed made) {
  take(process);
  bytes_ += bytesOf(made.proof);
  byProcess_[process] = std::move(made);
}

std::optional<RefreshAhead::Refreshed> RefreshAhead::Kept::take(uint64_t process) {
  auto it = byProcess_.find(process);
  if (it == byProcess_.end()) return std::nullopt;
  Refreshed made = std::move(it->second);
  byProcess_.erase(it);
  bytes_ -= bytesOf(made.proof);
  return made;
}

void RefreshAhead::forget(uint64_t process) {
  nextEpoch_.erase(process);
  learnedFirstEpoch_.erase(process);
  readOnNode_.erase(process);
  offeredFirst_.erase(process);
  visits_.erase(process);
  refreshed_.take(process);
  held_.take(process);
}

void RefreshAhead::forgetRefreshes() {
  refreshed_.clear();
  held_.clear();
  visits_.clear();
}

void RefreshAhead::clear() {
  nextEpoch_.clear();
  learnedFirstEpoch_.clear();
  readOnNode_.clear();
  offeredFirst_.clear();
  forgetRefreshes();
}

}  // namespace mqd::client
