#include "RemoteDebugger.h"

#include <cmath>

#include <algorithm>
#include <chrono>
#include <type_traits>
#include <cstdio>
#include <string>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "AsanFiber.h"
#include "Bulk.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "SessionBoard.h"

namespace mqd::server {
namespace {

// Waits for a Debugger request on the DLL call's fiber, counting the round trip. What the DLL
// printed so far is relayed first, so that its output and its requests reach the debugger in
// the order they happened (answers from the caches are not seen by the debugger: they need
// no relay, and cost no system call).
template <typename Request>
auto await(DllCall& call, Request& request) {
  call.host().relayDllOutput(call);
  call.metrics().add(Count::Callbacks);
  AsanFiber::Wait onLoopStack;
  return request.send().wait(call.waitScope());
}

mqs_taddr_t toTaddr(uint64_t value) {
  if (value > std::numeric_limits<mqs_taddr_t>::max()) {
    throw ProxyError(MQD_PROXY_ERR_ADDRESS_WIDTH, "address does not fit this server's taddr");
  }
  return static_cast<mqs_taddr_t>(value);
}

// One process attribute: from `kept` when the policy caches and it is there, else asked for
// (and kept, when the policy caches).
template <typename T, typename Ask>
T attribute(DllCall& call, bool caches, std::optional<T>& kept, Ask&& ask) {
  if (caches && kept) {
    call.metrics().add(Count::ProcessHits);
    return *kept;
  }
  if (caches) call.metrics().add(Count::ProcessMisses);
  T value = ask();
  if (caches) kept = value;
  return value;
}

void hit(DllCall& call, bool cached, Count hitCounter, Count missCounter) {
  call.metrics().add(cached ? hitCounter : missCounter);
}

}  // namespace

template <typename Request>
auto RemoteDebugger::awaitAnswer(DllCall& call, Request& request) {
  if (discovery_) {
    throw ProxyError(MQD_PROXY_ERR_CALLBACK_FAILED, "no request leaves a look-up discovery");
  }
  // Read before it is sent: a request sent is freed.
  bool forBlocks = false;
  using FetchBlocks =
      capnp::Request<wire::Debugger::FetchBlocksParams, wire::Debugger::FetchBlocksResults>;
  if constexpr (std::is_same_v<Request, FetchBlocks>) forBlocks = !request.getAside();
  auto started = std::chrono::steady_clock::now();
  auto response = await(call, request);
  if (forBlocks) ++blockCallbacks_;
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  lastCallback_ = took.count();
  if (fastestCallback_ == 0 || lastCallback_ < fastestCallback_) fastestCallback_ = lastCallback_;
  return response;
}

uint64_t RemoteDebugger::aroundBudget() const {
  if (options_.aroundBytes) return std::min(*options_.aroundBytes, kMaxAroundBytes);
  return aroundBudgetFor(fastestCallback_ != 0 ? fastestCallback_ : shimRoundTrip_,
                         bulkSecondsPerByte_ ? bulkSecondsPerByte_ : shimSecondsPerByte_);
}

void RemoteDebugger::takeShimTimings(wire::LinkTimings::Reader timings) {
  double roundTrip = timings.getRoundTripSeconds();
  if (std::isfinite(roundTrip) && roundTrip > 0) shimRoundTrip_ = roundTrip;
  double perByte = timings.getReadSecondsPerByte();
  if (timings.getReadCostKnown() && std::isfinite(perByte) && perByte >= 0) {
    shimSecondsPerByte_ = perByte;
  }
}

uint64_t RemoteDebugger::aroundBudgetFor(double fastestCallback,
                                         std::optional<double> bulkSecondsPerByte) {
  if (!bulkSecondsPerByte || fastestCallback == 0) return 0;
  double bytes = fastestCallback / 2 / std::max(*bulkSecondsPerByte, kFastestRead);
  return bytes >= static_cast<double>(kMaxAroundBytes) ? kMaxAroundBytes
                                                       : static_cast<uint64_t>(bytes);
}

RemoteDebugger::RemoteDebugger(wire::Debugger::Client client, Options options)
    : client_(kj::mv(client)), options_(options) {}

// ---- look-ups ----

namespace {

// find_symbol / find_function through a cache: an answer without an address serves only a DLL
// that passed no out-pointer; the debugger is asked with the DLL's own out-pointer (or NULL).
template <typename Map, typename Key, typename Ask>
int cachedAddress(DllCall& call, bool caches, Map& map, const Key& key, bool wantAddress,
                  Ask&& ask, mqs_taddr_t* addr) {
  AddressAnswer answer;
  if (!caches) {
    answer = ask();
  } else {
    auto it = map.find(key);
    bool usable = it != map.end() && (it->second.knowsAddress || !wantAddress);
    call.metrics().add(usable ? Count::LookupHits : Count::LookupMisses);
    answer = usable ? it->second : ask();
    if (!usable) map[key] = answer;
  }
  if (addr != nullptr && answer.written) *addr = toTaddr(answer.address);
  return answer.rc;
}

AddressAnswer addressAnswer(int rc, bool asked, wire::OutAddress::Reader out) {
  AddressAnswer a;
  a.rc = rc;
  a.knowsAddress = asked;
  a.written = out.isValue();
  a.address = a.written ? out.getValue() : 0;
  return a;
}

// A discovery child's stand-in for a symbol or function: found, at an address of its own.
constexpr uint64_t kStandInAddress = 0x10000;
// ... and for a type: a token no debugger hands out first (they count up from 1).
constexpr uint64_t kStandInTypes = uint64_t{1} << 40;

}  // namespace

bool RemoteDebugger::discovered(const LookupKey& key) const {
  if (!discovery_) return false;
  discovery_(key);
  return true;
}

namespace {

AddressAnswer standInAddress(bool want, bool existing) {
  AddressAnswer a;
  a.rc = want || existing ? mqs_ok : mqs_no_information;
  a.knowsAddress = want;
  a.written = want;
  a.address = kStandInAddress;
  return a;
}

}  // namespace

int RemoteDebugger::findSymbol(DllCall& call, RemoteImage& image, const char* name,
                               mqs_taddr_t* addr) {
  bool want = addr != nullptr;
  LookupKey key{LookupKey::Symbol, name, 0, ""};
  consume(&key, want);
  if (caches()) seen_.insert(key);
  return cachedAddress(call, caches(), image.symbols, std::string(name), want, [&]() {
    if (discovered(key)) return standInAddress(want, discoveryExisting_);
    auto request = client_.findSymbolRequest();
    request.setImage(image.token);
    request.setName(name);
    request.setWantAddress(want);
    auto response = awaitAnswer(call, request);
    return addressAnswer(response.getRc(), want, response.getAddress());
  }, addr);
}

int RemoteDebugger::findFunction(DllCall& call, RemoteImage& image, const char* name, int lang,
                                 mqs_taddr_t* addr) {
  bool want = addr != nullptr;
  LookupKey key{LookupKey::Function, name, lang, ""};
  consume(&key, want);
  if (caches()) seen_.insert(key);
  return cachedAddress(call, caches(), image.functions, std::make_pair(std::string(name), lang),
                       want, [&]() {
                         if (discovered(key)) return standInAddress(want, discoveryExisting_);
                         auto request = client_.findFunctionRequest();
                         request.setImage(image.token);
                         request.setName(name);
                         request.setLang(lang);
                         request.setWantAddress(want);
                         auto response = awaitAnswer(call, request);
                         return addressAnswer(response.getRc(), want, response.getAddress());
                       },
                       addr);
}

uint64_t RemoteDebugger::findType(DllCall& call, RemoteImage& image, const char* name,
                                  int lang) {
  auto key = std::make_pair(std::string(name), lang);
  LookupKey named{LookupKey::Type, name, lang, ""};
  consume(&named);
  if (caches()) {
    seen_.insert(named);
    auto it = image.types.find(key);
    hit(call, it != image.types.end(), Count::LookupHits, Count::LookupMisses);
    if (it != image.types.end()) return it->second;
  }
  uint64_t token = kStandInTypes + typeNames_.size() + 1;
  if (!discovered(named)) {
    auto request = client_.findTypeRequest();
    request.setImage(image.token);
    request.setName(name);
    request.setLang(lang);
    token = awaitAnswer(call, request).getType();
  }
  if (caches()) {
    image.types[key] = token;
    if (token != 0) typeNames_[token] = key;
  }
  return token;
}

int RemoteDebugger::fieldOffset(DllCall& call, uint64_t type, const char* field) {
  auto key = std::make_pair(type, std::string(field));
  std::optional<LookupKey> lookup = byTypeName(LookupKey::Field, type, field);
  consume(lookup ? &*lookup : nullptr);
  if (caches()) {
    if (lookup) seen_.insert(*lookup);
    auto it = fieldOffsets_.find(key);
    hit(call, it != fieldOffsets_.end(), Count::LookupHits, Count::LookupMisses);
    if (it != fieldOffsets_.end()) return it->second;
  }
  int offset = 0;
  if (!lookup || !discovered(*lookup)) {
    auto request = client_.fieldOffsetRequest();
    request.setType(type);
    request.setField(field);
    offset = awaitAnswer(call, request).getOffset();
  }
  if (caches()) fieldOffsets_[key] = offset;
  return offset;
}

int RemoteDebugger::sizeOf(DllCall& call, uint64_t type) {
  std::optional<LookupKey> lookup = byTypeName(LookupKey::SizeOf, type, "");
  consume(lookup ? &*lookup : nullptr);
  if (caches()) {
    if (lookup) seen_.insert(*lookup);
    auto it = sizes_.find(type);
    hit(call, it != sizes_.end(), Count::LookupHits, Count::LookupMisses);
    if (it != sizes_.end()) return it->second;
  }
  int size = 8;
  if (!lookup || !discovered(*lookup)) {
    auto request = client_.sizeOfRequest();
    request.setType(type);
    size = awaitAnswer(call, request).getSize();
  }
  if (caches()) sizes_[type] = size;
  return size;
}

std::optional<LookupKey> RemoteDebugger::byTypeName(LookupKey::Kind kind, uint64_t type,
                                                    const char* field) const {
  auto named = typeNames_.find(type);
  if (named == typeNames_.end()) return std::nullopt;
  return LookupKey{kind, named->second.first, named->second.second, field};
}

void RemoteDebugger::consume(const LookupKey* key, bool address) {
  if (consumed_ == nullptr) return;
  if (key == nullptr) {
    consumed_->unnamed = true;
  } else {
    consumed_->add(*key, address);
  }
}

namespace {

TypeSizes typeSizesOf(capnp::List<wire::OutInt>::Reader list) {
  TypeSizes sizes;
  for (unsigned i = 0; i < list.size() && i < sizes.size(); ++i) {
    if (list[i].isValue()) sizes[i] = list[i].getValue();
  }
  return sizes;
}

}  // namespace

void RemoteDebugger::keepProcessFacts(RemoteProcess& process, wire::ProcessFacts::Reader facts) {
  process.image = facts.getImage();
  process.typeSizes = typeSizesOf(facts.getTypeSizes());
  // The rank the debugger answered in this very set-up: kept for this call, as the first ask
  // would have kept it (process.call is reset at the next).
  if (facts.hasGlobalRank() && facts.getGlobalRank().isValue()) {
    process.call.globalRank = facts.getGlobalRank().getValue();
  }
}

void RemoteDebugger::getTypeSizes(DllCall& call, RemoteProcess& process,
                                  mqs_target_type_sizes* sizes) {
  TypeSizes answer = attribute(call, caches(), process.typeSizes, [&]() {
    auto request = client_.getTypeSizesRequest();
    request.setProcess(process.token);
    return typeSizesOf(awaitAnswer(call, request).getSizes());
  });
  if (sizes == nullptr) return;
  int* fields = &sizes->short_size;
  for (size_t i = 0; i < answer.size(); ++i) {
    if (answer[i]) fields[i] = *answer[i];
  }
}

// ---- memory ----

namespace {

// Counts one block of a fetchBlocks answer, of `size` bytes.
void countBlock(DllCall& call, wire::MemoryBlock::Reader b, size_t size) {
  call.metrics().add(Count::BlocksFetched);
  call.metrics().add(Count::BlockBytes, size);
  call.metrics().add(Count::BulkRawBytes, size);
  call.metrics().add(Count::BulkWireBytes,
                     b.getData().isZstd() ? b.getData().getZstd().size() : size);
}

// One block of a fetchBlocks answer as bytes, counted.
kj::Array<kj::byte> takeBlock(DllCall& call, wire::MemoryBlock::Reader b, uint32_t asked) {
  auto data = readBulk(b.getData(), asked);
  countBlock(call, b, data.size());
  return data;
}

void setBlock(wire::BlockRequest::Builder r, uint64_t address, uint32_t size, uint64_t needed,
              uint32_t neededSize) {
  r.setAddress(address);
  r.setSize(size);
  r.setNeededAddress(needed);
  r.setNeededSize(neededSize);
}

// Keeps a block answer and serves the DLL's read from it; the answer must hold the read.
void storeAndRead(TargetMemory& memory, wire::MemoryBlock::Reader b, kj::Array<kj::byte> data,
                  uint64_t address, uint32_t size, void* buf) {
  if (!memory.storeAndRead(b.getAddress(), kj::mv(data), address, size, buf)) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "fetchBlocks answer does not hold what was needed");
  }
}

}  // namespace

