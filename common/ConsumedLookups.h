// ConsumedLookups: the look-ups a vendor DLL made during one object's set-up (an image's
// mqs_setup_image and mqs_image_has_queues, or a process's two calls), each once, with whether
// it took a symbol's or function's address or only the result.
//
// A DLL's set-up is a function of what it consumed
// (docs/round-trips.md, "Set-ups answered from a record"). The server collects them
// (RemoteDebugger::consumeInto) and names them in the has-queues reply (wire ConsumedLookup);
// the shim keys its records of set-ups by the answers to them (proxy-client/SetUpRecall.h). Ranks of one job resolve their symbols at addresses
// of their own, but an image's set-up that takes none (Open MPI's: types, fields, and whether
// two symbols exist) is then the same for every rank.
#pragma once

#include <map>
#include <optional>

#include "LookupKey.h"
#include "mqd.capnp.h"

namespace mqd {

struct ConsumedLookups {
  using Lookups = std::map<LookupKey, bool>;  // -> an address was taken (symbol, function)
  Lookups lookups;
  bool unnamed = false;  // a type handle that no look-up by name found was used: unknown

  void add(const LookupKey& key, bool address) { lookups[key] |= address; }
  void clear() { *this = ConsumedLookups(); }

  // Into a has-queues reply's consumed and consumedKnown.
  template <typename Results>
  void writeTo(Results&& results) const {
    results.setConsumedKnown(!unnamed);
    if (unnamed) return;
    auto out = results.initConsumed(static_cast<unsigned>(lookups.size()));
    unsigned i = 0;
    for (const auto& [key, address] : lookups) {
      key.writeTo(out[i].initLookup());
      out[i++].setAddress(address);
    }
  }
  // From a reply: nullopt when it says they are unknown, or names a kind this build does not
  // know.
  template <typename Reader>
  static std::optional<Lookups> from(Reader&& results) {
    if (!results.getConsumedKnown()) return std::nullopt;
    Lookups out;
    for (auto c : results.getConsumed()) {
      std::optional<LookupKey> key = LookupKey::from(c.getLookup());
      if (!key) return std::nullopt;
      out[*key] |= c.getAddress();
    }
    return out;
  }
};

}  // namespace mqd
