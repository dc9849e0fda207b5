#include "ProxyService.h"

#include <capnp/message.h>

#include <sys/random.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "LocalProcess.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "SessionBoard.h"
#include "SessionService.h"
#include "VendorDll.h"
#include "mqs_interface.h"

#ifndef MQD_VERSION
#define MQD_VERSION "unknown"
#endif

namespace mqd::server {
namespace {

// A random, non-zero secret for a session ticket.
uint64_t newTicketKey() {
  uint64_t key = 0;
  while (key == 0) {
    if (::getrandom(&key, sizeof key, 0) != static_cast<ssize_t>(sizeof key)) key = 0;
  }
  return key;
}

}  // namespace

const char* ProxyService::architecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__i386__)
  return "i686";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__powerpc64__)
  return "ppc64";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv)
  return "riscv64";
#else
  return "unknown";
#endif
}

kj::Promise<void> ProxyService::describe(DescribeContext context) {
  auto server = context.getResults().initServer();
  server.setVersion(MQD_VERSION);
  server.setArch(architecture());
  server.setBigEndian(__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
  server.setPointerSize(static_cast<uint8_t>(sizeof(void*)));
  auto paths = config_.dlls->paths();
  auto list = server.initDlls(static_cast<unsigned>(paths.size()));
  for (size_t i = 0; i < paths.size(); ++i) list.set(static_cast<unsigned>(i), paths[i]);
  server.setProtocolVersion(wire::PROTOCOL_VERSION);
  server.setAnyDll(config_.dlls->open());
  return kj::READY_NOW;
}

kj::Promise<void> ProxyService::openSession(OpenSessionContext context) {
  auto params = context.getParams();
  auto options = params.getOptions();
  auto refuse = [&context](const std::string& why) {
    auto failure = context.getResults().initFailure();
    failure.setCode(MQD_PROXY_ERR_SESSION_REFUSED);
    failure.setDetail(why);
    return kj::READY_NOW;
  };
  if (options.getProtocolVersion() != wire::PROTOCOL_VERSION) {
    return refuse("client speaks protocol " + std::to_string(options.getProtocolVersion()) +
                  ", server speaks " + std::to_string(wire::PROTOCOL_VERSION) +
                  "; use matching mqd-proxy versions");
  }
  if (sessionOpened_) return refuse("this connection already has a session");
  std::unique_ptr<VendorDll> dll;
  try {
    DllChoice chosen = config_.dlls->select(options.getDll());
    dll = VendorDll::load(chosen.path, chosen.fd);
  } catch (const std::exception& e) {
    MQD_LOG(Warn, "session refused: %s", e.what());
    return refuse(e.what());
  }
  sessionOpened_ = true;
  SessionConfig session;
  session.debugger.policy = options.getCachePolicy();
  session.debugger.compress = options.getCompress();
  session.debugger.blockSize = config_.blockSize;
  session.debugger.aroundBytes = config_.readAround;
  session.debugger.lookupDiscovery = config_.lookupDiscovery;
  session.debugger.refreshAheadBytes = refreshAheadBytesFor(config_.traversalLimitWords);
  // A recorded session's replay has only the debugger's answers: nothing read on this host.
  session.debugger.nodeMemory = config_.nodeMemory && !options.getRecorded();
  session.stateDir = config_.stateDir;
  MQD_LOG(Info, "session opened: %s for a %s debugger (cache policy %s%s%s)",
          dll->path().c_str(), options.getClientArch().cStr(),
          session.debugger.policy == wire::CachePolicy::OFF    ? "off"
          : session.debugger.policy == wire::CachePolicy::CALL ? "call"
                                                               : "epoch",
          session.debugger.compress ? ", compressed" : "",
          config_.nodeMemory && options.getRecorded() ? "; recorded: no memory read on this host"
                                                      : "");
  auto results = context.getResults();
  KJ_IF_MAYBE(slot, config_.slot) {
    copyField(slot->dll, sizeof slot->dll, dll->path());
    copyField(slot->client, sizeof slot->client, options.getClientArch());
    slot->key = newTicketKey();
    results.initTicket().setConnection(slot->connection);
    results.getTicket().setKey(slot->key);
  }
  for (auto r : options.getResumeInfos()) {
    session.resumeInfos.push_back({r.getKind(), r.getHandle(), r.getInfo()});
  }
  dll->describe(results.initDll());
  results.setTakesInfoTokens(true);
  results.setReadsOnNode(session.debugger.nodeMemory);
  results.setRefreshAheadBytes(session.debugger.refreshAheadBytes);
  if (session.debugger.nodeMemory) {
    std::map<int, std::vector<LocalProcess::ProofAddresses>> ranks =
        LocalProcess::proofAddressesHere();
    auto list = results.initNodeRanks(static_cast<unsigned>(ranks.size()));
    size_t count = 0;
    for (const auto& [rank, addresses] : ranks) count += addresses.size();
    auto processes = results.initNodeProcesses(static_cast<unsigned>(count));
    unsigned i = 0, p = 0;
    std::string named;
    for (const auto& [rank, addresses] : ranks) {
      list.set(i++, rank);
      if (i <= 16) named += (i > 1 ? " " : "") + std::to_string(rank);
      for (const LocalProcess::ProofAddresses& at : addresses) {
        auto process = processes[p++];
        process.setRank(rank);
        process.setRandom(at.random);
        process.setStack(at.stack);
        session.debugger.listedStacks[at.pid] = at.stack;
      }
    }
    MQD_LOG(Info, "this host runs %zu MPI rank(s) of this user: %s%s", ranks.size(),
            ranks.empty() ? "none" : named.c_str(), ranks.size() > 16 ? " ..." : "");
  }
  results.setSession(
      kj::heap<SessionService>(std::move(dll), params.getDebugger(), output_, session,
                               metrics_));
  return kj::READY_NOW;
}

namespace {

// How long postMortem waits for the supervisor to reap a worker whose connection broke when
// the client names no wait (mqd.capnp, Proxy.postMortem), and how often it looks.
constexpr uint32_t kPostMortemDefaultWaitMs = 1500;
constexpr int kPostMortemPollMs = 10;

}  // namespace

kj::Promise<void> ProxyService::postMortem(PostMortemContext context) {
  auto params = context.getParams();
  auto ticket = params.getTicket();
  uint32_t waitMs = params.getWaitMs() != 0 ? params.getWaitMs() : kPostMortemDefaultWaitMs;
  return answerPostMortem(context, ticket.getConnection(), ticket.getKey(),
                          timer_.now() + waitMs * kj::MILLISECONDS);
}

kj::Promise<void> ProxyService::answerPostMortem(PostMortemContext context, uint64_t connection,
                                                 uint64_t key, kj::TimePoint deadline) {
  kj::Maybe<const SessionBoard::Slot&> found;
  KJ_IF_MAYBE(board, config_.board) { found = board->find(connection, key); }
  KJ_IF_MAYBE(s, found) {
    bool ended = s->state.load() == 2;
    if (!ended && timer_.now() < deadline) {
      // The supervisor marks the slot ended when it reaps the worker: look again shortly.
      return timer_.afterDelay(kPostMortemPollMs * kj::MILLISECONDS)
          .then([this, context, connection, key, deadline]() mutable {
            return answerPostMortem(context, connection, key, deadline);
          });
    }
    auto report = context.getResults().initReport();
    report.setKnown(true);
    report.setEnded(ended);
    report.setWorker(s->worker);
    report.setHow(std::string(s->exit, strnlen(s->exit, sizeof s->exit)));
    report.setDll(std::string(s->dll, strnlen(s->dll, sizeof s->dll)));
    report.setLastCall(std::string(s->lastCall, strnlen(s->lastCall, sizeof s->lastCall)));
  } else {
    context.getResults().initReport().setKnown(false);
  }
  return kj::READY_NOW;
}

kj::Promise<void> ProxyService::stats(StatsContext context) {
  std::vector<const SessionBoard::Slot*> slots;
  KJ_IF_MAYBE(board, config_.board) {
    // Every session but the asker's own connection.
    const SessionBoard::Slot* own = nullptr;
    KJ_IF_MAYBE(slot, config_.slot) { own = slot; }
    board->forEach([&](const SessionBoard::Slot& s) {
      if (&s != own) slots.push_back(&s);
    });
  }
  auto list = context.getResults().initSessions(static_cast<unsigned>(slots.size()));
  for (size_t i = 0; i < slots.size(); ++i) {
    const SessionBoard::Slot& s = *slots[i];
    auto out = list[static_cast<unsigned>(i)];
    out.setConnection(s.connection);
    out.setWorker(s.worker);
    out.setState(s.state.load() == 1 ? "open" : "ended");
    out.setDll(std::string(s.dll, strnlen(s.dll, sizeof s.dll)));
    out.setClient(std::string(s.client, strnlen(s.client, sizeof s.client)));
    out.setStartedMs(s.startedMs);
    out.setEndedMs(s.endedMs);
    out.setLastCall(std::string(s.lastCall, strnlen(s.lastCall, sizeof s.lastCall)));
    out.setExit(std::string(s.exit, strnlen(s.exit, sizeof s.exit)));
    int clientCount = 0;
    for (const auto& n : s.clientCounterNames) clientCount += n[0] != '\0';
    auto counters = out.initCounters(SessionBoard::kCounters + clientCount);
    for (int c = 0; c < SessionBoard::kCounters; ++c) {
      counters[static_cast<unsigned>(c)].setName(countName(static_cast<Count>(c)));
      counters[static_cast<unsigned>(c)].setValue(s.counters[c].load());
    }
    int k = SessionBoard::kCounters;
    for (int c = 0; c < 16; ++c) {
      if (s.clientCounterNames[c][0] == '\0') continue;
      counters[static_cast<unsigned>(k)].setName(
          std::string("client.") + std::string(s.clientCounterNames[c],
                                                strnlen(s.clientCounterNames[c], 32)));
      counters[static_cast<unsigned>(k++)].setValue(s.clientCounters[c].load());
    }
  }
  return kj::READY_NOW;
}

}  // namespace mqd::server
