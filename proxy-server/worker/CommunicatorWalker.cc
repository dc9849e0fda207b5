#include "CommunicatorWalker.h"

#include <capnp/orphan.h>

#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "OutputCapture.h"
#include "RemoteDebugger.h"
#include "SessionBoard.h"
#include "VendorDll.h"
#include "WalkLimits.h"

namespace mqd::server {
namespace {

// A walk larger than this is not recorded (each operation costs a few hundred bytes).
constexpr size_t kMaxRecordedOperations = kMaxWalkOperations;
constexpr size_t kMaxRecordedCommunicators = kMaxWalkCommunicators;
constexpr int kCollectives = 14;  // Barrier .. Scatterv

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
  const VendorDll::EntryPoints& e = dll_.entry();
  {
    Recording r(call_, EntryPoint::setup_communicator_iterator);
    int rc = e.mqs_setup_communicator_iterator(handle());
    codes.insert(rc);
    auto setup = out.initSetup();
    setup.setRc(rc);
    setEffects(setup, r.finish());
    if (rc != mqs_ok) return true;
  }
  // Built as orphans in the walk's own message first (the counts are not known in advance),
  // then adopted into their lists without copying.
  auto orphanage = capnp::Orphanage::getForMessageContaining(out);
  std::vector<capnp::Orphan<wire::WalkedCommunicator>> comms;
  size_t operations = 0;
  size_t groupBytes = 0;
  for (;;) {
    if (comms.size() >= kMaxRecordedCommunicators) return false;
    comms.push_back(orphanage.newOrphan<wire::WalkedCommunicator>());
    auto c = comms.back().get();
    mqs_communicator communicator;
    int getRc;
    {
      Recording r(call_, EntryPoint::get_communicator);
      prepare(communicator);
      getRc = e.mqs_get_communicator(handle(), &communicator);
      codes.insert(getRc);
      auto get = c.initGet();
      get.setRc(getRc);
      capture(communicator, get.initCommunicator());
      if (get.getCommunicator().getWritten() & wire::Communicator::WRITTEN_SIZE) process_.communicatorSize = communicator.size;
      setEffects(get, r.finish());
    }
    if (getRc != mqs_ok) break;  // a debugger stops here
    if (e.mqs_get_comm_group != nullptr) {
      Recording r(call_, EntryPoint::get_comm_group);
      size_t capacity = GroupBuffer::capacityFor(communicator.size);
      // Every group buffer is allocated and marked in full; beyond the minimum, a walk may
      // spend no more on them than its whole message may hold (sizes come from the target).
      groupBytes += (capacity - GroupBuffer::kMinCapacity) * sizeof(int);
      if (groupBytes > kMaxWalkBytes) return false;
      GroupBuffer ranks(capacity);
      int rc = e.mqs_get_comm_group(handle(), ranks.data());
      codes.insert(rc);
      auto group = c.initGroup();
      group.setRc(rc);
      ranks.capture(group);
      setEffects(group, r.finish());
      c.setHasGroup(true);
    }
    if (e.mqs_get_comm_coll_state != nullptr) {
      auto states = c.initCollStates(kCollectives);
      for (int k = 0; k < kCollectives; ++k) {
        Recording r(call_, EntryPoint::get_comm_coll_state);
        int sequence, active;
        prepare(sequence);
        prepare(active);
        int rc = e.mqs_get_comm_coll_state(handle(), k, &sequence, &active);
        codes.insert(rc);
        auto s = states[static_cast<unsigned>(k)];
        s.setRc(rc);
        capture(sequence, s.initSequence());
        capture(active, s.initActive());
        setEffects(s, r.finish());
      }
    }
    auto queues = c.initQueues(3);
    for (int op = 0; op < 3; ++op) {
      auto q = queues[static_cast<unsigned>(op)];
      int rc;
      {
        Recording r(call_, EntryPoint::setup_operation_iterator);
        rc = e.mqs_setup_operation_iterator(handle(), op);
        codes.insert(rc);
        auto setup = q.initSetup();
        setup.setRc(rc);
        setEffects(setup, r.finish());
      }
      if (rc != mqs_ok) continue;
      std::vector<capnp::Orphan<wire::RecordedOperation>> ops;
      for (;;) {
        if (++operations > kMaxRecordedOperations) return false;
        if (operations % 1024 == 0 && message.sizeInWords() * sizeof(capnp::word) > kMaxWalkBytes) {
          return false;
        }
        ops.push_back(orphanage.newOrphan<wire::RecordedOperation>());
        auto o = ops.back().get();
        Recording r(call_, EntryPoint::next_operation);
        auto operation = std::make_unique<mqs_pending_operation>();
        prepare(*operation);
        rc = e.mqs_next_operation(handle(), operation.get());
        codes.insert(rc);
        o.setRc(rc);
        capture(*operation, o.initOperation());
        setEffects(o, r.finish());
        if (rc != mqs_ok) break;
      }
      auto list = q.initOperations(static_cast<unsigned>(ops.size()));
      for (size_t i = 0; i < ops.size(); ++i) {
        list.adoptWithCaveats(static_cast<unsigned>(i), kj::mv(ops[i]));
      }
    }
    int nextRc;
    {
      Recording r(call_, EntryPoint::next_communicator);
      nextRc = e.mqs_next_communicator(handle());
      codes.insert(nextRc);
      auto next = c.initNext();
      next.setRc(nextRc);
      setEffects(next, r.finish());
      c.setHasNext(true);
    }
    if (nextRc != mqs_ok) break;
  }
  auto list = out.initCommunicators(static_cast<unsigned>(comms.size()));
  for (size_t i = 0; i < comms.size(); ++i) {
    list.adoptWithCaveats(static_cast<unsigned>(i), kj::mv(comms[i]));
  }
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