int RemoteDebugger::fetchBlock(DllCall& call, RemoteProcess& process, uint64_t address,
                               uint32_t size, void* buf) {
  TargetMemory& memory = *process.memory;
  TargetMemory::Request block = memory.requestFor(address, size);
  MQD_LOG(Trace, "process %llu: a read of %u bytes at %#llx misses: block %#llx (%u bytes)",
          static_cast<unsigned long long>(process.token), size,
          static_cast<unsigned long long>(address), static_cast<unsigned long long>(block.address),
          block.size);
  // The blocks around it a walk is likely to read next, not held yet (see kMaxAroundBytes).
  uint32_t misses = memory.countMiss();
  uint64_t bytes = aroundBudget();
  if (!memory.unguided()) {
    uint64_t more = misses >= 2 ? (uint64_t{1} << std::min<uint32_t>(misses - 1, 30)) - 1 : 0;
    bytes = std::min(more * memory.blockSize(), bytes);
  }
  std::vector<TargetMemory::Window> around =
      blocksAround(memory, block.address, block.address + block.size, bytes);
  auto request = client_.fetchBlocksRequest();
  request.setProcess(process.token);
  auto list = request.initBlocks(static_cast<unsigned>(1 + around.size()));
  setBlock(list[0], block.address, block.size, address, size);
  for (unsigned i = 0; i < around.size(); ++i) {
    setBlock(list[i + 1], around[i].address, around[i].size, around[i].address, around[i].size);
  }
  auto response = awaitAnswer(call, request);
  auto blocks = response.getBlocks();
  if (blocks.size() != list.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "fetchBlocks answer count");
  }
  uint64_t fetched = 0;
  for (auto b : blocks) fetched += b.getRc() == mqs_ok ? b.getData().getSize() : 0;
  if (fetched >= kBulkFetch) {
    bulkSecondsPerByte_ = std::max(0.0, lastCallback_ - fastestCallback_) /
                          static_cast<double>(fetched);
  }
  for (unsigned i = 0; i < around.size(); ++i) {
    keepBlock(call, process, around[i], blocks[i + 1]);
  }
  auto b = blocks[0];
  if (b.getRc() != mqs_ok) {
    memory.storeFailure(address, size, b.getRc());
    return b.getRc();
  }
  storeAndRead(memory, b, takeBlock(call, b, block.size), address, size, buf);
  return mqs_ok;
}

