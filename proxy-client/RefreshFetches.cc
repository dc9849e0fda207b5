#include "RefreshFetches.h"

#include <utility>

#include "mqs_interface.h"

namespace mqd::client {

RefreshFetches::RefreshFetches(DebuggerSide& side, std::set<uint64_t> processes,
                               uint64_t maxBytes)
    : side_(side), previous_(std::move(side.onRead)), processes_(std::move(processes)),
      maxBytes_(maxBytes) {
  side_.onRead = [this](uint64_t process, uint64_t address, uint32_t size,
                        uint64_t neededAddress, uint32_t neededSize, bool aside,
                        const DebuggerSide::Block& block) {
    if (previous_) previous_(process, address, size, neededAddress, neededSize, aside, block);
    if (!aside && processes_.count(process) != 0) kept(process, neededAddress, neededSize, block);
  };
}

RefreshFetches::~RefreshFetches() { side_.onRead = std::move(previous_); }

void RefreshFetches::kept(uint64_t process, uint64_t neededAddress, uint32_t neededSize,
                          const DebuggerSide::Block& block) {
  if (incomplete_.count(process) != 0) return;
  if (bytes_ + block.bytes.size() > maxBytes_) {
    incomplete_.insert(process);
    fetched_.erase(process);
    return;
  }
  bytes_ += block.bytes.size();
  // A block read is whole for the window it holds (readBlock may give the readable pages of
  // a block that runs into unmapped memory); a refusal is the needed range's (what the DLL's
  // read was answered).
  Window window = block.rc == mqs_ok
                      ? Window{block.address, static_cast<uint32_t>(block.bytes.size())}
                      : Window{neededAddress, neededSize};
  fetched_[process].push_back({window, block});
}

std::vector<ReadAhead> RefreshFetches::take(uint64_t process) {
  auto it = fetched_.find(process);
  if (it == fetched_.end()) return {};
  std::vector<ReadAhead> out = std::move(it->second);
  fetched_.erase(it);
  return out;
}

}  // namespace mqd::client
