#include "CommunicatorWalker.h"

#include <capnp/orphan.h>

#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "OutputCapture.h"
#include "QueueIteration.h"
#include "RemoteDebugger.h"
#include "SessionBoard.h"
#include "VendorDll.h"
#include "WalkLimits.h"

namespace mqd::server {
namespace {

// Runs one DLL call with its effects captured, as the unrecorded call would run.
class Recording {
 public:
  // `entryPoint` is the DLL entry point about to run (shown on the session board).
  Recording(DllCall& call, EntryPoint entryPoint) : call_(call), held_(call, &effects_) {
    call_.metrics().setLastCall(nameOf(entryPoint));
  }
  // Ends the call: what the DLL printed belongs to it too.
  std::vector<Effect>& finish() {
    call_.host().relayDllOutput(call_);
    call_.metrics().add(Count::DllCalls);
    return effects_;
  }

 private:
  DllCall& call_;
  std::vector<Effect> effects_;
  HeldEffects held_;  // after effects_, which it points to
};

template <typename Builder>
void setEffects(Builder b, const std::vector<Effect>& effects) {
  writeEffects(effects, b.initEffects(static_cast<unsigned>(effects.size())));
}

// The walk's steps: each call made on the DLL with its effects captured (Recording), its answer
// built into the walk's message as an orphan first (the counts are not known in advance), then
// adopted into its list without copying. A walk whose group buffers or message grow past
// kMaxWalkBytes stops the iteration.
class WalkRecordingSteps final : public QueueIterationSteps {
 public:
  WalkRecordingSteps(const VendorDll::EntryPoints& e, mqs_process* handle, RemoteProcess& process,
                     DllCall& call, capnp::MessageBuilder& message,
                     wire::CommunicatorWalk::Builder out, std::set<int>& codes)
      : e_(e), handle_(handle), process_(process), call_(call), message_(message), out_(out),
        codes_(codes), orphanage_(capnp::Orphanage::getForMessageContaining(out)) {}

  std::optional<int> setupCommunicatorIterator() override {
    Recording r(call_, EntryPoint::setup_communicator_iterator);
    int rc = e_.mqs_setup_communicator_iterator(handle_);
    codes_.insert(rc);
    auto setup = out_.initSetup();
    setup.setRc(rc);
    setEffects(setup, r.finish());
    setUp_ = rc == mqs_ok;
    return rc;
  }

  std::optional<int> getCommunicator() override {
    comms_.push_back(orphanage_.newOrphan<wire::WalkedCommunicator>());
    auto c = comms_.back().get();
    Recording r(call_, EntryPoint::get_communicator);
    prepare(communicator_);
    int rc = e_.mqs_get_communicator(handle_, &communicator_);
    codes_.insert(rc);
    auto get = c.initGet();
    get.setRc(rc);
    capture(communicator_, get.initCommunicator());
    if (get.getCommunicator().getWritten() & wire::Communicator::WRITTEN_SIZE) {
      process_.communicatorSize = communicator_.size;
    }
    setEffects(get, r.finish());
    return rc;
  }

  bool asksCommGroup() override { return e_.mqs_get_comm_group != nullptr; }

  std::optional<int> getCommGroup() override {
    Recording r(call_, EntryPoint::get_comm_group);
    size_t capacity = GroupBuffer::capacityFor(communicator_.size);
    // Every group buffer is allocated and marked in full; beyond the minimum, a walk may
    // spend no more on them than its whole message may hold (sizes come from the target).
    groupBytes_ += (capacity - GroupBuffer::kMinCapacity) * sizeof(int);
    if (groupBytes_ > CommunicatorWalker::kMaxWalkBytes) return std::nullopt;
    GroupBuffer ranks(capacity);
    int rc = e_.mqs_get_comm_group(handle_, ranks.data());
    codes_.insert(rc);
    auto c = comms_.back().get();
    auto group = c.initGroup();
    group.setRc(rc);
    ranks.capture(group);
    setEffects(group, r.finish());
    c.setHasGroup(true);
    return rc;
  }

