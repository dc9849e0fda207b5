#include "Worker.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <unistd.h>

#include "CountingStream.h"
#include "DllOutput.h"
#include "Log.h"
#include "ProxyService.h"

namespace mqd::server {

capnp::ReaderOptions connectionReaderOptions() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kMaxMessageWords;
  options.nestingLimit = kMaxMessageNesting;
  return options;
}

kj::Promise<void> serveConnection(kj::AsyncIoStream& stream, const WorkerConfig& config,
                                  DllOutput* output) {
  auto network = kj::heap<capnp::TwoPartyVatNetwork>(stream, capnp::rpc::twoparty::Side::SERVER,
                                                     connectionReaderOptions());
  auto rpc = kj::heap(capnp::makeRpcServer(*network, kj::heap<ProxyService>(config, output)));
  auto disconnected = network->onDisconnect();
  // An attachment outlives the promise it is attached to: the RPC system (and with it every
  // capability and session) goes before the network it uses.
  return disconnected.attach(kj::mv(rpc)).attach(kj::mv(network));
}

int runWorker(int fd, const WorkerConfig& config) {
  try {
    Metrics::attach(config.slot);
    DllOutput output;
    logMoveOffStderr(output.originalStderr());
    auto io = kj::setupAsyncIo();
    CountingStream stream(
        io.lowLevelProvider->wrapSocketFd(fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP),
        [](size_t in, size_t out) {
          if (in != 0) Metrics::add(Count::WireBytesIn, in);
          if (out != 0) Metrics::add(Count::WireBytesOut, out);
        });
    serveConnection(stream, config, &output).wait(io.waitScope);
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
