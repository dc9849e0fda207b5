// CommunicatorWalker against the test vendor DLL, with a fake debugger over a synthetic target
// (testing/harness: TargetModel, SyntheticMpi) served as a Cap'n Proto Debugger in this
// process: the walk it records is what the DLL answers, call by call, and reposition brings the
// DLL back to where a cursor says the debugger stands.
#include <doctest/doctest.h>

#include <capnp/message.h>
#include <kj/async.h>

#include <map>
#include <string>
#include <vector>

#include "CallbackTables.h"
#include "CommunicatorWalker.h"
#include "DebuggerObjects.h"
#include "DllCall.h"
#include "RemoteDebugger.h"
#include "RunAsDllCall.h"
#include "SessionBoard.h"
#include "SyntheticMpi.h"
#include "TargetModel.h"
#include "TestPaths.h"
#include "VendorDll.h"

using namespace mqd::server;
namespace wire = mqd::wire;
using mqd::harness::TargetModel;

namespace {

constexpr uint64_t kImage = 3, kProcess = 7;
constexpr size_t kOpsPerQueue = 3;
constexpr bool kHostBigEndian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

// The debugger's side, answered from the target as a real debugger answers from a process.
class TargetDebugger final : public wire::Debugger::Server {
 public:
  explicit TargetDebugger(const TargetModel& target) : target_(target) {}

 protected:
  kj::Promise<void> findFunction(FindFunctionContext context) override {
    auto p = context.getParams();
    answerAddress(context.getResults(), target_.function(p.getName()), p.getWantAddress());
    return kj::READY_NOW;
  }
  kj::Promise<void> findSymbol(FindSymbolContext context) override {
    auto p = context.getParams();
    answerAddress(context.getResults(), target_.symbol(p.getName()), p.getWantAddress());
    return kj::READY_NOW;
  }
  kj::Promise<void> findType(FindTypeContext context) override {
    std::string name = context.getParams().getName();
    uint64_t token = 0;
    if (target_.type(name) != nullptr) {
      auto it = tokens_.emplace(name, tokens_.size() + 1).first;
      names_[it->second] = name;
      token = it->second;
    }
    context.getResults().setType(token);
    return kj::READY_NOW;
  }
  kj::Promise<void> fieldOffset(FieldOffsetContext context) override {
    auto p = context.getParams();
    const TargetModel::Type* type = typeOf(p.getType());
    int offset = -1;
    if (type != nullptr) {
      auto field = type->fields.find(p.getField());
      if (field != type->fields.end()) offset = field->second;
    }
    context.getResults().setOffset(offset);
    return kj::READY_NOW;
  }
  kj::Promise<void> sizeOf(SizeOfContext context) override {
    const TargetModel::Type* type = typeOf(context.getParams().getType());
    context.getResults().setSize(type != nullptr ? type->size : 0);
    return kj::READY_NOW;
  }
  kj::Promise<void> getTypeSizes(GetTypeSizesContext context) override {
    std::vector<int> sizes = target_.typeSizes();
    auto out = context.getResults().initSizes(static_cast<unsigned>(sizes.size()));
    for (unsigned i = 0; i < out.size(); ++i) out[i].setValue(sizes[i]);
    return kj::READY_NOW;
  }
  kj::Promise<void> fetchData(FetchDataContext context) override {
    auto p = context.getParams();
    auto r = context.getResults();
    std::vector<kj::byte> bytes(static_cast<size_t>(p.getSize()));
    if (!target_.read(p.getAddress(), bytes.size(), bytes.data())) {
      r.setRc(mqs_no_information);
      return kj::READY_NOW;
    }
    r.setData(kj::arrayPtr(bytes.data(), bytes.size()));
    r.setRc(mqs_ok);
    return kj::READY_NOW;
  }
  kj::Promise<void> getGlobalRank(GetGlobalRankContext context) override {
    context.getResults().setRank(0);
    return kj::READY_NOW;
  }
  kj::Promise<void> getImage(GetImageContext context) override {
    context.getResults().setImage(kImage);
    return kj::READY_NOW;
  }
  kj::Promise<void> getProcessJob(GetProcessJobContext context) override {
    context.getResults().setJob(0);  // no job: a plain MPI process
    return kj::READY_NOW;
  }
  kj::Promise<void> getProcessIdentity(GetProcessIdentityContext context) override {
    context.getResults().setIdentity(0);
    return kj::READY_NOW;
  }
  kj::Promise<void> effect(EffectContext) override { return kj::READY_NOW; }

