// SetUpRecall: set-ups answered from what the same vendor DLL build answered earlier, in this
// session or an earlier one, once everything the DLL consumed then is proved the same now.
//
// Without records a rank's set-up costs two round trips: the image's and the process's, each
// with its has-queues call behind it (docs/round-trips.md, "Set-up"). For a job of 64 ranks
// that is 128 of the first dump's. Yet a DLL's set-up is a function of what it consumes: the
// debugger's answers to its look-ups, the process's byte order and type sizes, and the bytes
// of target memory it reads. Under the epoch policy the shim sends all of them with the
// set-up, so it knows them; the server names the look-ups each object's set-up made
// (ConsumedLookups, in the has-queues replies). The shim records, per DLL build, every set-up
// that consumed nothing else (no callback but the reads it answered, at most one info put, on
// the object itself), with SHA-256 digests of those inputs (of the image's and the process's
// look-ups, each its own; of the memory, what the server says the DLL read: setUpRead) and
// each call's outcome: result, message and effects in order (the info, dprints, output). A
// later set-up whose inputs have the same digests is answered from the record before the
// server replies (SetUpRecords::recallSetupImage, recallSetupProcess). The server still runs it,
// and its reply is compared with what the debugger was told (SetUpRecords::settleRecalled): the
// rule and what a contradiction does are in
// docs/round-trips.md, "Set-ups answered from a record".
//
// A record covers one image's set-up and that of the process set up with it. Address-space
// randomisation makes a symbol's address particular to one process, so a process part (whose
// reads start at symbols) serves the same process again (a job attached again) as it is, and
// another rank of the same program moved (shiftTo): every address it took and every read it
// made by the one distance the first address it took moved, a whole number of pages. An image
// part whose set-up took no address (Open MPI's) serves every rank of the job, from the second
// on, in the same session. Processes that share their addresses (no randomisation, a test
// harness) share the image's record: each of their process parts is tried.
// One file per DLL build: <state-dir>/setups-<build-id>.capnp (wire::SetUpRecords), at most
// kMaxRecords, the newest kept; an unreadable file is ignored and rewritten. Records serve
// the session that made them as well; without a state directory, only the debugger
// process's sessions (in memory).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ConsumedLookups.h"
#include "DebuggerSide.h"
#include "LookupKey.h"
#include "Sha256.h"
#include "mqd.capnp.h"

namespace mqd::client {

class SetUpRecall {
 public:
  using Digest = Sha256::Digest;
  static constexpr size_t kMaxRecords = 16384;

  // A char** output as the DLL left it (wire::OutString).
  struct Message {
    enum Kind { Untouched, Null, Text } kind = Untouched;
    std::string text;
    bool operator==(const Message& o) const { return kind == o.kind && text == o.text; }
    static Message from(wire::OutString::Reader in);
    void writeTo(wire::OutString::Builder out) const;
  };
  // One read of target memory the shim answered (wire::BlockRequest).
  struct Read {
    uint64_t address = 0;
    uint32_t size = 0;
    uint64_t neededAddress = 0;
    uint32_t neededSize = 0;
  };
  // An effect of a recorded call: a put_*_info on the call's own object (whose token is chosen
  // anew at each recall), a dprints line or output of the DLL.
  struct Effect {
    enum Kind { PutInfo, Dprints, Output } kind = PutInfo;
    std::string bytes;  // Dprints, Output
    bool operator==(const Effect& o) const { return kind == o.kind && bytes == o.bytes; }
  };
  // One call's outcome: what the debugger got from it, in order.
  struct Call {
    int rc = 0;
    Message message;  // has-queues calls
    std::vector<Effect> effects;
    bool putsInfo() const;
  };
  struct ImageOutcome {
    Call setUp;  // mqs_setup_image: rc mqs_ok
    Call hasQueues;
  };
  // What one object's set-up consumed of the look-ups (shared by the records with the same).
  using LookupList = std::shared_ptr<const ConsumedLookups::Lookups>;
  struct ProcessOutcome {
    LookupList lookups;       // consumed by its two calls
    Digest lookupDigest{};    // of their answers (digestOf)
    Digest digest{};          // ProcessInputs of the set-up
    std::vector<Read> reads;  // in order
    Call setUp;               // mqs_setup_process: rc mqs_ok
    std::string warning;      // the set-up reply's (ByteOrderCheck)
    Call hasQueues;
    // The address answered to the first look-up (in LookupKey order) of `lookups` that took
    // one and found it: where the record lies in its process (shiftTo). nullopt: none did.
    std::optional<uint64_t> anchor;
  };
  struct Record {
    LookupList lookups;  // consumed by the image's two calls
    Digest lookupDigest{};  // of their answers (digestOf)
    ImageOutcome image;
    std::optional<ProcessOutcome> process;
  };

