#include "RecordedDebugger.h"

#include <capnp/dynamic.h>
#include <capnp/message.h>
#include <kj/debug.h>

#include <algorithm>
#include <map>

#include "Bulk.h"
#include "ProxyErrors.h"
#include "WireMethods.h"
#include "mqs_interface.h"

namespace mqd::replay {

using namespace client;  // the shim's parts the replay runs as the shim would

namespace {

using D = wire::Debugger;

// What the replay does with a Debugger call: the methods it answers from its index, each known
// by its generated Params type (so the schema gives the ordinal), the notification, and every
// other method (answered by an exact match of its parameters).
enum class Answered {
  kFindFunction, kFindSymbol, kFindType, kFieldOffset, kSizeOf, kFetchData, kFetchBlocks,
  kLookUp, kEffect, kByExactMatch
};

Answered answeredOf(uint16_t method) {
  static const std::map<uint16_t, Answered> byOrdinal = {
      {debuggerMethod<D::FindFunctionParams>(), Answered::kFindFunction},
      {debuggerMethod<D::FindSymbolParams>(), Answered::kFindSymbol},
      {debuggerMethod<D::FindTypeParams>(), Answered::kFindType},
      {debuggerMethod<D::FieldOffsetParams>(), Answered::kFieldOffset},
      {debuggerMethod<D::SizeOfParams>(), Answered::kSizeOf},
      {debuggerMethod<D::FetchDataParams>(), Answered::kFetchData},
      {debuggerMethod<D::FetchBlocksParams>(), Answered::kFetchBlocks},
      {debuggerMethod<D::LookUpParams>(), Answered::kLookUp},
      {debuggerMethod<D::EffectParams>(), Answered::kEffect},
  };
  auto it = byOrdinal.find(method);
  return it == byOrdinal.end() ? Answered::kByExactMatch : it->second;
}

capnp::InterfaceSchema debuggerSchema() { return capnp::Schema::from<wire::Debugger>(); }

std::string describe(uint16_t method, capnp::AnyPointer::Reader params) {
  auto methods = debuggerSchema().getMethods();
  if (method >= methods.size()) return "method " + std::to_string(method);
  auto m = methods[method];
  auto text = kj::str(m.getProto().getName(),
                      params.getAs<capnp::DynamicStruct>(m.getParamType()));
  std::string out(text.cStr());
  if (out.size() > 200) out = out.substr(0, 200) + "...";
  return out;
}

std::string canonical(capnp::AnyPointer::Reader params) {
  kj::Array<capnp::word> words = params.getAs<capnp::AnyStruct>().canonicalize();
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

[[noreturn]] void throwRecorded(record::Failure::Reader failure) {
  kj::throwFatalException(kj::Exception(static_cast<kj::Exception::Type>(failure.getType()),
                                        __FILE__, __LINE__, kj::str(failure.getDescription())));
}

}  // namespace

// ---- notifications ----

bool RecordedDebugger::Notifications::is(uint16_t method) {
  return answeredOf(method) == Answered::kEffect;
}

void RecordedDebugger::Notifications::add(uint16_t method, capnp::AnyPointer::Reader params) {
  if (params.getAs<wire::Debugger::EffectParams>().getEffect().isDllOutput()) return;
  list_.push_back(describe(method, params));
}

// ---- the capability ----

class RecordedDebugger::Service final : public capnp::Capability::Server {
 public:
  Service(RecordedDebugger& answers, bool compress) : a_(answers), compress_(compress) {}

  DispatchCallResult dispatchCall(uint64_t, uint16_t method,
                                  capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> context)
      override {
    return {kj::evalNow([&]() -> kj::Promise<void> {
              answer(method, context);
              return kj::READY_NOW;
            }),
            false};
  }

 private:
  void answer(uint16_t method, capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer>& context);