 private:
  template <typename Results>
  static void answerAddress(Results r, const uint64_t* address, bool wantAddress) {
    r.setRc(address != nullptr ? mqs_ok : mqs_no_information);
    if (address != nullptr && wantAddress) {
      r.initAddress().setValue(*address);
    } else {
      r.initAddress().setUntouched();
    }
  }
  const TargetModel::Type* typeOf(uint64_t token) const {
    auto it = names_.find(token);
    return it == names_.end() ? nullptr : target_.type(it->second);
  }

  const TargetModel& target_;
  std::map<std::string, uint64_t> tokens_;
  std::map<uint64_t, std::string> names_;
};

// The caches in policy off: every question is a round trip to the fake debugger.
RemoteDebugger::Options everyQuestionAsked() {
  RemoteDebugger::Options o;
  o.policy = wire::CachePolicy::OFF;
  return o;
}


// One rank of the synthetic job, set up in the test DLL as a session sets it up.
struct Rig {
  TargetModel target{static_cast<int>(sizeof(void*)), kHostBigEndian};
  mqd::harness::Job job = mqd::harness::standardJob(kOpsPerQueue);
  kj::EventLoop loop;
  kj::WaitScope waitScope{loop};
  test::CacheHost host{kj::heap<TargetDebugger>(target), everyQuestionAsked()};
  std::unique_ptr<VendorDll> dll = VendorDll::load(mqd::test::kTestDll3);
  RemoteImage& image = host.objects().image(kImage);
  RemoteProcess& process = host.objects().process(kProcess);

  Rig() {
    mqd::harness::layOut(target, job);
    image.setUp = true;
    process.setUp = true;
    process.targetBigEndian = kHostBigEndian;
    call([&](DllCall&) {
      const VendorDll::EntryPoints& e = dll->entry();
      e.mqs_setup_basic_callbacks(basicCallbackTable());
      REQUIRE(e.mqs_setup_image(dllImage(), imageCallbackTable()) == mqs_ok);
      char* message = nullptr;
      REQUIRE(e.mqs_image_has_queues(dllImage(), &message) == mqs_ok);
      REQUIRE(e.mqs_setup_process(dllProcess(), processCallbackTable()) == mqs_ok);
      REQUIRE(e.mqs_process_has_queues(dllProcess(), &message) == mqs_ok);
    });
  }
  ~Rig() {
    call([&](DllCall&) {
      for (void* info : host.objects().takeLiveInfos(wire::InfoKind::PROCESS)) {
        dll->entry().mqs_destroy_process_info(static_cast<mqs_process_info*>(info));
      }
      for (void* info : host.objects().takeLiveInfos(wire::InfoKind::IMAGE)) {
        dll->entry().mqs_destroy_image_info(static_cast<mqs_image_info*>(info));
      }
    });
  }

  // mqs_update_communicator_list, and the walk the server records right after it.
  void refresh(capnp::MessageBuilder& walk) {
    call([&](DllCall& call) {
      REQUIRE(dll->entry().mqs_update_communicator_list(dllProcess()) == mqs_ok);
      REQUIRE(CommunicatorWalker(*dll, process, call).record(walk));
    });
  }

  mqs_image* dllImage() { return reinterpret_cast<mqs_image*>(&image); }
  mqs_process* dllProcess() { return reinterpret_cast<mqs_process*>(&process); }

