// DebuggerSide: the debugger as the shim sees it: the callback tables it handed over, the
// tokens that name its objects on the wire, and one method per callback the server may ask
// for. Everything here runs on the debugger thread that made the current mqs_* call.
//
// A table member the debugger left NULL, or a table the shim never received (a process that
// was never set up), answers like an unavailable callback: the value documented per method.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "HandleTokens.h"
#include "LookupKey.h"
#include "ReadCost.h"
#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::client {

class DebuggerSide {
 public:
  HandleTokens<mqs_image> images{"image"};
  HandleTokens<mqs_process> processes{"process"};
  HandleTokens<mqs_job> jobs{"job"};
  HandleTokens<mqs_type> types{"type"};

  // Tables, as received from mqs_setup_* (the debugger keeps them valid).
  void setBasicCallbacks(const mqs_basic_callbacks* table) { basic_ = table; }
  const mqs_basic_callbacks* basicCallbacks() const { return basic_; }
  void setImageCallbacks(uint64_t image, const mqs_image_callbacks* table);
  void setProcessCallbacks(uint64_t process, const mqs_process_callbacks* table);
  void setJobCallbacks(uint64_t job, const mqs_job_callbacks* table);
  bool processSetUp(uint64_t process) const { return processTables_.count(process) != 0; }
  // Whether the debugger's tables have the level-3 members: true when the vendor DLL is level 3,
  // since a debugger that accepted a level-3 DLL must supply level-3 tables.
  void setLevel3(bool level3) { level3_ = level3; }

  // The target's byte order, probed once through the debugger's own target_to_host.
  bool probeTargetBigEndian(mqs_process* process, const mqs_process_callbacks* table) const;

  // ---- callbacks (each documents its "unavailable" answer) ----
  struct Address {
    int rc;
    bool written;
    uint64_t value;
  };
  // rc MQD_PROXY_ERR_NOT_SET_UP if the image has no table.
  Address findFunction(uint64_t image, const char* name, int lang, bool wantAddress);
  Address findSymbol(uint64_t image, const char* name, bool wantAddress);
  uint64_t findType(uint64_t image, const char* name, int lang);  // 0 (NULL)
  int fieldOffset(uint64_t type, const char* field);                // -1
  int sizeOf(uint64_t type);                                        // 0
  using TypeSizes = std::array<std::optional<int>, MQS_TARGET_TYPE_SIZES_OPENMPI_INTS>;
  TypeSizes getTypeSizes(uint64_t process);                         // all untouched
  // As the wire carries them (nullopt: untouched).
  static void writeTypeSizes(const TypeSizes& sizes, capnp::List<wire::OutInt>::Builder out);
  int fetchData(uint64_t process, uint64_t address, int size, std::vector<unsigned char>* out);
  int getGlobalRank(uint64_t process);                              // MQS_INVALID_PROCESS
  uint64_t getImage(uint64_t process);                              // 0
  uint64_t getProcessJob(uint64_t process);                         // 0
  int getProcessIdentity(uint64_t process);                         // MQS_INVALID_PROCESS
  uint64_t getProcess(uint64_t job, int index);                     // 0
  // nullopt when the debugger returned NULL or has no errorstring callback.
  std::optional<std::string> errorString(int code);
  void dprints(const char* text);

  // Replays a put_*_info the DLL made on the server, with the server's token as the pointer.
  // While replaying() a lost session's set-up, one that gives the debugger the token it
  // already holds is not delivered again.
  void putInfo(wire::InfoKind kind, uint64_t handle, uint64_t info);

  // Delivers one effect of a DLL call (mqd.capnp, struct Effect), whether the server sent it as
  // it happened or a recorded walk kept it: dprints and put_*_info as above, the DLL's output
  // to this process's stderr (not while replaying()). Calling thread, except that output alone
  // may be written from any thread. Throws ProxyError for a put_*_info it cannot deliver.
  void effect(wire::Effect::Reader effect);
  // An effect of the call in progress, on the calling thread: appended to *effectLog when that
  // is set, then delivered with effect(), or kept in *divertEffects instead when that is set.
  void deliver(wire::Effect::Reader effect);
  std::vector<kj::Own<wire::Effect::Reader>>* effectLog = nullptr;
  std::vector<kj::Own<wire::Effect::Reader>>* divertEffects = nullptr;