// ---- the target read on its node ----

std::optional<int> RemoteDebugger::fromNode(DllCall& call, RemoteProcess& process,
                                            uint64_t address, uint32_t size, void* buf) {
  auto& node = process.node;
  using State = RemoteProcess::NodeProof::State;
  if (node.state == State::Refused) return std::nullopt;
  if (node.state == State::Untried || !node.checkedThisEpoch) {
    return proveOnNode(call, process, address, size, buf);
  }
  // Proved and checked: the cache's block, or else the pages around what is needed (a block
  // may run into unmapped memory).
  constexpr uint64_t kPage = 4096;
  TargetMemory::Request block = process.memory->requestFor(address, size);
  uint64_t start = block.address;
  auto bytes = kj::heapArray<kj::byte>(block.size);
  if (!node.process->read(start, bytes.begin(), bytes.size())) {
    start = address / kPage * kPage;
    uint64_t end = (address + size + kPage - 1) / kPage * kPage;
    if (end <= start || end - start > block.size) return std::nullopt;
    bytes = kj::heapArray<kj::byte>(end - start);
    if (!node.process->read(start, bytes.begin(), bytes.size())) return std::nullopt;
  }
  call.metrics().add(Count::NodeBlocks);
  process.memory->storeAndRead(start, kj::mv(bytes), address, size, buf);  // it holds the read
  return mqs_ok;
}

std::optional<int> RemoteDebugger::proveOnNode(DllCall& call, RemoteProcess& process,
                                               uint64_t address, uint32_t size, void* buf) {
  auto& node = process.node;
  using State = RemoteProcess::NodeProof::State;
  bool identify = node.state == State::Untried;
  std::vector<LocalProcess> candidates;
  int rank = -1;
  if (identify) {
    if (node.triedThisEpoch) return std::nullopt;
    node.triedThisEpoch = true;
    rank = globalRank(call, process);
    if (rank < 0) return std::nullopt;  // the debugger may know it at a later epoch
    candidates = LocalProcess::withRank(rank);
    if (candidates.empty()) {
      refuseNode(process, "no process of this user on this host has MPI rank " +
                              std::to_string(rank));
      return std::nullopt;
    }
  }
  // One round trip: what the DLL needs now, and each candidate's AT_RANDOM bytes.
  auto request = client_.fetchBlocksRequest();
  request.setProcess(process.token);
  auto list = request.initBlocks(static_cast<unsigned>(1 + candidates.size()));
  setBlock(list[0], address, size, address, size);
  constexpr uint32_t kRandom = std::tuple_size<LocalProcess::Random>::value;
  for (size_t i = 0; i < candidates.size(); ++i) {
    uint64_t at = candidates[i].randomAddress();
    setBlock(list[static_cast<unsigned>(1 + i)], at, kRandom, at, kRandom);
  }
  auto response = awaitAnswer(call, request);
  auto blocks = response.getBlocks();
  if (blocks.size() != list.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "fetchBlocks answer count");
  }
  if (identify) {
    std::vector<bool> shows(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
      shows[i] = showsRandom(call, candidates[i], blocks[static_cast<unsigned>(1 + i)]);
    }
    identifyOnNode(process, rank, candidates, shows, "");
  }
  // The DLL's read: the debugger's answer, and this epoch's check of the node's memory.
  auto b = blocks[0];
  if (b.getRc() != mqs_ok) {
    process.memory->storeFailure(address, size, b.getRc());
    return b.getRc();
  }
  storeAndRead(*process.memory, b, takeBlock(call, b, size), address, size, buf);
  if (node.state == State::Proven) {
    if (nodeShows(process, address, static_cast<const kj::byte*>(buf), size, "read")) {
      node.checkedThisEpoch = true;
      node.checked = TargetMemory::Window{address, size};
    }
  }
  return mqs_ok;
}

