#include "Worker.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <unistd.h>

#include "CountingStream.h"
#include "DisconnectWatchdog.h"
#include "DllOutput.h"
#include "Log.h"
#include "ProxyService.h"

namespace mqd::server {
namespace {

// Replies are small except fetched memory; 64 Mi words bounds what a peer can make us parse.
constexpr uint64_t kTraversalLimitWords = 64ull << 20;

}  // namespace

int runWorker(int fd, const WorkerConfig& config) {
  try {
    Metrics::attach(config.slot);
    DllOutput output;
    logMoveOffStderr(output.originalStderr());
    // Watches its own duplicate of fd, so it outlives the stream below without harm.
    DisconnectWatchdog watchdog(fd, std::chrono::milliseconds(config.disconnectGraceMs),
                                config.slot);
    auto io = kj::setupAsyncIo();
    CountingStream stream(
        io.lowLevelProvider->wrapSocketFd(fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP),
        [](size_t in, size_t out) {
          if (in != 0) Metrics::add(Count::WireBytesIn, in);
          if (out != 0) Metrics::add(Count::WireBytesOut, out);
        });
    capnp::ReaderOptions readerOptions;
    readerOptions.traversalLimitInWords = kTraversalLimitWords;
    capnp::TwoPartyVatNetwork network(stream, capnp::rpc::twoparty::Side::SERVER,
                                      readerOptions);
    auto rpc = capnp::makeRpcServer(
        network, kj::heap<ProxyService>(config, &output, io.provider->getTimer()));
    network.onDisconnect().wait(io.waitScope);
    MQD_LOG(Debug, "client disconnected");
    return 0;
  } catch (const kj::Exception& e) {
    MQD_LOG(Error, "worker failed: %s", e.getDescription().cStr());
  } catch (const std::exception& e) {
    MQD_LOG(Error, "worker failed: %s", e.what());
  }
  return 1;
}

}  // namespace mqd::server
