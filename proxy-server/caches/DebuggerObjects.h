// DebuggerObjects: the server's stand-ins for the debugger's images, processes and jobs, and
// the tokens that name the DLL's info objects on the wire.
//
// The vendor DLL is handed pointers to RemoteImage / RemoteProcess / RemoteJob as its
// mqs_image* / mqs_process* / mqs_job*. Whatever it hangs on them with put_*_info stays here:
// get_*_info is answered locally, never by a round trip. Each stand-in carries the token the
// shim chose for the debugger's object, so callbacks that need the debugger name it correctly.
//
// Info objects are named on the wire by tokens this class issues (1, 2, ...), never by address;
// the shim hands those tokens to the debugger's put_*_info, and mqs_destroy_*_info brings them
// back here.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ConsumedLookups.h"
#include "LocalProcess.h"
#include "TargetMemory.h"

#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::server {

// A find_symbol / find_function answer as the debugger gave it.
struct AddressAnswer {
  int rc = 0;
  bool knowsAddress = false;  // asked with an out-pointer (else only rc is known)
  bool written = false;       // the debugger stored an address
  uint64_t address = 0;
};

struct RemoteImage {
  static constexpr wire::InfoKind kInfoKind = wire::InfoKind::IMAGE;
  uint64_t token = 0;
  mqs_image_info* info = nullptr;
  bool setUp = false;  // mqs_setup_image was called for it in this session
  bool setUpOk = false;  // and its last one answered mqs_ok
  // Look-up answers for the session (cache policies call and epoch).
  std::map<std::string, AddressAnswer> symbols;
  std::map<std::pair<std::string, int>, AddressAnswer> functions;
  std::map<std::pair<std::string, int>, uint64_t> types;
  // The look-ups its last mqs_setup_image and mqs_image_has_queues made (epoch policy).
  ConsumedLookups setUpConsumed;
};

using TypeSizes = std::array<std::optional<int>, MQS_TARGET_TYPE_SIZES_OPENMPI_INTS>;

struct RemoteProcess {
  static constexpr wire::InfoKind kInfoKind = wire::InfoKind::PROCESS;
  uint64_t token = 0;
  mqs_process_info* info = nullptr;
  bool setUp = false;           // mqs_setup_process was called for it in this session
  bool setUpOk = false;         // and its last one answered mqs_ok
  // Its last set-up's effects were held back for the shim's late proof (setupProcess'
  // proveLate), as are those of the has-queues call behind it; the shim may undo it
  // (redoesLate).
  bool setUpHeld = false;
  bool targetBigEndian = false; // learned once, at set-up
  int64_t communicatorSize = -1; // size in the last mqs_get_communicator answer, -1 if none
  // The look-ups its last mqs_setup_process and mqs_process_has_queues made (epoch policy).
  ConsumedLookups setUpConsumed;
  // The debugger's answers about the process, kept as long as it cannot answer differently
  // (cache policies call and epoch; docs: "Answers the proxy asks for or keeps"). Each is
  // asked for when the DLL first asks, except what the shim sent with mqs_setup_process.
  //   Kept while the process stays set up (reset by mqs_setup_process): its image and type
  //   sizes, facts of its executable that every DLL needs from its set-up on (under epoch,
  //   the shim sends them with the set-up: wire ProcessFacts).
  std::optional<uint64_t> image;
  std::optional<TypeSizes> typeSizes;
  // Its pointer size, of the type sizes kept (mqs_target_type_sizes.pointer_size).
  std::optional<int> pointerSize() const { return typeSizes ? (*typeSizes)[4] : std::nullopt; }
  //   Kept for one mqs_* call only: its MPI rank, job and identity, which a debugger may learn
  //   after the set-up (padb's minfo tells the rank only once mqs_setup_process returned) or
  //   change (mqs_set_process_identity).
  struct CallAnswers {
    std::optional<int> globalRank;
    std::optional<uint64_t> job;
    std::optional<int> identity;
  } call;
  std::unique_ptr<TargetMemory> memory;  // created at set-up when memory is cached
  // Whether its memory is read on this host (--node-memory; RemoteDebugger::fromNode has the
  // rules). Reset by mqs_setup_process.
  struct NodeProof {
    enum class State { Untried, Proven, Refused } state = State::Untried;
    std::optional<LocalProcess> process;  // the proved process, while Proven
    bool checkedThisEpoch = false;  // this epoch's first read was compared with the debugger's
    bool triedThisEpoch = false;    // Untried: this epoch already looked (the rank was unknown)
    // The range the last epoch's check compared: the shim reads it ahead at the next update
    // (RemoteDebugger::nextEpochWindows), so the next check needs no callback.
    std::optional<TargetMemory::Window> checked;
    void newEpoch() { checkedThisEpoch = triedThisEpoch = false; }
    bool proven() const { return state == State::Proven; }  // read on this host
  } node;
};