bool RemoteDebugger::showsRandom(DllCall& call, const LocalProcess& candidate,
                                 wire::MemoryBlock::Reader block) {
  constexpr uint32_t kRandom = std::tuple_size<LocalProcess::Random>::value;
  if (block.getRc() != mqs_ok) return false;
  auto bytes = takeBlock(call, block, kRandom);
  uint64_t at = candidate.randomAddress();
  if (block.getAddress() > at || at - block.getAddress() + kRandom > bytes.size()) return false;
  return std::memcmp(bytes.begin() + (at - block.getAddress()), candidate.random().data(),
                     kRandom) == 0;
}

void RemoteDebugger::identifyOnNode(RemoteProcess& process, int rank,
                                    std::vector<LocalProcess>& candidates,
                                    const std::vector<bool>& shows, const char* how) {
  auto& node = process.node;
  std::vector<size_t> matches;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (shows[i]) matches.push_back(i);
  }
  if (matches.size() == 1 && !candidates[matches[0]].stopped()) {
    refuseNode(process, "pid " + std::to_string(candidates[matches[0]].pid()) +
                            " runs: the debugger shows a state of it that is not the live one");
  } else if (matches.size() == 1) {
    node.process = kj::mv(candidates[matches[0]]);
    node.state = RemoteProcess::NodeProof::State::Proven;
    MQD_LOG(Info, "process %llu: memory read on this host, from pid %d (MPI rank %d; its "
            "AT_RANDOM bytes are the debugger's%s)",
            static_cast<unsigned long long>(process.token), node.process->pid(), rank, how);
  } else {
    refuseNode(process, std::to_string(matches.size()) + " of the " +
                            std::to_string(candidates.size()) + " processes with MPI rank " +
                            std::to_string(rank) + " show the debugger's AT_RANDOM bytes");
  }
}

std::vector<RemoteDebugger::BlockAhead> RemoteDebugger::proveAheadOnNode(
    DllCall& call, RemoteProcess& process, const std::vector<BlockAhead>& ahead) {
  static_assert(std::tuple_size<LocalProcess::Random>::value == wire::AT_RANDOM_BYTES);
  if (!process.call.globalRank || *process.call.globalRank < 0) return ahead;
  int rank = *process.call.globalRank;
  std::vector<LocalProcess> candidates = LocalProcess::withRank(rank);
  // Each candidate's bytes must have come (a process started since the session opened was
  // listed to no shim): else the proof is made the usual way, at the set-up's first read.
  // Beside them, each candidate's stack window as the session's opening listed it: the
  // proved one's is this epoch's check, the others' nobody's (another process's memory).
  std::vector<bool> shows(candidates.size()), sent(candidates.size());
  std::vector<const BlockAhead*> stacks(candidates.size(), nullptr);
  std::vector<uint64_t> listed(candidates.size(), 0);  // 0: no stack listed
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto at = options_.listedStacks.find(candidates[i].pid());
    if (at != options_.listedStacks.end()) listed[i] = at->second;
  }
  std::vector<BlockAhead> rest;
  for (const BlockAhead& a : ahead) {
    bool theirs = false;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (listed[i] != 0 && a.window.address == listed[i] &&
          a.window.size == wire::STACK_CHECK_BYTES) {
        theirs = true;
        stacks[i] = &a;
      }
      if (a.window.address != candidates[i].randomAddress() ||
          a.window.size != wire::AT_RANDOM_BYTES) {
        continue;
      }
      theirs = sent[i] = true;
      shows[i] = showsRandom(call, candidates[i], a.block);
    }
    if (!theirs) rest.push_back(a);
  }
  if (candidates.empty() || std::find(sent.begin(), sent.end(), false) != sent.end()) {
    return ahead;
  }
  // The one that shows them, if one does, is proved (identifyOnNode); its stack is the check.
  auto shown = std::find(shows.begin(), shows.end(), true);
  const BlockAhead* stack =
      shown == shows.end() ? nullptr : stacks[static_cast<size_t>(shown - shows.begin())];
  identifyOnNode(process, rank, candidates, shows,
                 stack != nullptr ? ", read with the set-up with its stack's top"
                                  : ", read with the set-up");
  if (process.node.proven() && stack != nullptr) rest.insert(rest.begin(), *stack);
  return rest;
}

void RemoteDebugger::checkAheadOnNode(DllCall& call, RemoteProcess& process,
                                      const std::vector<BlockAhead>& ahead) {
  auto& node = process.node;
  for (const BlockAhead& a : ahead) {
    // Only a whole window compares: a failed or short read leaves the check to the DLL's
    // first read (a round trip, as without the shim's read).
    if (a.block.getRc() != mqs_ok || a.block.getAddress() != a.window.address) continue;
    auto data = takeBlock(call, a.block, a.window.size);
    if (data.size() != a.window.size || data.size() == 0) continue;
    if (!nodeShows(process, a.block.getAddress(), data.begin(), data.size(), "read ahead")) {
      return;
    }
    node.checkedThisEpoch = true;
    if (!node.checked) node.checked = a.window;  // a set-up's: the next epoch's check compares it
    process.memory->store(a.block.getAddress(), kj::mv(data));
  }
}