  // The callbacks the shim answered for the server, counted on the calling thread: the set-ups
  // it records consumed nothing but what it sent them (MqsClient, SetUpRecall).
  struct Answered {
    uint64_t callbacks = 0;     // every callback the server waited for
    uint64_t blockFetches = 0;  // of which fetchBlocks (their reads go to onRead)
  };
  Answered answered;

  // The info tokens the debugger holds, by handle (what putInfo gave it, less what it
  // destroyed).
  struct HeldInfo {
    wire::InfoKind kind;
    uint64_t handle;
    uint64_t info;
  };
  std::vector<HeldInfo> heldInfos() const;
  // mqs_destroy_*_info(info): the debugger no longer holds it.
  void infoDestroyed(wire::InfoKind kind, uint64_t info);

  // True while the shim replays a lost session's set-up on a new one: the debugger already
  // saw that set-up's effects, so dprints and DLL output are not delivered again (read from
  // the event-loop thread too).
  std::atomic<bool> replaying{false};

  // ---- batched requests of the server's caches ----

  // A fetchBlocks answer: the whole block when the debugger can read it, else the largest
  // readable page-aligned window of it around the needed range; rc is the debugger's answer
  // for the needed range itself.
  struct Block {
    int rc = 0;
    uint64_t address = 0;
    std::vector<unsigned char> bytes;
  };
  // `aside`: the few words a guess reads (wire fetchBlocks' aside), which serve no DLL read and
  // do not count among the samples of readPrice (their cost is the call's, not the
  // bytes').
  Block readBlock(uint64_t process, uint64_t address, uint32_t size, uint64_t neededAddress,
                  uint32_t neededSize, bool aside = false);
  // Told of every readBlock, with its arguments and result (null: nobody listens).
  std::function<void(uint64_t process, uint64_t address, uint32_t size, uint64_t neededAddress,
                     uint32_t neededSize, bool aside, const Block& block)>
      onRead;
  // What the debugger's recent reads (readBlock) cost (ReadCost.h); nullopt before the first.
  std::optional<ReadPrice> readPrice() const { return readCost_.price(); }

  // The answers to look-ups (wire Lookup / LookupAnswer), one per look-up, in order.
  struct LookupResult {
    int rc = 0;
    bool written = false;
    uint64_t address = 0;
    uint64_t type = 0;
    int value = 0;
    void writeTo(wire::LookupAnswer::Builder out) const;
  };
  std::vector<LookupResult> lookUp(uint64_t image, const std::vector<LookupKey>& requests);

  // ---- what the server looked up (the shim's learned look-ups, MqsClient) ----
  // Notes a look-up the server asked for in this session; `type` names a field or size
  // look-up's type by the token findType handed out (nothing is noted for another token).
  void lookedUp(LookupKey key) { lookedUp_.insert(std::move(key)); }
  void lookedUpOfType(LookupKey::Kind kind, uint64_t type, const std::string& field);
  const std::set<LookupKey>& lookedUp() const { return lookedUp_; }
  void forgetLookedUp() { lookedUp_.clear(); }

 private:
  Block readBlockUntimed(uint64_t process, uint64_t address, uint32_t size,
                         uint64_t neededAddress, uint32_t neededSize);
  const mqs_image_callbacks* imageTable(uint64_t image) const;
  const mqs_process_callbacks* processTable(uint64_t process) const;

  const mqs_basic_callbacks* basic_ = nullptr;
  std::unordered_map<uint64_t, const mqs_image_callbacks*> imageTables_;
  std::unordered_map<uint64_t, const mqs_process_callbacks*> processTables_;
  std::unordered_map<uint64_t, const mqs_job_callbacks*> jobTables_;
  bool level3_ = false;
  std::map<std::pair<int, uint64_t>, uint64_t> held_;  // (kind, handle) -> info token
  std::unordered_map<uint64_t, std::pair<std::string, int>> typeNames_;  // token -> name, lang
  std::set<LookupKey> lookedUp_;
  ReadCost readCost_;  // of readBlock's timed reads
};

}  // namespace mqd::client
