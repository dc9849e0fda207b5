#include "SessionRecorder.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "CapnpCompat.h"
#include "Log.h"

#ifndef MQD_VERSION
#define MQD_VERSION "unknown"
#endif

namespace mqd::client {
namespace {

void setFailure(record::Failure::Builder out, const kj::Exception& e) {
  out.setType(static_cast<uint8_t>(e.getType()));
  out.setDescription(e.getDescription());
}

// Room for a copy of `content` and the entry around it, in one segment when it is small.
unsigned firstSegment(capnp::AnyPointer::Reader content) {
  uint64_t words = content.targetSize().wordCount + 32;
  return static_cast<unsigned>(std::min<uint64_t>(words, 1u << 20));
}

int64_t unixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Forwards every Session call to the server's Session and records request and results.
class SessionRecorder::SessionTap final : public capnp::Capability::Server {
 public:
  SessionTap(SessionRecorder& recorder, capnp::Capability::Client target)
      : recorder_(&recorder), target_(kj::mv(target)) {}

  DispatchCallResult dispatchCall(uint64_t interfaceId, uint16_t methodId,
                                  capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> context)
      override {
    auto params = context.getParams();
    uint64_t id = recorder_->sessionCall(methodId, params);
    auto request =
        capnp_compat::typelessRequest(target_, interfaceId, methodId, params.targetSize());
    request.set(params);
    context.releaseParams();
    SessionRecorder* recorder = recorder_;
    auto done = request.send().then(
        [recorder, id, methodId, context](capnp::Response<capnp::AnyPointer>&& response) mutable {
          capnp::AnyPointer::Reader results = response;
          recorder->sessionReturn(id, methodId, &results, nullptr);
          context.getResults(results.targetSize()).set(results);
        },
        [recorder, id, methodId](kj::Exception&& e) {
          recorder->sessionReturn(id, methodId, nullptr, &e);
          kj::throwFatalException(kj::mv(e));
        });
    return {kj::mv(done), false};
  }

 private:
  SessionRecorder* recorder_;
  capnp::Capability::Client target_;
};

// Dispatches every Debugger call to the shim's DebuggerService in place and records request
// and answer.
class SessionRecorder::DebuggerTap final : public capnp::Capability::Server {
 public:
  DebuggerTap(SessionRecorder& recorder, kj::Own<wire::Debugger::Server> service)
      : recorder_(&recorder), service_(kj::mv(service)) {}

  DispatchCallResult dispatchCall(uint64_t interfaceId, uint16_t methodId,
                                  capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> context)
      override {
    kj::Own<capnp::MallocMessageBuilder> entry =
        recorder_->beginDebuggerCall(methodId, context.getParams());
    bool streaming = false;
    // A method that throws before it returns a promise fails the call like a rejected one.
    auto answered = kj::evalNow([&]() {
      auto result = service_->dispatchCall(interfaceId, methodId, context);
      streaming = result.isStreaming;
      return kj::mv(result.promise);
    });
    if (entry.get() == nullptr) return {kj::mv(answered), streaming};
    SessionRecorder* recorder = recorder_;
    auto shared = kj::refcounted<Pending>(kj::mv(entry));
    auto done = answered.then(
        [recorder, shared = kj::addRef(*shared), context]() mutable {
          capnp::AnyPointer::Reader results = context.getResults().asReader();
          recorder->endDebuggerCall(*shared->entry, &results, nullptr);
        },
        [recorder, shared = kj::addRef(*shared)](kj::Exception&& e) mutable {
          recorder->endDebuggerCall(*shared->entry, nullptr, &e);
          kj::throwFatalException(kj::mv(e));
        });
    return {kj::mv(done), streaming};
  }

 private:
  // The entry being built, shared by the two continuations.
  struct Pending : public kj::Refcounted {
    explicit Pending(kj::Own<capnp::MallocMessageBuilder> e) : entry(kj::mv(e)) {}
    kj::Own<capnp::MallocMessageBuilder> entry;
  };

  SessionRecorder* recorder_;
  kj::Own<wire::Debugger::Server> service_;
};

SessionRecorder::SessionRecorder(std::string path) : path_(std::move(path)) {}

SessionRecorder::~SessionRecorder() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!writer_) return;
  try {
    writer_->flush();
    MQD_LOG(Info, "recording %s written: %llu bytes", path_.c_str(),
            static_cast<unsigned long long>(writer_->bytesWritten()));
  } catch (const RecordFileError& e) {
    stop(e.what());
  }
}

void SessionRecorder::stop(const std::string& why) {
  MQD_LOG(Warn, "recording stopped (MQD_PROXY_RECORD): %s; the session goes on unrecorded",
          why.c_str());
  writer_.reset();
  active_ = false;
}

void SessionRecorder::add(capnp::MessageBuilder& entry, bool flushNow) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started_);
  entry.getRoot<record::Entry>().setMicros(static_cast<uint64_t>(micros.count()));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!writer_) return;
  try {
    writer_->add(entry);
    if (flushNow || writer_->pendingMessages() >= kFlushEntries ||
        writer_->pendingBytes() >= kFlushBytes) {
      writer_->flush();
    }
  } catch (const std::exception& e) {
    stop(e.what());
  }
}