std::vector<kj::Array<kj::byte>> RemoteDebugger::proveLateOnNode(
    DllCall& call, RemoteProcess& process, const std::vector<TargetMemory::Window>& windows) {
  static_assert(std::tuple_size<LocalProcess::Random>::value == wire::AT_RANDOM_BYTES);
  auto& node = process.node;
  if (!options_.nodeMemory || options_.policy != wire::CachePolicy::EPOCH || !process.memory ||
      node.state != RemoteProcess::NodeProof::State::Untried || !process.call.globalRank ||
      *process.call.globalRank < 0 || windows.size() != 2) {
    return {};
  }
  int rank = *process.call.globalRank;
  // With two of that rank here, only the debugger's bytes tell which it shows: proveOnNode.
  std::vector<LocalProcess> candidates = LocalProcess::withRank(rank);
  if (candidates.size() != 1) return {};
  LocalProcess& only = candidates[0];
  auto listed = options_.listedStacks.find(only.pid());
  if (listed == options_.listedStacks.end()) return {};
  const TargetMemory::Window random{only.randomAddress(), wire::AT_RANDOM_BYTES};
  const TargetMemory::Window stack{listed->second, wire::STACK_CHECK_BYTES};
  auto same = [](const TargetMemory::Window& a, const TargetMemory::Window& b) {
    return a.address == b.address && a.size == b.size;
  };
  bool stackFirst = same(windows[0], stack) && same(windows[1], random);
  if (!stackFirst && !(same(windows[0], random) && same(windows[1], stack))) return {};
  if (!only.stopped()) return {};  // refused at the first read, as ever
  std::vector<kj::Array<kj::byte>> read;
  for (const auto& w : windows) {
    auto data = kj::heapArray<kj::byte>(w.size);
    if (!only.read(w.address, data.begin(), data.size())) return {};
    read.push_back(kj::mv(data));
  }
  const kj::Array<kj::byte>& top = read[stackFirst ? 0 : 1];
  process.memory->store(stack.address, kj::heapArray<kj::byte>(top.asPtr()));
  call.metrics().add(Count::NodeBlocks);
  node.process = kj::mv(only);
  node.state = RemoteProcess::NodeProof::State::Proven;
  node.checkedThisEpoch = true;
  node.checked = stack;
  MQD_LOG(Info, "process %llu: memory read on this host, from pid %d (MPI rank %d; the one "
          "process of that rank here, its AT_RANDOM bytes and its stack's top for the shim to "
          "compare with the debugger's)",
          static_cast<unsigned long long>(process.token), node.process->pid(), rank);
  return read;
}

std::vector<kj::Array<kj::byte>> RemoteDebugger::readForLateCheck(
    DllCall& call, RemoteProcess& process, const std::vector<TargetMemory::Window>& windows) {
  uint64_t bytes = 0;
  for (const auto& w : windows) bytes += w.size;
  if (bytes > wire::MAX_BLOCKS_AHEAD_BYTES) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL,
                     "memory to check late: " + std::to_string(bytes) +
                         " bytes, more than maxBlocksAheadBytes");
  }
  std::vector<kj::Array<kj::byte>> read;
  auto& node = process.node;
  if (node.state != RemoteProcess::NodeProof::State::Proven || !process.memory ||
      options_.policy != wire::CachePolicy::EPOCH) {
    return read;
  }
  const LocalProcess& local = *node.process;
  if (!local.stopped()) {
    refuseNode(process, "pid " + std::to_string(local.pid()) +
                            " runs: the debugger shows a state of it that is not the live one");
    return read;
  }
  for (const auto& w : windows) {
    auto data = kj::heapArray<kj::byte>(w.size);
    if (w.size == 0 || !local.read(w.address, data.begin(), data.size())) return {};
    read.push_back(kj::mv(data));
  }
  for (size_t i = 0; i < windows.size(); ++i) {
    process.memory->store(windows[i].address, kj::heapArray<kj::byte>(read[i].asPtr()));
    call.metrics().add(Count::NodeBlocks);
  }
  node.checkedThisEpoch = true;
  return read;
}

bool RemoteDebugger::nodeShows(RemoteProcess& process, uint64_t address, const kj::byte* bytes,
                               size_t size, const char* how) {
  const LocalProcess& local = *process.node.process;
  auto mine = kj::heapArray<kj::byte>(size);
  if (local.stopped() && local.read(address, mine.begin(), size) &&
      std::memcmp(mine.begin(), bytes, size) == 0) {
    return true;
  }
  char where[32];
  std::snprintf(where, sizeof where, "0x%llx", static_cast<unsigned long long>(address));
  refuseNode(process, "pid " + std::to_string(local.pid()) + "'s memory at " + where +
                          " is not what the debugger " + how + ", or it runs (another "
                          "process, or a past state)");
  return false;
}

void RemoteDebugger::refuseNode(RemoteProcess& process, const std::string& why) {
  process.node.state = RemoteProcess::NodeProof::State::Refused;
  process.node.process.reset();
  MQD_LOG(Info, "process %llu: memory read through the debugger: %s",
          static_cast<unsigned long long>(process.token), why.c_str());
}

int RemoteDebugger::fetchData(DllCall& call, RemoteProcess& process, uint64_t address, int size,
                              void* buf) {
  if (!caches() || !process.memory || size == 0) {
    auto request = client_.fetchDataRequest();
    request.setProcess(process.token);
    request.setAddress(address);
    request.setSize(size);
    auto response = awaitAnswer(call, request);
    int rc = response.getRc();
    if (rc != mqs_ok) return rc;
    auto data = response.getData();
    if (data.size() != static_cast<size_t>(size)) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "fetch_data reply of wrong size");
    }
    if (size > 0) std::memcpy(buf, data.begin(), data.size());
    return rc;
  }
  auto n = static_cast<uint32_t>(size);
  TargetMemory& memory = *process.memory;
  if (memory.read(address, n, buf)) {
    call.metrics().add(Count::MemoryHits);
    memory.touch(address, n);
    return mqs_ok;
  }
  int rc;
  if (memory.failed(address, n, &rc)) {
    call.metrics().add(Count::MemoryHits);
    return rc;
  }
  call.metrics().add(Count::MemoryMisses);
  std::optional<int> fromHere;
  if (options_.nodeMemory) fromHere = fromNode(call, process, address, n, buf);
  rc = fromHere ? *fromHere : fetchBlock(call, process, address, n, buf);
  if (rc == mqs_ok) memory.touch(address, n);
  return rc;
}