  // The look-ups answered ahead with an image's set-up, by look-up.
  using Answers = std::map<LookupKey, DebuggerSide::LookupResult>;
  // What a DLL consumes of an answer: of a symbol or function its result, and its address only
  // if it took it (`address`); of a type whether there is one (its handle is the session's
  // own); of a field or size the value.
  // `shift` is subtracted from every address taken (a record moved: shiftTo).
  static std::string canonical(const LookupKey& key, const DebuggerSide::LookupResult& answer,
                               bool address, uint64_t shift = 0);
  // The digest of the answers to `lookups`, nullopt if one of them was not answered.
  static std::optional<Digest> digestOf(const ConsumedLookups::Lookups& lookups,
                                        const Answers& answers, uint64_t shift = 0);
  // The anchor of a process part keyed by `lookups` with `answers` (ProcessOutcome::anchor).
  static std::optional<uint64_t> anchorOf(const ConsumedLookups::Lookups& lookups,
                                          const Answers& answers);
  // Whether `answers` prove a record's process part as to the look-ups, at its own addresses.
  static bool lookupsProve(const ProcessOutcome& process, const Answers& answers);
  // Whether `answers` prove a record's process part moved, and by how much: the other process
  // of the same program took every address the record's set-up took, `shift` bytes further
  // (modulo 2^64), and answered every other look-up alike. The shift is the anchor look-up's
  // move; it is a non-zero multiple of kShiftGranule (a loader places mappings at page
  // boundaries, so alignments the DLL may test are kept), and only a record whose outcomes
  // carry no text (no dprints or output, no message, no warning: a text may print an address)
  // moves. nullopt otherwise. The bytes the set-up read are proved at the moved addresses
  // (ProcessInputs::read with the shift).
  static constexpr uint64_t kShiftGranule = 4096;
  static std::optional<uint64_t> shiftTo(const ProcessOutcome& process, const Answers& answers);

  // The digest of a process set-up's inputs: its byte order and type sizes, then every read,
  // in order. A read that failed or came back short makes the set-up unrecordable (read()
  // returns false): the server's handling of a partial block sent ahead differs from one it
  // asked for. A record's read proved in another process moved by `shift` (shiftTo) is read
  // there, `block` at r.address + shift, and digested as the record's.
  class ProcessInputs {
   public:
    ProcessInputs(bool bigEndian, const DebuggerSide::TypeSizes& sizes);
    bool read(const Read& read, const DebuggerSide::Block& block, uint64_t shift = 0);
    Digest finish() { return sha_.finish(); }

   private:
    Sha256 sha_;
  };

  // `buildId` empty: nothing is kept or found; `stateDir` empty: nothing is kept on disk.
  SetUpRecall(std::string stateDir, std::string buildId);

  const std::string& buildId() const { return buildId_; }
  // The records of image set-ups whose consumed look-ups were all answered now, with the same
  // answers, newest first: one per process recorded with such an image; empty when there is
  // none (or after refute()).
  std::vector<const Record*> find(const Answers& answers) const;
  // Keeps `record`, in place of one with the same image part (look-ups and digest) and the
  // same process part (look-ups, their digest and the process inputs), or none; a record
  // without a process part is not kept beside one with it. A record of other look-ups with the
  // same digest (a damaged or forged file) is another record: `record` is found afterwards,
  // whatever the file held.
  void keep(Record record);
  // `lookups`, shared with the records that have the same list.
  LookupList share(ConsumedLookups::Lookups lookups) const;
  // Writes the file if something was kept since it was read or written. Never throws.
  void save();
  // A record was contradicted by the DLL: none is used again by this client, and the file is
  // removed (later sessions record afresh).
  void refute();

 private:
  void load();

  std::string file_;
  std::string buildId_;
  std::vector<Record> records_;  // oldest first
  bool dirty_ = false;
  bool refuted_ = false;
};

}  // namespace mqd::client