  bool asksCommCollStates() override { return e_.mqs_get_comm_coll_state != nullptr; }

  std::optional<int> getCommCollState(int collective) override {
    auto c = comms_.back().get();
    if (collective == 0) c.initCollStates(kCommCollectives);
    Recording r(call_, EntryPoint::get_comm_coll_state);
    int sequence, active;
    prepare(sequence);
    prepare(active);
    int rc = e_.mqs_get_comm_coll_state(handle_, collective, &sequence, &active);
    codes_.insert(rc);
    auto s = c.getCollStates()[static_cast<unsigned>(collective)];
    s.setRc(rc);
    capture(sequence, s.initSequence());
    capture(active, s.initActive());
    setEffects(s, r.finish());
    return rc;
  }

  std::optional<int> setupOperationIterator(int opClass) override {
    auto c = comms_.back().get();
    if (opClass == 0) c.initQueues(3);
    Recording r(call_, EntryPoint::setup_operation_iterator);
    int rc = e_.mqs_setup_operation_iterator(handle_, opClass);
    codes_.insert(rc);
    auto setup = c.getQueues()[static_cast<unsigned>(opClass)].initSetup();
    setup.setRc(rc);
    setEffects(setup, r.finish());
    opClass_ = opClass;
    ops_.clear();
    return rc;
  }

  std::optional<int> nextOperation() override {
    if (++operations_ % 1024 == 0 &&
        message_.sizeInWords() * sizeof(capnp::word) > CommunicatorWalker::kMaxWalkBytes) {
      return std::nullopt;
    }
    ops_.push_back(orphanage_.newOrphan<wire::RecordedOperation>());
    auto o = ops_.back().get();
    int rc;
    {
      Recording r(call_, EntryPoint::next_operation);
      auto operation = std::make_unique<mqs_pending_operation>();
      prepare(*operation);
      rc = e_.mqs_next_operation(handle_, operation.get());
      codes_.insert(rc);
      o.setRc(rc);
      capture(*operation, o.initOperation());
      setEffects(o, r.finish());
    }
    if (rc != mqs_ok) {  // the queue's last call
      auto list = comms_.back().get().getQueues()[static_cast<unsigned>(opClass_)].initOperations(
          static_cast<unsigned>(ops_.size()));
      for (size_t i = 0; i < ops_.size(); ++i) {
        list.adoptWithCaveats(static_cast<unsigned>(i), kj::mv(ops_[i]));
      }
    }
    return rc;
  }

  std::optional<int> nextCommunicator() override {
    Recording r(call_, EntryPoint::next_communicator);
    int rc = e_.mqs_next_communicator(handle_);
    codes_.insert(rc);
    auto c = comms_.back().get();
    auto next = c.initNext();
    next.setRc(rc);
    setEffects(next, r.finish());
    c.setHasNext(true);
    return rc;
  }

  // After an iteration that ended: the communicators into the walk (none when the iterator's
  // set-up failed, as the debugger then asks for none).
  void adoptCommunicators() {
    if (!setUp_) return;
    auto list = out_.initCommunicators(static_cast<unsigned>(comms_.size()));
    for (size_t i = 0; i < comms_.size(); ++i) {
      list.adoptWithCaveats(static_cast<unsigned>(i), kj::mv(comms_[i]));
    }
  }