  RecordedDebugger& a_;
  bool compress_;
};

void RecordedDebugger::Service::answer(
    uint16_t method, capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer>& context) {
  auto params = context.getParams();
  if (Notifications::is(method)) {
    ++a_.counts_.notifications;
    a_.notifications_.add(method, params);
    return;
  }
  ++a_.counts_.answered;
  auto fillAddress = [](auto results, const AddressAnswer& found) {
    results.setRc(found.rc);
    if (found.written) {
      results.initAddress().setValue(found.address);
    } else {
      results.initAddress().setUntouched();
    }
  };
  switch (answeredOf(method)) {
    case Answered::kFindFunction: {
      auto p = params.getAs<wire::Debugger::FindFunctionParams>();
      fillAddress(context.getResults().initAs<wire::Debugger::FindFunctionResults>(),
                  a_.function(p.getImage(), p.getName(), p.getLang(), p.getWantAddress()));
      return;
    }
    case Answered::kFindSymbol: {
      auto p = params.getAs<wire::Debugger::FindSymbolParams>();
      fillAddress(context.getResults().initAs<wire::Debugger::FindSymbolResults>(),
                  a_.symbol(p.getImage(), p.getName(), p.getWantAddress()));
      return;
    }
    case Answered::kFindType: {
      auto p = params.getAs<wire::Debugger::FindTypeParams>();
      context.getResults().initAs<wire::Debugger::FindTypeResults>().setType(
          a_.type(NameKey(p.getImage(), p.getName(), p.getLang())));
      return;
    }
    case Answered::kFieldOffset: {
      auto p = params.getAs<wire::Debugger::FieldOffsetParams>();
      context.getResults().initAs<wire::Debugger::FieldOffsetResults>().setOffset(
          a_.fieldOffset(p.getType(), p.getField()));
      return;
    }
    case Answered::kSizeOf: {
      auto p = params.getAs<wire::Debugger::SizeOfParams>();
      context.getResults().initAs<wire::Debugger::SizeOfResults>().setSize(a_.sizeOf(p.getType()));
      return;
    }
    case Answered::kFetchData: {
      auto p = params.getAs<wire::Debugger::FetchDataParams>();
      auto results = context.getResults().initAs<wire::Debugger::FetchDataResults>();
      uint64_t size = p.getSize() < 0 ? 0 : static_cast<uint64_t>(p.getSize());
      Read read = a_.readMemory(p.getProcess(), p.getAddress(), size, p.getAddress(),
                                p.getAddress() + size);
      results.setRc(read.rc);
      if (read.rc == mqs_ok) results.setData(read.bytes);
      return;
    }
    case Answered::kFetchBlocks: {
      auto p = params.getAs<wire::Debugger::FetchBlocksParams>();
      auto requests = p.getBlocks();
      auto out = context.getResults().initAs<wire::Debugger::FetchBlocksResults>().initBlocks(
          requests.size());
      for (unsigned i = 0; i < requests.size(); ++i) {
        auto r = requests[i];
        Read read = a_.readMemory(p.getProcess(), r.getNeededAddress(), r.getNeededSize(),
                                  r.getAddress(), r.getAddress() + r.getSize());
        out[i].setRc(read.rc);
        out[i].setAddress(read.address);
        setBulk(out[i].initData(), read.bytes, compress_);
      }
      return;
    }
    case Answered::kLookUp: {
      auto p = params.getAs<wire::Debugger::LookUpParams>();
      uint64_t image = p.getImage();
      auto lookups = p.getLookups();
      auto out = context.getResults().initAs<wire::Debugger::LookUpResults>().initAnswers(
          lookups.size());
      for (unsigned i = 0; i < lookups.size(); ++i) {
        auto l = lookups[i];
        auto answer = out[i];
        answer.initAddress().setUntouched();
        auto key = [image](wire::NamedLookup::Reader n) {
          return NameKey(image, n.getName(), n.getLang());
        };
        switch (l.which()) {
          case wire::Lookup::SYMBOL:
          case wire::Lookup::FUNCTION: {
            AddressAnswer found =
                l.isSymbol() ? a_.symbol(image, l.getSymbol(), true)
                             : a_.function(image, l.getFunction().getName(),
                                           l.getFunction().getLang(), true);
            answer.setRc(found.rc);
            if (found.written) answer.getAddress().setValue(found.address);
            break;
          }
          case wire::Lookup::TYPE:
            answer.setType(a_.type(key(l.getType())));
            break;
          case wire::Lookup::FIELD:
            answer.setValue(a_.fieldOffsetByName(key(l.getField().getType()),
                                                 l.getField().getField()));
            break;
          case wire::Lookup::SIZE_OF:
            answer.setValue(a_.sizeOfByName(key(l.getSizeOf())));
            break;
        }
      }
      return;
    }
    case Answered::kEffect:  // a notification, never answered
    case Answered::kByExactMatch:
      KJ_IF_MAYBE(recorded, a_.exact(method, params)) {
        context.getResults().set(*recorded);
        return;
      }
      a_.noteUnrecorded(describe(method, params));
      throw peerException(MQD_PROXY_ERR_CALLBACK_FAILED,
                           "mqd-proxy replay: the recording has no answer to " +
                               describe(method, params));
  }
}

wire::Debugger::Client RecordedDebugger::capability(bool compress) {
  capnp::Capability::Client service = kj::heap<Service>(*this, compress);
  return service.castAs<wire::Debugger>();
}

// ---- indexing the recording ----

RecordedDebugger::RecordedDebugger(const RecordReader& recording) : recording_(recording) {
  const unsigned methodCount = debuggerSchema().getMethods().size();
  std::map<uint64_t, uint32_t> epochs;
  size_t entry = 0;
  for (record::Entry::Reader e : recording_.entries()) {
    ++entry;
    if (e.isSessionCall() && e.getSessionCall().getMethod() ==
                                   sessionMethodOf(EntryPoint::update_communicator_list)) {
      auto p = e.getSessionCall().getParams();
      ++epochs[p.getAs<wire::Session::UpdateCommunicatorListParams>().getProcess()];
    } else if (e.isDebuggerCall()) {
      auto call = e.getDebuggerCall();
      if (Notifications::is(call.getMethod()) || call.getMethod() >= methodCount) continue;
      calls_.push_back(call);
      if (!call.hasFailure()) {
        try {
          index(call.getMethod(), call.getParams(), call.getResults(), epochs);
        } catch (const ProxyError& e) {
          // A damaged answer (a Bulk whose size or compression is wrong) is the recording's
          // fault, not the server's: the replay names the entry and stops before it starts.
          throw RecordFileError("entry " + std::to_string(entry) + " (the debugger's answer to " +
                                describeDebuggerMethod(call.getMethod()).cStr() +
                                ") is damaged: " + e.what());
        }
      }
      exact_[{call.getMethod(), canonical(call.getParams())}].push_back(calls_.size() - 1);
    }
  }
}

void RecordedDebugger::index(uint16_t method, capnp::AnyPointer::Reader params,
                             capnp::AnyPointer::Reader results,
                             const std::map<uint64_t, uint32_t>& epochs) {
  auto epochOf = [&epochs](uint64_t process) {
    auto it = epochs.find(process);
    return it == epochs.end() ? 0u : it->second;
  };
  auto addressOf = [](auto r) {
    AddressAnswer a;
    a.rc = r.getRc();
    a.written = r.getAddress().isValue();
    a.address = a.written ? r.getAddress().getValue() : 0;
    return a;
  };
  // A look-up answered with the address wanted is worth more than one without.
  auto keep = [this](AddressAnswer& slot, const AddressAnswer& a, bool wanted) {
    if (wanted || !slot.written) slot = a;
    if (a.rc != mqs_ok) symbolRefusalRc_ = a.rc;
  };
  switch (answeredOf(method)) {
    case Answered::kFindFunction: {
      auto p = params.getAs<wire::Debugger::FindFunctionParams>();
      keep(functions_[NameKey(p.getImage(), p.getName(), p.getLang())],
           addressOf(results.getAs<wire::Debugger::FindFunctionResults>()), p.getWantAddress());
      break;
    }
    case Answered::kFindSymbol: {
      auto p = params.getAs<wire::Debugger::FindSymbolParams>();
      keep(symbols_[{p.getImage(), p.getName()}],
           addressOf(results.getAs<wire::Debugger::FindSymbolResults>()), p.getWantAddress());
      break;
    }
    case Answered::kFindType: {
      auto p = params.getAs<wire::Debugger::FindTypeParams>();
      NameKey key(p.getImage(), p.getName(), p.getLang());
      uint64_t token = results.getAs<wire::Debugger::FindTypeResults>().getType();
      types_[key] = token;
      if (token != 0) typeNames_[token] = key;
      break;
    }
    case Answered::kFieldOffset: {
      auto p = params.getAs<wire::Debugger::FieldOffsetParams>();
      int offset = results.getAs<wire::Debugger::FieldOffsetResults>().getOffset();
      fields_[{p.getType(), p.getField()}] = offset;
      auto name = typeNames_.find(p.getType());
      if (name != typeNames_.end()) fieldsByName_[{name->second, p.getField()}] = offset;
      break;
    }
    case Answered::kSizeOf: {
      uint64_t token = params.getAs<wire::Debugger::SizeOfParams>().getType();
      int size = results.getAs<wire::Debugger::SizeOfResults>().getSize();
      sizes_[token] = size;
      auto name = typeNames_.find(token);
      if (name != typeNames_.end()) sizesByName_[name->second] = size;
      break;
    }
    case Answered::kFetchData: {
      auto p = params.getAs<wire::Debugger::FetchDataParams>();
      auto r = results.getAs<wire::Debugger::FetchDataResults>();
      uint32_t epoch = epochOf(p.getProcess());
      if (r.getRc() == mqs_ok) {
        remember(p.getProcess(), epoch, p.getAddress(), r.getData());
      } else {
        memory_[{p.getProcess(), epoch}].refused.push_back(
            {p.getAddress(), static_cast<uint64_t>(std::max(p.getSize(), 0)), r.getRc()});
        memoryRefusalRc_[p.getProcess()] = anyMemoryRefusalRc_ = r.getRc();
      }
      break;
    }
    case Answered::kFetchBlocks: {
      auto p = params.getAs<wire::Debugger::FetchBlocksParams>();
      auto asked = p.getBlocks();
      auto answered = results.getAs<wire::Debugger::FetchBlocksResults>().getBlocks();
      uint32_t epoch = epochOf(p.getProcess());
      for (unsigned i = 0; i < asked.size() && i < answered.size(); ++i) {
        auto b = answered[i];
        if (b.getRc() == mqs_ok) {
          kj::Array<kj::byte> bytes = readBulk(b.getData());
          remember(p.getProcess(), epoch, b.getAddress(), bytes);
        } else {
          memory_[{p.getProcess(), epoch}].refused.push_back(
              {asked[i].getNeededAddress(), asked[i].getNeededSize(), b.getRc()});
          memoryRefusalRc_[p.getProcess()] = anyMemoryRefusalRc_ = b.getRc();
        }
      }
      break;
    }
    case Answered::kLookUp: {
      auto p = params.getAs<wire::Debugger::LookUpParams>();
      uint64_t image = p.getImage();
      auto lookups = p.getLookups();
      auto answers = results.getAs<wire::Debugger::LookUpResults>().getAnswers();
      for (unsigned i = 0; i < lookups.size() && i < answers.size(); ++i) {
        auto l = lookups[i];
        auto a = answers[i];
        auto key = [image](wire::NamedLookup::Reader n) {
          return NameKey(image, n.getName(), n.getLang());
        };
        switch (l.which()) {
          case wire::Lookup::SYMBOL:
            keep(symbols_[{image, l.getSymbol()}], addressOf(a), true);
            break;
          case wire::Lookup::FUNCTION:
            keep(functions_[key(l.getFunction())], addressOf(a), true);
            break;
          case wire::Lookup::TYPE:
            types_[key(l.getType())] = a.getType();
            if (a.getType() != 0) typeNames_[a.getType()] = key(l.getType());
            break;
          case wire::Lookup::FIELD:
            fieldsByName_[{key(l.getField().getType()), l.getField().getField()}] = a.getValue();
            break;
          case wire::Lookup::SIZE_OF:
            sizesByName_[key(l.getSizeOf())] = a.getValue();
            break;
        }
      }
      break;
    }
    case Answered::kEffect:
    case Answered::kByExactMatch:
      break;  // answered by exact match
  }
}

void RecordedDebugger::remember(uint64_t process, uint32_t epoch, uint64_t address,
                                kj::ArrayPtr<const kj::byte> bytes) {
  if (bytes.size() == 0) return;
  auto& runs = memory_[{process, epoch}].runs;
  uint64_t lo = address;
  uint64_t hi = address + bytes.size();
  // Every run that overlaps or touches [lo, hi) is merged into one.
  auto first = runs.upper_bound(lo);
  if (first != runs.begin()) {
    auto before = std::prev(first);
    if (before->first + before->second.size() >= lo) first = before;
  }
  auto last = first;
  while (last != runs.end() && last->first <= hi) ++last;
  if (first != last) {
    lo = std::min(lo, first->first);
    auto back = std::prev(last);
    hi = std::max(hi, back->first + back->second.size());
  }
  std::vector<unsigned char> merged(hi - lo);
  for (auto it = first; it != last; ++it) {
    std::copy(it->second.begin(), it->second.end(), merged.begin() + (it->first - lo));
  }
  std::copy(bytes.begin(), bytes.end(), merged.begin() + (address - lo));
  runs.erase(first, last);
  runs.emplace(lo, std::move(merged));
}

// ---- answering ----

RecordedDebugger::Read RecordedDebugger::readMemory(uint64_t process, uint64_t address,
                                                    uint64_t size, uint64_t lo, uint64_t hi) {
  uint32_t now = epoch_[process];
  auto inEpoch = [&](uint32_t epoch, Read* out) {
    auto m = memory_.find({process, epoch});
    if (m == memory_.end()) return false;
    auto& runs = m->second.runs;
    auto it = runs.upper_bound(address);
    if (it != runs.begin()) {
      --it;
      uint64_t start = it->first;
      uint64_t end = start + it->second.size();
      if (start <= address && address + size <= end) {
        uint64_t from = std::max(start, lo);
        uint64_t to = std::min(end, hi);
        out->rc = mqs_ok;
        out->address = from;
        out->bytes = kj::arrayPtr(it->second.data() + (from - start), to - from);
        return true;
      }
    }
    return false;
  };
  auto refusedIn = [&](uint32_t epoch, Read* out) {
    auto m = memory_.find({process, epoch});
    if (m == memory_.end()) return false;
    for (const Refusal& r : m->second.refused) {
      if (r.address < address + size && address < r.address + std::max<uint64_t>(r.size, 1)) {
        out->rc = r.rc;
        return true;
      }
    }
    return false;
  };
  Read read;
  if (inEpoch(now, &read) || refusedIn(now, &read)) return read;
  // The nearest other epoch: earlier ones first (the target as it was), then later ones.
  std::vector<uint32_t> others;
  for (const auto& [key, memory] : memory_) {
    if (key.first == process && key.second != now) others.push_back(key.second);
  }
  std::sort(others.begin(), others.end(), [now](uint32_t a, uint32_t b) {
    bool aBefore = a < now, bBefore = b < now;
    if (aBefore != bBefore) return aBefore;
    return aBefore ? a > b : a < b;
  });
  for (uint32_t e : others) {
    if (inEpoch(e, &read)) {
      ++counts_.otherEpoch;
      return read;
    }
  }
  for (uint32_t e : others) {
    if (refusedIn(e, &read)) return read;
  }
  noteUnrecorded("memory of process " + std::to_string(process) + " at 0x" +
                 kj::str(kj::hex(address)).cStr() + ", " + std::to_string(size) + " bytes");
  auto rc = memoryRefusalRc_.find(process);
  read.rc = rc != memoryRefusalRc_.end() ? rc->second
            : anyMemoryRefusalRc_ != 0  ? anyMemoryRefusalRc_
                                        : MQD_PROXY_ERR_CALLBACK_FAILED;
  return read;
}

RecordedDebugger::AddressAnswer RecordedDebugger::symbol(uint64_t image, const std::string& name,
                                                         bool wantAddress) {
  auto it = symbols_.find({image, name});
  if (it == symbols_.end() || (wantAddress && it->second.rc == mqs_ok && !it->second.written)) {
    noteUnrecorded("symbol \"" + name + "\" of image " + std::to_string(image));
    return {symbolRefusalRc_ != 0 ? symbolRefusalRc_ : MQD_PROXY_ERR_CALLBACK_FAILED, false, 0};
  }
  AddressAnswer a = it->second;
  if (!wantAddress) a.written = false;
  return a;
}

RecordedDebugger::AddressAnswer RecordedDebugger::function(uint64_t image,
                                                           const std::string& name, int lang,
                                                           bool wantAddress) {
  auto it = functions_.find(NameKey(image, name, lang));
  if (it == functions_.end() ||
      (wantAddress && it->second.rc == mqs_ok && !it->second.written)) {
    noteUnrecorded("function \"" + name + "\" of image " + std::to_string(image));
    return {symbolRefusalRc_ != 0 ? symbolRefusalRc_ : MQD_PROXY_ERR_CALLBACK_FAILED, false, 0};
  }
  AddressAnswer a = it->second;
  if (!wantAddress) a.written = false;
  return a;
}

uint64_t RecordedDebugger::type(const NameKey& key) {
  auto it = types_.find(key);
  if (it != types_.end()) return it->second;
  noteUnrecorded("type \"" + std::get<1>(key) + "\"");
  return 0;
}

int RecordedDebugger::fieldOffset(uint64_t type, const std::string& field) {
  auto it = fields_.find({type, field});
  if (it != fields_.end()) return it->second;
  auto name = typeNames_.find(type);
  if (name != typeNames_.end()) return fieldOffsetByName(name->second, field);
  noteUnrecorded("field \"" + field + "\" of type token " + std::to_string(type));
  return -1;
}

int RecordedDebugger::fieldOffsetByName(const NameKey& type, const std::string& field) {
  auto it = fieldsByName_.find({type, field});
  if (it != fieldsByName_.end()) return it->second;
  auto token = types_.find(type);
  if (token != types_.end()) {
    auto known = fields_.find({token->second, field});
    if (known != fields_.end()) return known->second;
  }
  noteUnrecorded("field \"" + field + "\" of type \"" + std::get<1>(type) + "\"");
  return -1;
}

int RecordedDebugger::sizeOf(uint64_t type) {
  auto it = sizes_.find(type);
  if (it != sizes_.end()) return it->second;
  auto name = typeNames_.find(type);
  if (name != typeNames_.end()) return sizeOfByName(name->second);
  noteUnrecorded("sizeof type token " + std::to_string(type));
  return 0;
}

int RecordedDebugger::sizeOfByName(const NameKey& type) {
  auto it = sizesByName_.find(type);
  if (it != sizesByName_.end()) return it->second;
  auto token = types_.find(type);
  if (token != types_.end()) {
    auto known = sizes_.find(token->second);
    if (known != sizes_.end()) return known->second;
  }
  noteUnrecorded("sizeof type \"" + std::get<1>(type) + "\"");
  return 0;
}

kj::Maybe<capnp::AnyPointer::Reader> RecordedDebugger::exact(uint16_t method,
                                                             capnp::AnyPointer::Reader params) {
  auto key = std::make_pair(method, canonical(params));
  auto it = exact_.find(key);
  if (it == exact_.end()) return nullptr;
  size_t& next = exactNext_[key];
  const record::DebuggerCall::Reader& call = calls_[it->second[next]];
  if (next + 1 < it->second.size()) ++next;  // the last answer stands for later requests
  if (call.hasFailure()) throwRecorded(call.getFailure());
  return call.getResults();
}

void RecordedDebugger::noteUnrecorded(const std::string& what) {
  ++counts_.unrecorded;
  if (unrecordedExamples_.size() < 5) unrecordedExamples_.push_back(what);
}

}  // namespace mqd::replay
