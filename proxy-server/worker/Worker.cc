#include "Worker.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <unistd.h>

#include <algorithm>

#include "CountingStream.h"
#include "CpuWatchdog.h"
#include "DisconnectWatchdog.h"
#include "DllOutput.h"
#include "IdleTimeout.h"
#include "Log.h"
#include "LoggingMessageStream.h"
#include "ProxyService.h"

namespace mqd::server {

capnp::ReaderOptions connectionReaderOptions(const WorkerConfig& config) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = config.traversalLimitWords;
  options.nestingLimit = kMaxMessageNesting;
  return options;
}

uint32_t refreshAheadBytesFor(uint64_t traversalLimitWords) {
  // The process's own blocks, the lists naming every block and the rest of the request: 8 MiB
  // is far more than those lists take.
  constexpr uint64_t kBeside = uint64_t(wire::MAX_BLOCKS_AHEAD_BYTES) + (8u << 20);
  uint64_t message = traversalLimitWords * sizeof(capnp::word);
  uint64_t room = message > kBeside ? message - kBeside : 0;
  return static_cast<uint32_t>(std::clamp<uint64_t>(room, wire::MAX_REFRESH_AHEAD_BYTES,
                                                    wire::REFRESH_AHEAD_BYTES_CEILING));
}

kj::Promise<void> serveConnection(kj::AsyncIoStream& stream, const WorkerConfig& config,
                                  kj::Maybe<DllOutput&> output, kj::Timer& timer,
                                  Metrics& metrics) {
  auto messages = kj::heap<capnp::AsyncIoMessageStream>(stream);
  // Says why an oversized message ends the session.
  auto logged = kj::heap<LoggingMessageStream>(*messages);
  auto network = kj::heap<capnp::TwoPartyVatNetwork>(*logged, capnp::rpc::twoparty::Side::SERVER,
                                                     connectionReaderOptions(config));
  auto rpc = kj::heap(
      capnp::makeRpcServer(*network, kj::heap<ProxyService>(config, output, timer, metrics)));
  auto disconnected = network->onDisconnect();
  // An attachment outlives the promise it is attached to, and attachments go last first: the
  // RPC system (and with it every capability and session) goes before the network it uses,
  // the network before the message streams under it.
  return disconnected.attach(kj::mv(rpc)).attach(kj::mv(network)).attach(kj::mv(logged))
      .attach(kj::mv(messages));
}

int runWorker(int fd, const WorkerConfig& config) {
  try {
    Metrics metrics(config.slot);
    CpuWatchdog::setLimit(config.dllCpuLimitS);
    DllOutput output;
    logMoveOffStderr(output.originalStderr());
    // Watches its own duplicate of fd, so it outlives the stream below without harm.
    DisconnectWatchdog watchdog(fd, std::chrono::milliseconds(config.disconnectGraceMs),
                                config.slot);
    auto io = kj::setupAsyncIo();
    kj::Own<kj::AsyncIoStream> admitted = admit(io, fd, *config.admission);
    if (admitted.get() == nullptr) return 0;  // refused or dropped, and logged: no session was created
    kj::Timer& timer = io.provider->getTimer();
    IdleTimeout idle(timer, (config.idleTimeoutS > 0 ? config.idleTimeoutS : 1) * kj::SECONDS);
    CountingStream stream(kj::mv(admitted), [&idle, &metrics](size_t in, size_t out) {
      if (in != 0) metrics.add(Count::WireBytesIn, in);
      if (out != 0) metrics.add(Count::WireBytesOut, out);
      idle.touch();
    });
    bool idled = false;
    kj::Promise<void> end = serveConnection(stream, config, &output, timer, metrics);
    if (config.idleTimeoutS > 0) {
      end = end.exclusiveJoin(idle.expired().then([&idled]() { idled = true; }));
    }
    end.wait(io.waitScope);
    if (idled) {
      MQD_LOG(Warn, "session idle for %d s (--idle-timeout): ending it", config.idleTimeoutS);
    } else {
      MQD_LOG(Debug, "client disconnected");
    }
    return 0;
  } catch (const kj::Exception& e) {
    MQD_LOG(Error, "worker failed: %s", e.getDescription().cStr());
  } catch (const std::exception& e) {
    MQD_LOG(Error, "worker failed: %s", e.what());
  }
  return 1;
}

}  // namespace mqd::server