  // Runs `body` as the body of one mqs_* call (on a fiber, as the server runs the DLL).
  template <typename Body>
  void call(Body&& body) {
    test::runAsDllCall(host, waitScope, kj::fwd<Body>(body));
  }
};

}  // namespace

TEST_CASE("CommunicatorWalker: the walk holds every communicator and operation the DLL shows") {
  Rig rig;
  capnp::MallocMessageBuilder message;
  rig.refresh(message);
  auto walk = message.getRoot<wire::CommunicatorWalk>().asReader();
  CHECK(walk.getSetup().getRc() == mqs_ok);
  auto communicators = walk.getCommunicators();
  REQUIRE(communicators.size() == rig.job.communicators.size());
  for (unsigned c = 0; c < communicators.size(); ++c) {
    INFO("communicator " << c);
    auto recorded = communicators[c];
    const mqd::harness::Communicator& expected = rig.job.communicators[c];
    CHECK(recorded.getGet().getRc() == mqs_ok);
    CHECK(recorded.getGet().getCommunicator().getUniqueId() == static_cast<uint64_t>(expected.id));
    CHECK(recorded.getGet().getCommunicator().getSize() ==
          static_cast<int64_t>(expected.worldRanks.size()));
    REQUIRE(recorded.getQueues().size() == 3);
    for (unsigned q = 0; q < 3; ++q) {
      INFO("queue " << q);
      auto operations = recorded.getQueues()[q].getOperations();
      // Every operation, then the call that ended the queue (not mqs_ok).
      REQUIRE(operations.size() == expected.queues[q].size() + 1);
      for (unsigned k = 0; k + 1 < operations.size(); ++k) {
        const mqd::harness::Operation& posted = expected.queues[q][k];
        CHECK(operations[k].getRc() == mqs_ok);
        CHECK(operations[k].getOperation().getStatus() == posted.status);
        CHECK(operations[k].getOperation().getDesiredLength() == posted.length);
      }
      CHECK(operations[operations.size() - 1].getRc() != mqs_ok);
    }
    // The last communicator's next_communicator ends the list.
    REQUIRE(recorded.getHasNext());
    CHECK((recorded.getNext().getRc() == mqs_ok) == (c + 1 < communicators.size()));
  }
}

TEST_CASE("CommunicatorWalker: reposition leaves the DLL where the cursor says") {
  Rig rig;
  capnp::MallocMessageBuilder message;
  rig.refresh(message);
  // The recording ran the whole iteration: the DLL stands at its end.
  const unsigned communicator = 2, opClass = mqs_pending_receives, done = 1;
  capnp::MallocMessageBuilder cursorMessage;
  auto cursor = cursorMessage.initRoot<wire::WalkCursor>();
  cursor.setSetUp(true);
  cursor.setCommunicator(communicator);
  cursor.setOpClass(static_cast<int>(opClass));
  cursor.setOperations(done);
  auto expected = message.getRoot<wire::CommunicatorWalk>()
                      .asReader()
                      .getCommunicators()[communicator];
  rig.call([&](DllCall& call) {
    CommunicatorWalker(*rig.dll, rig.process, call).reposition(cursor.asReader());
    const VendorDll::EntryPoints& e = rig.dll->entry();
    mqs_communicator comm{};
    REQUIRE(e.mqs_get_communicator(rig.dllProcess(), &comm) == mqs_ok);
    CHECK(static_cast<uint64_t>(comm.unique_id) ==
          expected.getGet().getCommunicator().getUniqueId());
    // The next operation is the one after the `done` the debugger already saw.
    mqs_pending_operation op{};
    REQUIRE(e.mqs_next_operation(rig.dllProcess(), &op) == mqs_ok);
    auto next = expected.getQueues()[opClass].getOperations()[done].getOperation();
    CHECK(op.status == next.getStatus());
    CHECK(op.desired_length == next.getDesiredLength());
    CHECK(op.buffer == next.getBuffer());
  });
}
