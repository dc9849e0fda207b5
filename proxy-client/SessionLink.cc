#include "SessionLink.h"

#include <optional>

#include "Log.h"
#include "PostMortem.h"

namespace mqd::client {

SessionLink::SessionLink(const ClientConfig& config, ClientCounters& counters)
    : config_(config), counters_(counters) {}

SessionLink::~SessionLink() {
  if (!loop_) return;
  try {
    loop_->run([this]() { connection_ = nullptr; });
  } catch (...) {
  }
  loop_.reset();
}

SessionLink::Opened SessionLink::open(DebuggerSide& side, SessionRecorder* recorder) {
  if (!loop_) loop_ = std::make_unique<EventLoopThread>();
  std::optional<ProxyError> refused;
  loop_->run([&]() {
    connection_ = nullptr;  // the old connection, if any, is done with
    return Connection::open(loop_->io(), config_, side, counters_, recorder)
        .then([this, &refused](Connected connected) {
          if (connected.is<ProxyError>()) {
            refused = connected.get<ProxyError>();
          } else {
            connection_ = kj::mv(connected.get<kj::Own<Connection>>());
          }
        });
  });
  if (refused) throw *refused;
  Opened opened;
  loop_->run([&]() {
    opened.dll = connection_->dll();
    opened.takesInfoTokens = connection_->takesInfoTokens();
    opened.readsOnNode = connection_->readsOnNode();
    opened.nodeRanks = connection_->nodeRanks();
    opened.nodeProcesses = connection_->nodeProcesses();
    opened.refreshAheadBytes = connection_->refreshAheadBytes();
    compress_ = connection_->compress();
    ticket_ = connection_->ticket();
  });
  return opened;
}

void SessionLink::abandon(const std::shared_ptr<PendingCall>& pending) {
  loop_->run([&]() {
    connection_->markBroken(MQD_PROXY_ERR_SESSION_LOST,
                            std::string("abandoned after ") + pending->entryPoint() +
                                " timed out");
    connection_->forget(pending);
  });
}

void SessionLink::drain(std::shared_ptr<PendingCall> pending) {
  if (!pending->serve(config_.timeout) && pending->errorCode() == MQD_PROXY_ERR_TIMEOUT) {
    abandon(pending);
  }
  loop_->destroyOnLoop(pending->takeReplyMessage());
}

void SessionLink::failLost(int code, const std::string& detail, const char* entryPoint) {
  std::string again = "; the next call re-establishes the session";
  if (ticket_.key == 0) throw ProxyError(code, detail + again);
  // A crash of the vendor DLL and a network failure look the same from here: ask the server,
  // on a new connection, how the worker ended. Bounded like every call, by the timeout: the
  // server waits for a worker going away for half of it (Connection::postMortem), however
  // slowly a loaded node reaps it.
  auto wait = config_.timeout;
  PostMortem pm;
  try {
    pm = loop_->run([&]() -> kj::Promise<PostMortem> {
      // Over ssh the --stdio server is gone with the connection: it said how its worker
      // ended on ssh's stderr.
      if (connection_) {
        KJ_IF_MAYBE(said, connection_->transportPostMortem(wait)) { return kj::mv(*said); }
      }
      return Connection::postMortem(loop_->io(), config_, ticket_, wait);
    });
  } catch (const kj::Exception& e) {
    throw ProxyError(code, detail + " (the server cannot be asked why: " +
                               e.getDescription().cStr() + ")" + again);
  }
  if (!pm.known) throw ProxyError(code, detail + again);
  if (!pm.ended) {
    throw ProxyError(code, detail + " (the server's worker " + std::to_string(pm.worker) +
                               " is still running: the network failed)" + again);
  }
  if (pm.how == "exit 0") {
    throw ProxyError(code, detail + " (the server's worker " + std::to_string(pm.worker) +
                               " saw the connection end too)" + again);
  }
  std::string how = pm.how.rfind("SIG", 0) == 0 ? "was killed by " + pm.how : "ended (" + pm.how + ")";
  throw ProxyError(MQD_PROXY_ERR_WORKER_DIED,
                   "the server's worker " + std::to_string(pm.worker) + " " + how +
                       " in vendor DLL " + (pm.dll.empty() ? "(none loaded)" : pm.dll) +
                       " during " + (pm.lastCall.empty() ? entryPoint : pm.lastCall) +
                       "; other sessions are unaffected" + again);
}

}  // namespace mqd::client
