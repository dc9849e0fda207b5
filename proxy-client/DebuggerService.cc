#include "DebuggerService.h"

#include <capnp/message.h>

#include <memory>

#include "Bulk.h"
#include "Connection.h"
#include "DebuggerSide.h"
#include "ProxyErrors.h"

namespace mqd::client {
namespace {

// The largest single fetch the shim performs for the server (mqd.capnp, maxFetchBytes).
constexpr int32_t kMaxFetchBytes = wire::MAX_FETCH_BYTES;

// find_function / find_symbol results: rc, and the address only if the debugger stored one.
template <typename Results>
void fillAddress(const DebuggerSide::Address& a, Results results) {
  results.setRc(a.rc);
  if (a.written) {
    results.initAddress().setValue(a.value);
  } else {
    results.initAddress().setUntouched();
  }
}

}  // namespace

template <typename Value>
kj::Promise<Value> DebuggerService::onCallingThread(const char* what,
                                                    std::function<Value(DebuggerSide&)> run) {
  std::shared_ptr<PendingCall> call = connection_.current();
  if (!call) {
    throw peerException(MQD_PROXY_ERR_NOT_SET_UP,
                         std::string(what) + " requested while no mqs_* call is in progress");
  }
  if (ClientCounters* c = connection_.counters()) ++c->callbacksServed;
  MQD_LOG(Trace, "callback %s", what);
  auto paf = kj::newPromiseAndCrossThreadFulfiller<Value>();
  auto fulfiller =
      std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<Value>>>(kj::mv(paf.fulfiller));
  DebuggerSide* side = &side_;
  PendingCall* target = call.get();  // the task only runs while the call is served
  bool posted = call->post([fulfiller, run = std::move(run), side, target, what]() {
    ++side->answered.callbacks;
    try {
      (*fulfiller)->fulfill(run(*side));
    } catch (const ProxyError& e) {
      if (e.code() == MQD_PROXY_ERR_ADDRESS_WIDTH || e.code() == MQD_PROXY_ERR_PROTOCOL) {
        target->noteCallbackError(e.code(), std::string(what) + ": " + e.what());
      }
      (*fulfiller)->reject(peerException(e.code(), std::string(what) + ": " + e.what()));
    } catch (const std::exception& e) {
      (*fulfiller)->reject(
          peerException(MQD_PROXY_ERR_CALLBACK_FAILED, std::string(what) + ": " + e.what()));
    }
  });
  if (!posted) {
    throw peerException(MQD_PROXY_ERR_SESSION_LOST,
                         std::string(what) + " arrived after its call ended");
  }
  return kj::mv(paf.promise);
}

kj::Promise<void> DebuggerService::findFunction(FindFunctionContext context) {
  auto p = context.getParams();
  uint64_t image = p.getImage();
  std::string name = p.getName();
  int lang = p.getLang();
  bool want = p.getWantAddress();
  return onCallingThread<DebuggerSide::Address>(
             "find_function",
             [=](DebuggerSide& d) {
               d.lookedUp({LookupKey::Function, name, lang, ""});
               return d.findFunction(image, name.c_str(), lang, want);
             })
      .then([context](DebuggerSide::Address a) mutable { fillAddress(a, context.getResults()); });
}

kj::Promise<void> DebuggerService::findSymbol(FindSymbolContext context) {
  auto p = context.getParams();
  uint64_t image = p.getImage();
  std::string name = p.getName();
  bool want = p.getWantAddress();
  return onCallingThread<DebuggerSide::Address>(
             "find_symbol",
             [=](DebuggerSide& d) {
               d.lookedUp({LookupKey::Symbol, name, 0, ""});
               return d.findSymbol(image, name.c_str(), want);
             })
      .then([context](DebuggerSide::Address a) mutable { fillAddress(a, context.getResults()); });
}

kj::Promise<void> DebuggerService::findType(FindTypeContext context) {
  auto p = context.getParams();
  uint64_t image = p.getImage();
  std::string name = p.getName();
  int lang = p.getLang();
  return onCallingThread<uint64_t>(
             "find_type",
             [=](DebuggerSide& d) {
               d.lookedUp({LookupKey::Type, name, lang, ""});
               return d.findType(image, name.c_str(), lang);
             })
      .then([context](uint64_t type) mutable { context.getResults().setType(type); });
}

kj::Promise<void> DebuggerService::fieldOffset(FieldOffsetContext context) {
  auto p = context.getParams();
  uint64_t type = p.getType();
  std::string field = p.getField();
  return onCallingThread<int>("field_offset",
                              [=](DebuggerSide& d) {
                                d.lookedUpOfType(LookupKey::Field, type, field);
                                return d.fieldOffset(type, field.c_str());
                              })
      .then([context](int offset) mutable { context.getResults().setOffset(offset); });
}

kj::Promise<void> DebuggerService::sizeOf(SizeOfContext context) {
  uint64_t type = context.getParams().getType();
  return onCallingThread<int>("sizeof",
                              [=](DebuggerSide& d) {
                                d.lookedUpOfType(LookupKey::SizeOf, type, "");
                                return d.sizeOf(type);
                              })
      .then([context](int size) mutable { context.getResults().setSize(size); });
}

kj::Promise<void> DebuggerService::getTypeSizes(GetTypeSizesContext context) {
  uint64_t process = context.getParams().getProcess();
  using Sizes = DebuggerSide::TypeSizes;
  return onCallingThread<Sizes>("get_type_sizes",
                                [=](DebuggerSide& d) { return d.getTypeSizes(process); })
      .then([context](Sizes sizes) mutable {
        DebuggerSide::writeTypeSizes(sizes,
                                     context.getResults().initSizes(
                                         static_cast<unsigned>(sizes.size())));
      });
}

kj::Promise<void> DebuggerService::fetchData(FetchDataContext context) {
  auto p = context.getParams();
  uint64_t process = p.getProcess();
  uint64_t address = p.getAddress();
  int32_t size = p.getSize();
  if (size < 0 || size > kMaxFetchBytes) {
    throw peerException(MQD_PROXY_ERR_FETCH_TOO_LARGE,
                         "fetch_data of " + std::to_string(size) + " bytes refused");
  }
  struct Fetched {
    int rc;
    std::vector<unsigned char> bytes;
  };
  return onCallingThread<Fetched>("fetch_data",
                                  [=](DebuggerSide& d) {
                                    Fetched f;
                                    f.rc = d.fetchData(process, address, size, &f.bytes);
                                    return f;
                                  })
      .then([context](Fetched f) mutable {
        auto r = context.getResults();
        r.setRc(f.rc);
        if (f.rc == mqs_ok) r.setData(kj::arrayPtr(f.bytes.data(), f.bytes.size()));
      });
}

kj::Promise<void> DebuggerService::getGlobalRank(GetGlobalRankContext context) {
  uint64_t process = context.getParams().getProcess();
  return onCallingThread<int>("get_global_rank",
                              [=](DebuggerSide& d) { return d.getGlobalRank(process); })
      .then([context](int rank) mutable { context.getResults().setRank(rank); });
}

kj::Promise<void> DebuggerService::getImage(GetImageContext context) {
  uint64_t process = context.getParams().getProcess();
  return onCallingThread<uint64_t>("get_image",
                                   [=](DebuggerSide& d) { return d.getImage(process); })
      .then([context](uint64_t image) mutable { context.getResults().setImage(image); });
}

kj::Promise<void> DebuggerService::getProcessJob(GetProcessJobContext context) {
  uint64_t process = context.getParams().getProcess();
  return onCallingThread<uint64_t>("get_process_job",
                                   [=](DebuggerSide& d) { return d.getProcessJob(process); })
      .then([context](uint64_t job) mutable { context.getResults().setJob(job); });
}

kj::Promise<void> DebuggerService::getProcessIdentity(GetProcessIdentityContext context) {
  uint64_t process = context.getParams().getProcess();
  return onCallingThread<int>("get_process_identity",
                              [=](DebuggerSide& d) { return d.getProcessIdentity(process); })
      .then([context](int identity) mutable { context.getResults().setIdentity(identity); });
}

kj::Promise<void> DebuggerService::getProcess(GetProcessContext context) {
  uint64_t job = context.getParams().getJob();
  int index = context.getParams().getIndex();
  return onCallingThread<uint64_t>("get_process",
                                   [=](DebuggerSide& d) { return d.getProcess(job, index); })
      .then([context](uint64_t process) mutable { context.getResults().setProcess(process); });
}

kj::Promise<void> DebuggerService::errorString(ErrorStringContext context) {
  int code = context.getParams().getCode();
  return onCallingThread<std::optional<std::string>>(
             "errorstring", [=](DebuggerSide& d) { return d.errorString(code); })
      .then([context](std::optional<std::string> text) mutable {
        auto out = context.getResults().initText();
        if (text) {
          out.setText(*text);
        } else {
          out.setNull();
        }
      });
}

kj::Promise<void> DebuggerService::effect(EffectContext context) {
  auto effect = context.getParams().getEffect();
  std::shared_ptr<PendingCall> call = connection_.current();
  if (ClientCounters* c = connection_.counters()) ++c->notifications;
  // Not awaited by the server. Delivered on the calling thread, in order with the call's other
  // callbacks; the message is the RPC system's, so the task keeps a copy.
  if (call) {
    auto kept = std::make_shared<kj::Own<wire::Effect::Reader>>(capnp::clone(effect));
    DebuggerSide* side = &side_;
    PendingCall* target = call.get();  // the task only runs while the call is served
    call->post([side, kept, target]() {
      try {
        side->deliver(**kept);
      } catch (const ProxyError& e) {
        target->noteCallbackError(e.code(), std::string("put_info: ") + e.what());
      }
    });
  } else if (effect.isDllOutput()) {
    // Output of a request the shim does not wait for (reposition) still reaches stderr.
    side_.effect(effect);
  }
  return kj::READY_NOW;
}

kj::Promise<void> DebuggerService::fetchBlocks(FetchBlocksContext context) {
  struct Request {
    uint64_t address;
    uint32_t size;
    uint64_t neededAddress;
    uint32_t neededSize;
  };
  auto params = context.getParams();
  uint64_t process = params.getProcess();
  bool aside = params.getAside();
  std::vector<Request> requests;
  uint64_t total = 0;
  for (auto b : params.getBlocks()) {
    total += b.getSize();
    if (total > kMaxBulkBytes) {
      throw peerException(MQD_PROXY_ERR_FETCH_TOO_LARGE, "fetchBlocks asks for too much");
    }
    requests.push_back({b.getAddress(), b.getSize(), b.getNeededAddress(), b.getNeededSize()});
  }
  using Blocks = std::vector<DebuggerSide::Block>;
  bool compress = connection_.compress();
  return onCallingThread<Blocks>("fetchBlocks",
                                 [process, requests, aside](DebuggerSide& d) {
                                   ++d.answered.blockFetches;
                                   Blocks out;
                                   for (const Request& r : requests) {
                                     try {
                                       out.push_back(d.readBlock(process, r.address, r.size,
                                                                 r.neededAddress, r.neededSize,
                                                                 aside));
                                     } catch (const ProxyError& e) {
                                       if (!aside) throw;
                                       DebuggerSide::Block refused;
                                       refused.rc = e.code();
                                       out.push_back(std::move(refused));
                                     }
                                   }
                                   return out;
                                 })
      .then([context, compress](Blocks blocks) mutable {
        auto list = context.getResults().initBlocks(static_cast<unsigned>(blocks.size()));
        for (size_t i = 0; i < blocks.size(); ++i) {
          auto out = list[static_cast<unsigned>(i)];
          out.setRc(blocks[i].rc);
          out.setAddress(blocks[i].address);
          setBulk(out.initData(), kj::arrayPtr(blocks[i].bytes.data(), blocks[i].bytes.size()),
                  compress);
        }
      });
}

kj::Promise<void> DebuggerService::lookUp(LookUpContext context) {
  auto params = context.getParams();
  uint64_t image = params.getImage();
  std::vector<LookupKey> requests;
  for (auto l : params.getLookups()) {
    std::optional<LookupKey> key = LookupKey::from(l);
    if (!key) throw peerException(MQD_PROXY_ERR_PROTOCOL, "lookUp: a look-up of an unknown kind");
    requests.push_back(std::move(*key));
  }
  using Results = std::vector<DebuggerSide::LookupResult>;
  return onCallingThread<Results>("lookUp",
                                  [image, requests](DebuggerSide& d) {
                                    for (const LookupKey& k : requests) d.lookedUp(k);
                                    return d.lookUp(image, requests);
                                  })
      .then([context](Results results) mutable {
        auto list = context.getResults().initAnswers(static_cast<unsigned>(results.size()));
        for (size_t i = 0; i < results.size(); ++i) {
          results[i].writeTo(list[static_cast<unsigned>(i)]);
        }
      });
}

}  // namespace mqd::client
