// RecordedDebugger: the debugger of a recorded session, played back. During `mqd-proxy replay`
// it is the Debugger capability the server calls, and answers every request from what the
// recorded debugger answered (record::DebuggerCall entries), with no debugger and no target.
//
// Requests are matched to recorded answers by their content, never by their position, so a
// server that asks differently (another --block-size, learned look-ups fetched ahead, a DLL
// that reads more or less) still gets the recorded debugger's answers where there are any:
//   * look-ups (findSymbol, findFunction, findType, fieldOffset, sizeOf, and each item of a
//     lookUp batch): by image, name, language and field, from any recorded form of the same
//     look-up (a batch item answers a single call and the other way round); type tokens are the
//     recorded debugger's own;
//   * target memory (fetchData, fetchBlocks): by process and address range, from every read
//     and block the recorded debugger answered in the same epoch of that process (from one of
//     its mqs_update_communicator_list calls to the next; see beginEpoch), else in the nearest
//     other epoch (counted); a range it refused gets the code it refused with;
//   * everything else (type sizes, process attributes, error strings): by identical parameters,
//     the recorded answers in order, the last one again when asked more often.
// A request without a recorded answer is counted (unrecorded()) and refused as the recorded
// debugger would refuse: memory with the code it refused memory with (MQD_PROXY_ERR_CALLBACK_
// FAILED if it never did), a look-up as not found, anything else with an exception naming the
// request.
//
// Effects the debugger sees (dprints, putInfo) are kept in order (takeNotifications()), for
// the replay to compare with the recorded ones. The DLL's own output (dllOutput) is only
// counted: it is the server process's stdout and stderr, where pids, times and a sanitizer's
// warnings differ from run to run.
#pragma once

#include <capnp/capability.h>
#include <capnp/schema.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "RecordFile.h"
#include "mqd.capnp.h"

namespace mqd::replay {

using client::RecordReader;

class RecordedDebugger {
 public:
  // Indexes every DebuggerCall of `recording` (which must outlive this object). Throws
  // RecordFileError, naming the entry but not the file, when a recorded answer is damaged.
  explicit RecordedDebugger(const RecordReader& recording);

  // The capability to hand the server; it refers to this object, which must outlive it.
  wire::Debugger::Client capability(bool compress);

  // The replay is about to call mqs_update_communicator_list for `process`: memory answers
  // come from the next recorded epoch of that process.
  void beginEpoch(uint64_t process) { ++epoch_[process]; }

  // The notifications compared, as text, in order: one per dprints or putInfo effect.
  class Notifications {
   public:
    // Debugger.effect: a call the server does not wait for.
    static bool is(uint16_t method);
    void add(uint16_t method, capnp::AnyPointer::Reader params);  // ignores dllOutput
    std::vector<std::string> take() { return std::move(list_); }

   private:
    std::vector<std::string> list_;
  };
  // What the server sent since the last take.
  std::vector<std::string> takeNotifications() { return notifications_.take(); }

  struct Counts {
    uint64_t answered = 0;    // requests answered (a batch counts once)
    uint64_t unrecorded = 0;  // requests, or items of a batch, with no recorded answer
    uint64_t otherEpoch = 0;  // memory found only in another epoch of the process
    uint64_t notifications = 0;
  };
  const Counts& counts() const { return counts_; }
  // The first few unrecorded requests, described.
  const std::vector<std::string>& unrecorded() const { return unrecordedExamples_; }

 private:
  class Service;

  struct AddressAnswer {
    int rc = 0;
    bool written = false;
    uint64_t address = 0;
  };
  struct Refusal {
    uint64_t address;
    uint64_t size;
    int rc;
  };
  // What the recorded debugger could and could not read of one process in one epoch.
  struct Memory {
    std::map<uint64_t, std::vector<unsigned char>> runs;  // disjoint, by start address
    std::vector<Refusal> refused;
  };
  using Epoch = std::pair<uint64_t, uint32_t>;  // process, epoch
  using NameKey = std::tuple<uint64_t, std::string, int>;  // image, name, lang

  void index(uint16_t method, capnp::AnyPointer::Reader params,
             capnp::AnyPointer::Reader results, const std::map<uint64_t, uint32_t>& epochs);
  void remember(uint64_t process, uint32_t epoch, uint64_t address,
                kj::ArrayPtr<const kj::byte> bytes);
  void rememberField(const NameKey& type, const std::string& field, int offset);

  // ---- answers ----
  struct Read {
    int rc = 0;
    uint64_t address = 0;
    kj::ArrayPtr<const unsigned char> bytes;  // into a run
  };
  // [address, address+size) whole, or the recorded window within [lo, hi) that holds it.
  Read readMemory(uint64_t process, uint64_t address, uint64_t size, uint64_t lo, uint64_t hi);
  AddressAnswer symbol(uint64_t image, const std::string& name, bool wantAddress);
  AddressAnswer function(uint64_t image, const std::string& name, int lang, bool wantAddress);
  uint64_t type(const NameKey& key);
  int fieldOffset(uint64_t type, const std::string& field);
  int fieldOffsetByName(const NameKey& type, const std::string& field);
  int sizeOf(uint64_t type);
  int sizeOfByName(const NameKey& type);
  // The recorded results of an exactly matching request (nullptr: none), or throws the
  // recorded failure.
  kj::Maybe<capnp::AnyPointer::Reader> exact(uint16_t method, capnp::AnyPointer::Reader params);
  void noteUnrecorded(const std::string& what);

  const RecordReader& recording_;
  std::map<uint64_t, uint32_t> epoch_;  // per process, during the replay
  std::map<Epoch, Memory> memory_;
  std::map<uint64_t, int> memoryRefusalRc_;  // per process: the last code it refused with
  int anyMemoryRefusalRc_ = 0;
  std::map<std::pair<uint64_t, std::string>, AddressAnswer> symbols_;
  std::map<NameKey, AddressAnswer> functions_;
  std::map<NameKey, uint64_t> types_;
  std::map<uint64_t, NameKey> typeNames_;
  std::map<std::pair<uint64_t, std::string>, int> fields_;  // type token, field
  std::map<std::pair<NameKey, std::string>, int> fieldsByName_;
  std::map<uint64_t, int> sizes_;
  std::map<NameKey, int> sizesByName_;
  int symbolRefusalRc_ = 0;  // the code a failed symbol or function look-up had
  std::vector<record::DebuggerCall::Reader> calls_;  // every indexed call, for `exact_`
  std::map<std::pair<uint16_t, std::string>, std::vector<size_t>> exact_;
  std::map<std::pair<uint16_t, std::string>, size_t> exactNext_;
  Notifications notifications_;
  Counts counts_;
  std::vector<std::string> unrecordedExamples_;
};

}  // namespace mqd::replay