 private:
  const VendorDll::EntryPoints& e_;
  mqs_process* handle_;
  RemoteProcess& process_;
  DllCall& call_;
  capnp::MessageBuilder& message_;
  wire::CommunicatorWalk::Builder out_;
  std::set<int>& codes_;
  capnp::Orphanage orphanage_;
  bool setUp_ = false;
  std::vector<capnp::Orphan<wire::WalkedCommunicator>> comms_;
  mqs_communicator communicator_;  // the one just got
  size_t groupBytes_ = 0;
  int opClass_ = 0;
  std::vector<capnp::Orphan<wire::RecordedOperation>> ops_;  // of the queue being recorded
  size_t operations_ = 0;  // next_operation calls of the whole walk
};

}  // namespace

bool CommunicatorWalker::record(capnp::MessageBuilder& message) {
  auto out = message.initRoot<wire::CommunicatorWalk>();
  std::set<int> codes;
  if (!recordCalls(message, out, codes)) return false;
  codes.erase(mqs_ok);
  codes.erase(mqs_end_of_list);
  // What a debugger asks next when it shows such a result; a text whose call had a visible
  // effect (printing) is left for the debugger to ask for itself.
  std::vector<std::pair<int, const char*>> texts;
  for (int code : codes) {
    Recording r(call_, EntryPoint::dll_error_string);
    const char* text = dll_.entry().mqs_dll_error_string(code);
    if (r.finish().empty()) texts.emplace_back(code, text);
  }
  auto list = out.initErrorTexts(static_cast<unsigned>(texts.size()));
  for (size_t i = 0; i < texts.size(); ++i) {
    auto t = list[static_cast<unsigned>(i)];
    t.setCode(texts[i].first);
    if (texts[i].second == nullptr) {
      t.initText().setNull();
    } else {
      t.initText().setText(std::string(texts[i].second, strnlen(texts[i].second, kMaxDllString)));
    }
  }
  call_.metrics().add(Count::Walks);
  return true;
}

bool CommunicatorWalker::recordCalls(capnp::MessageBuilder& message,
                                     wire::CommunicatorWalk::Builder out, std::set<int>& codes) {
  WalkRecordingSteps steps(dll_.entry(), handle(), process_, call_, message, out, codes);
  QueueIterationLimits limits;
  limits.communicators = kMaxWalkCommunicators;
  limits.operations = kMaxWalkOperations;
  if (iterateQueues(steps, limits) != IterationEnd::Ended) return false;
  steps.adoptCommunicators();
  return true;
}

void CommunicatorWalker::reposition(wire::WalkCursor::Reader cursor) {
  if (!cursor.getSetUp()) return;  // nothing the debugger did since the walk depends on state
  const VendorDll::EntryPoints& e = dll_.entry();
  std::vector<Effect> discarded;
  HeldEffects held(call_, &discarded);
  // Each step goes only as far as the DLL still answers mqs_ok: the DLL's lists may be shorter
  // than when the debugger stepped through them (a re-established session runs a fresh DLL on
  // a target that went on), and a DLL asked for the next element past its end may crash
  // (MPICH's dereferences NULL). The debugger's next call then gets the DLL's own answer there.
  [&]() {
    call_.metrics().setLastCall(nameOf(EntryPoint::setup_communicator_iterator));
    if (e.mqs_setup_communicator_iterator(handle()) != mqs_ok) return;
    call_.metrics().setLastCall(nameOf(EntryPoint::next_communicator));
    for (uint32_t k = 0; k < cursor.getCommunicator(); ++k) {
      if (e.mqs_next_communicator(handle()) != mqs_ok) return;
    }
    if (cursor.getOpClass() < 0) return;
    call_.metrics().setLastCall(nameOf(EntryPoint::setup_operation_iterator));
    if (e.mqs_setup_operation_iterator(handle(), cursor.getOpClass()) != mqs_ok) return;
    auto operation = std::make_unique<mqs_pending_operation>();
    call_.metrics().setLastCall(nameOf(EntryPoint::next_operation));
    for (uint32_t j = 0; j < cursor.getOperations(); ++j) {
      prepare(*operation);
      if (e.mqs_next_operation(handle(), operation.get()) != mqs_ok) return;
    }
  }();
  call_.host().relayDllOutput(call_);
}

}  // namespace mqd::server