struct RemoteJob {
  static constexpr wire::InfoKind kInfoKind = wire::InfoKind::JOB;
  uint64_t token = 0;
  mqs_job_info* info = nullptr;
  bool setUp = false;
};

class DebuggerObjects {
 public:
  // The stand-in for a debugger token, created on first use. Token 0 (NULL) and tokens above
  // the session's limit of distinct objects are refused with ProxyError(BAD_HANDLE).
  RemoteImage& image(uint64_t token);
  RemoteProcess& process(uint64_t token);
  RemoteJob& job(uint64_t token);

  // The same, but only for objects the debugger already set up in this session; throws
  // ProxyError(BAD_HANDLE) naming the entry point otherwise.
  RemoteImage& setUpImage(uint64_t token, const char* entryPoint);
  RemoteProcess& setUpProcess(uint64_t token, const char* entryPoint);
  RemoteProcess* setUpProcessOrNull(uint64_t token);  // nullptr instead

  // Map a pointer the DLL passed back to its stand-in; nullptr if it is not one of ours.
  RemoteImage* fromDll(mqs_image* image);
  RemoteProcess* fromDll(mqs_process* process);
  RemoteJob* fromDll(mqs_job* job);

  // A token the debugger holds for the info of `handle`: from a lost session of the same
  // debugger (see SessionOptions.resumeInfos), or chosen by the shim for a set-up it answered
  // from a record (Session.setupImage's infoToken: at or above wire::FIRST_CHOSEN_INFO_TOKEN).
  struct Reservation {
    wire::InfoKind kind;
    uint64_t handle;
    uint64_t token;
  };
  // Reserves tokens: an info first seen on a reserved handle gets the reserved token; fresh
  // tokens are issued above every reserved one below wire::FIRST_CHOSEN_INFO_TOKEN, and never
  // reach it. Reservations of token 0 or of a token reserved twice in one call are ignored.
  void reserve(const std::vector<Reservation>& reservations);

  // The wire token of an info pointer the DLL hung on `handle` (issued on first sight: the
  // handle's reserved token if it has one, else a fresh one); 0 for nullptr.
  uint64_t infoToken(wire::InfoKind kind, uint64_t handle, void* info);
  // The info pointer behind a token of the given kind; throws ProxyError(BAD_HANDLE) if the
  // token was never issued or was already destroyed.
  void* infoFromToken(wire::InfoKind kind, uint64_t token, const char* entryPoint);
  // Forget a destroyed info: a later destroy of the same token is refused, and every stand-in
  // that held it holds none (get_*_info answers NULL), so no later call hands the DLL memory
  // it has freed.
  void forgetInfo(uint64_t token);
  // The infos of `kind` the DLL handed out and nobody destroyed, forgotten as they are
  // returned: the session's end destroys them on the debugger's behalf.
  std::vector<void*> takeLiveInfos(wire::InfoKind kind);

  void forEachProcess(const std::function<void(RemoteProcess&)>& fn);

 private:
  template <typename T>
  T& lookup(std::unordered_map<uint64_t, std::unique_ptr<T>>& table, uint64_t token,
            const char* what);

  std::unordered_map<uint64_t, std::unique_ptr<RemoteImage>> images_;
  std::unordered_map<uint64_t, std::unique_ptr<RemoteProcess>> processes_;
  std::unordered_map<uint64_t, std::unique_ptr<RemoteJob>> jobs_;
  std::unordered_map<const void*, RemoteImage*> imageByAddress_;
  std::unordered_map<const void*, RemoteProcess*> processByAddress_;
  std::unordered_map<const void*, RemoteJob*> jobByAddress_;

  struct InfoEntry {
    wire::InfoKind kind;
    void* info;
  };
  std::unordered_map<uint64_t, InfoEntry> infoByToken_;
  std::unordered_map<const void*, uint64_t> tokenByInfo_;
  std::map<std::pair<int, uint64_t>, uint64_t> reserved_;  // (kind, handle) -> token, unused
  uint64_t nextInfoToken_ = 1;
};

// "image", "process", "job".
const char* kindName(wire::InfoKind kind);

// The stand-in type of a handle type the DLL passes (RemoteImage for mqs_image, ...).
template <typename Handle>
using StandInOf = std::remove_pointer_t<decltype(std::declval<DebuggerObjects&>().fromDll(
    std::declval<Handle*>()))>;

}  // namespace mqd::server