void RemoteDebugger::newEpoch(DllCall& call, RemoteProcess& process,
                              const std::vector<TargetMemory::Window>& learned,
                              const std::vector<BlockAhead>& ahead, EpochKind kind) {
  if (!caches()) return;
  if (!process.memory) process.memory = std::make_unique<TargetMemory>(options_.blockSize);
  process.memory->newEpoch(kind == EpochKind::SetUp);
  process.node.newEpoch();
  if (options_.policy != wire::CachePolicy::EPOCH) return;
  // A set-up's identity proved from what the shim read ahead with it, the rest of which is
  // this epoch's check; a proved process is read on the node as the DLL needs it: nothing to
  // ask for ahead, and what the shim read ahead is this epoch's check.
  std::vector<BlockAhead> identified;
  const std::vector<BlockAhead>* check = &ahead;
  if (kind == EpochKind::SetUp && options_.nodeMemory &&
      process.node.state == RemoteProcess::NodeProof::State::Untried) {
    identified = proveAheadOnNode(call, process, ahead);
    check = &identified;
  }
  if (process.node.state == RemoteProcess::NodeProof::State::Proven) {
    checkAheadOnNode(call, process, *check);
    if (process.node.state == RemoteProcess::NodeProof::State::Proven) return;
  }
  // What the shim read ahead is kept; everything else the previous epoch read (and what an
  // earlier session learned, or else a set-up's blocks) is asked for, each once.
  std::set<std::pair<uint64_t, uint32_t>> seen = keepAhead(call, process, ahead);
  if (kind == EpochKind::RefreshAhead) {
    // A process never updated and nothing learned of: what was sent ahead is a guess (another
    // rank's walk, moved), and a miss is where the guess failed, as unguided as a first
    // update's walk.
    if (learned.empty() && process.memory->afterSetUp()) process.memory->setUnguided();
    return;
  }
  std::vector<TargetMemory::Window> wanted;
  const std::vector<TargetMemory::Window> none;
  const std::vector<TargetMemory::Window>& setUpBlocks =
      learned.empty() ? process.memory->previousSetUpWindows() : none;
  auto inSetUp = [&setUpBlocks](const TargetMemory::Window& w) {
    for (const auto& b : setUpBlocks) {
      if (w.address >= b.address && w.address - b.address + w.size <= b.size) return true;
    }
    return false;
  };
  // Nothing names what the first update after a set-up nothing guided reads when nothing was
  // learned of it either (a job never seen: its first rank's). Whether the set-up was is
  // SessionService's call (setupProcess).
  if (kind == EpochKind::Update && learned.empty() && process.memory->afterUnguidedSetUp()) {
    process.memory->setUnguided();
  }
  // Nor what a window the shim sent holds already (a guess's piece around a learned window).
  for (const auto* list : {&process.memory->previousWindows(), &learned, &setUpBlocks}) {
    for (const auto& w : *list) {
      if (list != &setUpBlocks && inSetUp(w)) continue;
      if (process.memory->read(w.address, w.size, nullptr)) continue;
      if (seen.insert({w.address, w.size}).second) wanted.push_back(w);
    }
  }
  prefetch(call, process, wanted);
}

std::vector<TargetMemory::Window> RemoteDebugger::nextEpochWindows(
    const RemoteProcess& process) const {
  std::vector<TargetMemory::Window> out;
  if (options_.policy != wire::CachePolicy::EPOCH || !process.memory) return out;
  if (process.node.state == RemoteProcess::NodeProof::State::Proven) {
    if (process.node.checked) out.push_back(*process.node.checked);
    return out;
  }
  return blocksAheadBound(process.memory->currentWindows());
}

std::vector<TargetMemory::Window> RemoteDebugger::firstEpochWindows(
    const RemoteProcess& process, const std::vector<TargetMemory::Window>& learned) const {
  if (options_.policy != wire::CachePolicy::EPOCH || !process.memory ||
      !process.memory->setUpEpoch() ||
      process.node.state == RemoteProcess::NodeProof::State::Proven) {
    return nextEpochWindows(process);
  }
  std::vector<TargetMemory::Window> all = learned.empty() ? process.memory->keptWindows()
                                                          : process.memory->currentWindows();
  const auto& more = learned.empty() ? process.memory->currentWindows() : learned;
  all.insert(all.end(), more.begin(), more.end());
  // After a set-up nothing guided, the first update walks near what the set-up read (a
  // library's data) as well: the blocks around its blocks that its first miss would read.
  // Each block once: the set-up's blocks may lie close enough to share the blocks around.
  if (learned.empty() && process.memory->unguided()) {
    std::set<uint64_t> added;
    for (const auto& kept : process.memory->keptWindows()) {
      for (const auto& w : blocksAround(*process.memory, kept.address, kept.address + kept.size,
                                        aroundBudget())) {
        if (added.insert(w.address).second) all.push_back(w);
      }
    }
  }
  return blocksAheadBound(std::move(all));
}

std::vector<TargetMemory::Window> RemoteDebugger::blocksAround(const TargetMemory& memory,
                                                               uint64_t start, uint64_t end,
                                                               uint64_t bytes) {
  std::vector<TargetMemory::Window> around;
  const uint32_t blockSize = memory.blockSize();
  start = start / blockSize * blockSize;
  uint64_t below = std::min<uint64_t>(bytes / blockSize / 2 * blockSize, start);
  auto add = [&](uint64_t at) {
    if (!memory.read(at, blockSize, nullptr)) around.push_back({at, blockSize});
  };
  for (uint64_t at = start - below; at < start; at += blockSize) add(at);
  // Up from the block after `end`, stopping where the address space wraps.
  uint64_t from = (end + blockSize - 1) / blockSize * blockSize;
  for (uint64_t at = from; at >= from && at - from < bytes - below; at += blockSize) add(at);
  return around;
}