// ---- opening ----

kj::Promise<void> SessionRecorder::describeServer(wire::Proxy::Client& proxy) {
  if (!active_) return kj::READY_NOW;
  return proxy.describeRequest()
      .send()
      .then([this](capnp::Response<wire::Proxy::DescribeResults>&& response) {
        auto copy = kj::heap<capnp::MallocMessageBuilder>();
        copy->setRoot(response.getServer());
        server_ = kj::mv(copy);
      })
      .catch_([](kj::Exception&&) {});  // the header then goes without it
}

wire::Debugger::Client SessionRecorder::tapDebugger(kj::Own<wire::Debugger::Server> service) {
  capnp::Capability::Client tap = kj::heap<DebuggerTap>(*this, kj::mv(service));
  return tap.castAs<wire::Debugger>();
}

wire::Session::Client SessionRecorder::sessionOpened(const std::string& endpoint,
                                                     wire::SessionOptions::Reader options,
                                                     wire::DllDescription::Reader dll,
                                                     wire::Session::Client session) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!active_) return session;
    if (!writer_) {
      try {
        writer_ = std::make_unique<RecordWriter>(path_);
        capnp::MallocMessageBuilder message;
        auto header = message.initRoot<record::Header>();
        header.setFormatVersion(record::FORMAT_VERSION);
        header.setProtocolVersion(wire::PROTOCOL_VERSION);
        header.setShimVersion(MQD_VERSION);
        header.setStartedMs(unixMillis());
        header.setEndpoint(endpoint);
        if (server_.get() != nullptr) {
          header.setServer(server_->getRoot<wire::ServerDescription>().asReader());
        }
        header.setOptions(options);
        header.setDll(dll);
        writer_->add(message);
        writer_->flush();
        MQD_LOG(Info, "recording the session to %s", path_.c_str());
      } catch (const std::exception& e) {
        stop(e.what());
        return session;
      }
    }
  }
  capnp::MallocMessageBuilder message;
  auto opened = message.initRoot<record::Entry>().initSessionOpened();
  opened.setEndpoint(endpoint);
  opened.setOptions(options);
  opened.setDll(dll);
  add(message, true);
  capnp::Capability::Client tap = kj::heap<SessionTap>(*this, kj::mv(session));
  return tap.castAs<wire::Session>();
}

// ---- entries ----

uint64_t SessionRecorder::sessionCall(uint16_t method, capnp::AnyPointer::Reader params) {
  if (!active_) return 0;
  uint64_t id = nextCallId_++;
  capnp::MallocMessageBuilder message(firstSegment(params));
  auto call = message.initRoot<record::Entry>().initSessionCall();
  call.setId(id);
  call.setMethod(method);
  call.getParams().set(params);
  add(message);
  return id;
}

void SessionRecorder::sessionReturn(uint64_t id, uint16_t method,
                                    const capnp::AnyPointer::Reader* results,
                                    const kj::Exception* failure) {
  if (id == 0 || !active_) return;
  capnp::MallocMessageBuilder message(results ? firstSegment(*results) : 64u);
  auto ret = message.initRoot<record::Entry>().initSessionReturn();
  ret.setId(id);
  ret.setMethod(method);
  if (results != nullptr) ret.getResults().set(*results);
  if (failure != nullptr) setFailure(ret.initFailure(), *failure);
  add(message);
}

kj::Own<capnp::MallocMessageBuilder> SessionRecorder::beginDebuggerCall(
    uint16_t method, capnp::AnyPointer::Reader params) {
  if (!active_) return {};
  auto message = kj::heap<capnp::MallocMessageBuilder>(firstSegment(params));
  auto call = message->initRoot<record::Entry>().initDebuggerCall();
  call.setMethod(method);
  call.getParams().set(params);
  return message;
}

void SessionRecorder::endDebuggerCall(capnp::MallocMessageBuilder& entry,
                                      const capnp::AnyPointer::Reader* results,
                                      const kj::Exception* failure) {
  if (!active_) return;
  auto call = entry.getRoot<record::Entry>().getDebuggerCall();
  if (results != nullptr) call.getResults().set(*results);
  if (failure != nullptr) setFailure(call.initFailure(), *failure);
  add(entry);
}

void SessionRecorder::apiCall(EntryPoint entryPoint, int rc) {
  if (!active_) return;
  capnp::MallocMessageBuilder message(64);
  auto call = message.initRoot<record::Entry>().initApiCall();
  call.setEntryPoint(nameOf(entryPoint));
  call.setRc(rc);
  // A refresh is where a debugger shows what it found: keep everything up to it.
  add(message, entryPoint == EntryPoint::update_communicator_list);
}

void SessionRecorder::labelProcess(uint64_t token) {
  const char* label = std::getenv(kLabelVariable);
  if (!active_ || label == nullptr || label[0] == '\0') return;
  capnp::MallocMessageBuilder message(64);
  auto entry = message.initRoot<record::Entry>().initProcessLabel();
  entry.setProcess(token);
  entry.setLabel(label);
  add(message);
}

}  // namespace mqd::client
