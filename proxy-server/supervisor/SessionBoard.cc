#include "SessionBoard.h"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>

#include "Log.h"

namespace mqd::server {
namespace {

constexpr const char* kNames[] = {
    "rt.calls",         "rt.callbacks",      "msg.notifications",  "wire.bytes_in",
    "wire.bytes_out",   "bulk.raw_bytes",    "bulk.wire_bytes",    "cache.lookup_hits",
    "cache.lookup_misses", "cache.process_hits", "cache.process_misses", "cache.memory_hits",
    "cache.memory_misses", "memory.blocks",   "memory.block_bytes", "memory.blocks_prefetched",
    "memory.node_blocks", "cache.lookups_prefetched", "walk.recorded", "walk.refreshed_ahead",
    "dll.calls",        "rt.calls_behind",   "memory.peer_guesses", "cache.lookups_discovered",
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == SessionBoard::kCounters, "a name per counter");

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* countName(Count c) { return kNames[static_cast<int>(c)]; }

SessionBoard::SessionBoard(size_t slots) : count_(slots) {
  bytes_ = sizeof(Slot) * slots;
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("cannot map the session board");
  slots_ = static_cast<Slot*>(p);
  for (size_t i = 0; i < count_; ++i) new (&slots_[i]) Slot();
}

SessionBoard::~SessionBoard() { ::munmap(slots_, bytes_); }

SessionBoard::Slot* SessionBoard::claim(uint64_t connection) {
  Slot* chosen = nullptr;
  for (size_t i = 0; i < count_; ++i) {
    Slot& s = slots_[i];
    int state = s.state.load();
    if (state == 0) {
      chosen = &s;
      break;
    }
    if (state == 2 && (chosen == nullptr || s.endedMs < chosen->endedMs)) chosen = &s;
  }
  if (chosen == nullptr) return nullptr;
  chosen->state.store(0);
  chosen->worker = 0;
  chosen->connection = connection;
  chosen->key = 0;
  chosen->startedMs = nowMs();
  chosen->endedMs = 0;
  chosen->dll[0] = chosen->client[0] = chosen->lastCall[0] = chosen->exit[0] = '\0';
  for (auto& c : chosen->counters) c.store(0);
  for (auto& c : chosen->clientCounters) c.store(0);
  for (auto& n : chosen->clientCounterNames) n[0] = '\0';
  chosen->state.store(1);
  return chosen;
}

void SessionBoard::end(Slot* slot, const std::string& how) {
  copyField(slot->exit, sizeof slot->exit, how);
  slot->endedMs = nowMs();
  slot->state.store(2);
}

kj::Maybe<const SessionBoard::Slot&> SessionBoard::find(uint64_t connection,
                                                        uint64_t key) const {
  if (key == 0) return nullptr;
  for (size_t i = 0; i < count_; ++i) {
    const Slot& s = slots_[i];
    if (s.state.load() != 0 && s.connection == connection && s.key == key) return s;
  }
  return nullptr;
}

void SessionBoard::forEach(const std::function<void(const Slot&)>& fn) const {
  for (size_t i = 0; i < count_; ++i) {
    if (slots_[i].state.load() != 0) fn(slots_[i]);
  }
}

std::string SessionBoard::summary(const Slot& s) {
  auto c = [&s](Count k) { return s.counters[static_cast<int>(k)].load(); };
  char line[768];
  std::snprintf(
      line, sizeof line,
      "connection %llu (worker %d, %s): %llu round trips (%llu calls, %llu callbacks), "
      "%s in, %s out; memory %llu hits / %llu misses, %llu blocks; look-ups %llu hits / %llu "
      "misses; %llu walks (%llu refreshed ahead); %llu first updates guessed from a peer's; "
      "last call %s%s%s",
      static_cast<unsigned long long>(s.connection), s.worker, s.dll[0] ? s.dll : "no DLL",
      static_cast<unsigned long long>(c(Count::Calls) + c(Count::Callbacks)),
      static_cast<unsigned long long>(c(Count::Calls)),
      static_cast<unsigned long long>(c(Count::Callbacks)),
      formatBytes(c(Count::WireBytesIn)).c_str(), formatBytes(c(Count::WireBytesOut)).c_str(),
      static_cast<unsigned long long>(c(Count::MemoryHits)),
      static_cast<unsigned long long>(c(Count::MemoryMisses)),
      static_cast<unsigned long long>(c(Count::BlocksFetched)),
      static_cast<unsigned long long>(c(Count::LookupHits)),
      static_cast<unsigned long long>(c(Count::LookupMisses)),
      static_cast<unsigned long long>(c(Count::Walks)),
      static_cast<unsigned long long>(c(Count::RefreshedAhead)),
      static_cast<unsigned long long>(c(Count::PeerGuesses)),
      s.lastCall[0] ? s.lastCall : "none",
      s.exit[0] ? ", " : "", s.exit);
  return line;
}

void copyField(char* field, size_t size, const std::string& text) {
  size_t n = text.size() < size - 1 ? text.size() : size - 1;
  std::memcpy(field, text.data(), n);
  field[n] = '\0';
}

void Metrics::setLastCall(const char* entryPoint) {
  copyField(slot_->lastCall, sizeof slot_->lastCall, entryPoint);
}

}  // namespace mqd::server