std::vector<TargetMemory::Window> RemoteDebugger::setUpAheadWindows(
    const RemoteProcess& process, const std::vector<TargetMemory::Window>& learnedSetUp) const {
  // Not for a process that may be read on its node: the proof of its identity is made at the
  // set-up's first read that misses, and what is sent ahead would leave none.
  if (options_.policy != wire::CachePolicy::EPOCH || !process.memory ||
      !process.memory->setUpEpoch() ||
      (options_.nodeMemory &&
       process.node.state != RemoteProcess::NodeProof::State::Refused)) {
    return {};
  }
  std::vector<TargetMemory::Window> missing;
  for (const auto& w : learnedSetUp) {
    if (!process.memory->read(w.address, w.size, nullptr)) missing.push_back(w);
  }
  return blocksAheadBound(std::move(missing));
}

std::vector<TargetMemory::Window> RemoteDebugger::imageSetUpAheadWindows(
    const std::vector<TargetMemory::Window>& learnedSetUp) const {
  // On its node a process proved is read there: of its set-up, only the set-up epoch's check
  // is read through the debugger, with the proof of its identity, at the stack pointer the
  // session's opening listed (openSession's nodeProcesses).
  if (options_.policy != wire::CachePolicy::EPOCH || options_.nodeMemory) return {};
  return blocksAheadBound(learnedSetUp);
}

std::vector<TargetMemory::Window> RemoteDebugger::symbolBlocks(const RemoteImage& image) const {
  std::set<uint64_t> starts;
  const uint64_t block = options_.blockSize;
  for (const auto& [name, answer] : image.symbols) {
    if (answer.rc == mqs_ok && answer.written && answer.address != 0) {
      starts.insert(answer.address / block * block);
    }
  }
  std::vector<TargetMemory::Window> out;
  for (uint64_t start : starts) out.push_back({start, options_.blockSize});
  return out;
}

std::set<std::pair<uint64_t, uint32_t>> RemoteDebugger::keepAhead(
    DllCall& call, RemoteProcess& process, const std::vector<BlockAhead>& ahead) {
  // Not kept for a process read on its node: the node proof checks what the shim read
  // (newEpoch).
  bool keep = process.memory && options_.policy == wire::CachePolicy::EPOCH &&
              process.node.state != RemoteProcess::NodeProof::State::Proven;
  std::set<std::pair<uint64_t, uint32_t>> seen;
  for (const BlockAhead& a : ahead) {
    if (seen.insert({a.window.address, a.window.size}).second && keep) {
      keepBlock(call, process, a.window, a.block);
    }
  }
  return seen;
}

std::vector<TargetMemory::Window> RemoteDebugger::blocksAheadBound(
    std::vector<TargetMemory::Window> windows) {
  uint64_t total = 0;
  size_t kept = 0;
  while (kept < windows.size() && total + windows[kept].size <= wire::MAX_BLOCKS_AHEAD_BYTES) {
    total += windows[kept++].size;
  }
  windows.resize(kept);
  return windows;
}

void RemoteDebugger::keepBlock(DllCall& call, RemoteProcess& process,
                               const TargetMemory::Window& window,
                               wire::MemoryBlock::Reader block) {
  if (block.getRc() != mqs_ok) return;  // a demand read will ask for what it needs
  // Kept as it came: decompressed if the DLL reads it (most of a guess it never does).
  BulkBytes data(block.getData(), window.size);
  countBlock(call, block, data.size());
  call.metrics().add(Count::BlocksPrefetched);
  process.memory->store(block.getAddress(), kj::mv(data));
}

void RemoteDebugger::prefetch(DllCall& call, RemoteProcess& process,
                              const std::vector<TargetMemory::Window>& windows) {
  // Asked for in batches of bounded size (one round trip each), up to a total bound: a
  // prefetch only ever saves round trips, so what is past the bound is left to demand reads.
  size_t next = 0;
  uint64_t total = 0;
  while (next < windows.size() && total < kMaxPrefetchBytes) {
    auto request = client_.fetchBlocksRequest();
    request.setProcess(process.token);
    size_t first = next;
    uint64_t batch = 0;
    while (next < windows.size() && batch + windows[next].size <= kPrefetchBatchBytes &&
           total + batch + windows[next].size <= kMaxPrefetchBytes) {
      batch += windows[next].size;
      ++next;
    }
    if (next == first) break;  // a single window larger than a batch: not worth prefetching
    total += batch;
    auto list = request.initBlocks(static_cast<unsigned>(next - first));
    for (size_t i = first; i < next; ++i) {
      auto r = list[static_cast<unsigned>(i - first)];
      r.setAddress(windows[i].address);
      r.setSize(windows[i].size);
      r.setNeededAddress(windows[i].address);
      r.setNeededSize(windows[i].size);
    }
    auto response = awaitAnswer(call, request);
    auto blocks = response.getBlocks();
    for (unsigned i = 0; i < blocks.size() && first + i < next; ++i) {
      keepBlock(call, process, windows[first + i], blocks[i]);
    }
  }
}

void RemoteDebugger::readAside(DllCall& call, const std::vector<Aside>& wanted) {
  if (wanted.empty()) return;
  auto promises =
      kj::heapArrayBuilder<kj::Promise<capnp::Response<wire::Debugger::FetchBlocksResults>>>(
          wanted.size());
  for (const Aside& a : wanted) {
    auto request = client_.fetchBlocksRequest();
    request.setProcess(a.process);
    request.setAside(true);
    auto list = request.initBlocks(static_cast<unsigned>(a.windows->size()));
    for (unsigned i = 0; i < a.windows->size(); ++i) {
      const auto& w = (*a.windows)[i];
      setBlock(list[i], w.address, w.size, w.address, w.size);
    }
    promises.add(request.send());
  }
  call.host().relayDllOutput(call);
  call.metrics().add(Count::Callbacks);
  kj::Array<capnp::Response<wire::Debugger::FetchBlocksResults>> responses;
  try {
    AsanFiber::Wait onLoopStack;
    responses = kj::joinPromises(promises.finish()).wait(call.waitScope());
  } catch (const kj::Exception& e) {
    call.recordCallbackFailure(e.getDescription().cStr());
    return;
  }
  for (size_t p = 0; p < wanted.size(); ++p) {
    auto blocks = responses[p].getBlocks();
    for (unsigned i = 0; i < blocks.size() && i < wanted[p].windows->size(); ++i) {
      if (blocks[i].getRc() != mqs_ok) continue;
      wanted[p].into->store(blocks[i].getAddress(),
                            takeBlock(call, blocks[i], (*wanted[p].windows)[i].size));
    }
  }
}

// ---- lifetimes of what is kept ----

void RemoteDebugger::startCall(DebuggerObjects& objects) {
  errorTexts_.clear();
  objects.forEachProcess([this](RemoteProcess& p) {
    p.call = {};
    if (options_.policy == wire::CachePolicy::CALL && p.memory) {
      p.memory->newEpoch();
      p.node.newEpoch();
    }
  });
}

void RemoteDebugger::processSetUp(RemoteProcess& process) {
  process.image.reset();
  process.typeSizes.reset();
  process.call = {};
  process.node = {};
}

// ---- process attributes ----

int RemoteDebugger::globalRank(DllCall& call, RemoteProcess& process) {
  return attribute(call, caches(), process.call.globalRank, [&]() {
    auto request = client_.getGlobalRankRequest();
    request.setProcess(process.token);
    return awaitAnswer(call, request).getRank();
  });
}

uint64_t RemoteDebugger::image(DllCall& call, RemoteProcess& process) {
  return attribute(call, caches(), process.image, [&]() {
    auto request = client_.getImageRequest();
    request.setProcess(process.token);
    return awaitAnswer(call, request).getImage();
  });
}

uint64_t RemoteDebugger::job(DllCall& call, RemoteProcess& process) {
  return attribute(call, caches(), process.call.job, [&]() {
    auto request = client_.getProcessJobRequest();
    request.setProcess(process.token);
    return awaitAnswer(call, request).getJob();
  });
}

int RemoteDebugger::identity(DllCall& call, RemoteProcess& process) {
  return attribute(call, caches(), process.call.identity, [&]() {
    auto request = client_.getProcessIdentityRequest();
    request.setProcess(process.token);
    return awaitAnswer(call, request).getIdentity();
  });
}

uint64_t RemoteDebugger::process(DllCall& call, RemoteJob& job, int index) {
  auto request = client_.getProcessRequest();
  request.setJob(job.token);
  request.setIndex(index);
  return awaitAnswer(call, request).getProcess();
}

// ---- basic ----

char* RemoteDebugger::errorString(DllCall& call, int code) {
  auto kept = errorTexts_.find(code);
  if (caches()) {
    call.metrics().add(kept != errorTexts_.end() ? Count::LookupHits : Count::LookupMisses);
  }
  if (!caches() || kept == errorTexts_.end()) {
    auto request = client_.errorStringRequest();
    request.setCode(code);
    auto response = awaitAnswer(call, request);  // owns the message `answer` points into
    auto answer = response.getText();
    std::optional<std::string> text;
    if (answer.isText()) text = std::string(answer.getText());
    if (!caches()) return text ? strings_.intern(*text) : nullptr;
    kept = errorTexts_.emplace(code, std::move(text)).first;
  }
  return kept->second ? strings_.intern(*kept->second) : nullptr;
}

void RemoteDebugger::notify(DllCall& call, Effect effect) {
  if (discovery_) return;  // nothing leaves a look-up discovery
  // As for a request (await): the output printed before this effect goes first.
  if (effect.kind != Effect::Kind::DllOutput) call.host().relayDllOutput(call);
  if (std::vector<Effect>* recorder = call.recorder()) {
    recorder->push_back(std::move(effect));
    return;
  }
  call.metrics().add(Count::Notifications);
  auto request = client_.effectRequest();
  writeEffect(effect, request.initEffect());
  request.send().detach([](kj::Exception&&) {});
}

// ---- learned look-ups ----

void RemoteDebugger::prefetchLookups(DllCall& call, RemoteImage& image,
                                     const std::vector<LookupKey>& lookups) {
  if (options_.policy != wire::CachePolicy::EPOCH || lookups.empty()) return;
  MQD_LOG(Trace, "image %llu: %zu look-ups asked ahead, the first %s",
          static_cast<unsigned long long>(image.token), lookups.size(),
          lookups.front().name.c_str());
  auto request = client_.lookUpRequest();
  request.setImage(image.token);
  auto list = request.initLookups(static_cast<unsigned>(lookups.size()));
  for (size_t i = 0; i < lookups.size(); ++i) lookups[i].writeTo(list[static_cast<unsigned>(i)]);
  auto response = awaitAnswer(call, request);
  if (response.getAnswers().size() != lookups.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "lookUp answer count");
  }
  keepLookups(call, image, lookups, response.getAnswers());
}

void RemoteDebugger::keepLookups(DllCall& call, RemoteImage& image,
                                 const std::vector<LookupKey>& lookups,
                                 capnp::List<wire::LookupAnswer>::Reader answers) {
  if (answers.size() != lookups.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "look-ups and answers differ in number");
  }
  // Types first, so that fields and sizes can be keyed by their tokens.
  for (size_t i = 0; i < lookups.size(); ++i) {
    const LookupKey& k = lookups[i];
    if (k.kind != LookupKey::Type) continue;
    uint64_t token = answers[static_cast<unsigned>(i)].getType();
    image.types[{k.name, k.lang}] = token;
    if (token != 0) typeNames_[token] = {k.name, k.lang};
  }
  for (size_t i = 0; i < lookups.size(); ++i) {
    const LookupKey& k = lookups[i];
    auto a = answers[static_cast<unsigned>(i)];
    AddressAnswer address = addressAnswer(a.getRc(), true, a.getAddress());
    switch (k.kind) {
      case LookupKey::Symbol: image.symbols[k.name] = address; break;
      case LookupKey::Function: image.functions[{k.name, k.lang}] = address; break;
      case LookupKey::Type: break;
      case LookupKey::Field:
      case LookupKey::SizeOf: {
        auto type = image.types.find({k.name, k.lang});
        if (type == image.types.end() || type->second == 0) break;
        if (k.kind == LookupKey::Field) {
          fieldOffsets_[{type->second, k.field}] = a.getValue();
        } else {
          sizes_[type->second] = a.getValue();
        }
        break;
      }
    }
    call.metrics().add(Count::LookupsPrefetched);
  }
}

}  // namespace mqd::server
