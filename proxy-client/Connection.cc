#include "Connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/utsname.h>

#include "DebuggerService.h"
#include "Endpoint.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "mqs_interface.h"

namespace mqd::client {
namespace {

constexpr uint64_t kTraversalLimitWords = 64ull << 20;

capnp::ReaderOptions readerOptions() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kTraversalLimitWords;
  return options;
}

wire::Proxy::Client bootstrapProxy(capnp::RpcSystem<capnp::rpc::twoparty::VatId>& rpc) {
  capnp::MallocMessageBuilder message(8);
  auto vatId = message.initRoot<capnp::rpc::twoparty::VatId>();
  vatId.setSide(capnp::rpc::twoparty::Side::SERVER);
  return rpc.bootstrap(vatId).castAs<wire::Proxy>();
}

std::string machine() {
  struct utsname u;
  return ::uname(&u) == 0 ? u.machine : "unknown";
}

}  // namespace

int classifyRpcFailure(const kj::Exception& e, std::string* detail) {
  int fallback = e.getType() == kj::Exception::Type::DISCONNECTED ? MQD_PROXY_ERR_SESSION_LOST
                                                                   : MQD_PROXY_ERR_PROTOCOL;
  return fromWireException(e, fallback, detail);
}

Connection::Connection(kj::Own<kj::AsyncIoStream> stream, std::string endpoint)
    : endpoint_(std::move(endpoint)),
      stream_(kj::mv(stream)),
      network_(*stream_, capnp::rpc::twoparty::Side::CLIENT, readerOptions()),
      rpc_(capnp::makeRpcClient(network_)),
      proxy_(bootstrapProxy(rpc_)) {
  tasks_.add(network_.onDisconnect().then([this]() {
    markBroken(MQD_PROXY_ERR_SESSION_LOST, "the server closed the connection");
  }));
}

Connection::~Connection() noexcept(false) {}

void Connection::markBroken(int code, const std::string& why) {
  if (brokenCode_ != 0) return;
  brokenCode_ = code;
  brokenReason_ = why;
  MQD_LOG(Info, "connection to %s unusable: %s", endpoint_.c_str(), why.c_str());
  if (current) {
    current->fail(code, why);
    current = nullptr;
  }
}

kj::Promise<kj::Own<Connection>> Connection::open(kj::AsyncIoContext& io,
                                                  const ClientConfig& config,
                                                  DebuggerSide& side) {
  Endpoint endpoint;
  try {
    endpoint = Endpoint::parse(config.server);
  } catch (const std::invalid_argument& e) {
    return toWireException(MQD_PROXY_ERR_UNREACHABLE,
                           std::string(e.what()) + " in MQD_PROXY_SERVER");
  }
  std::string where = endpoint.toString();
  auto connected =
      io.provider->getNetwork()
          .parseAddress(endpoint.toKjAddress())
          .then([](kj::Own<kj::NetworkAddress> address) {
            return address->connect().attach(kj::mv(address));
          })
          .then(
              [where, tcp = endpoint.kind == Endpoint::Kind::Tcp](
                  kj::Own<kj::AsyncIoStream> stream) {
                if (tcp) {
                  // Small request, small reply, over and over: Nagle's algorithm would hold
                  // each one back for the peer's delayed ACK.
                  int one = 1;
                  stream->setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                }
                return kj::heap<Connection>(kj::mv(stream), where);
              },
              [where](kj::Exception&& e) -> kj::Own<Connection> {
                throw toWireException(MQD_PROXY_ERR_UNREACHABLE,
                                      where + ": " + e.getDescription().cStr() +
                                          " (is mqd-proxy-server running there? set "
                                          "MQD_PROXY_SERVER)");
              });
  std::string dll = config.dll;
  wire::CachePolicy cache = config.cache;
  bool compress = config.compress == ClientConfig::Compress::On ||
                  (config.compress == ClientConfig::Compress::Auto &&
                   endpoint.kind == Endpoint::Kind::Tcp);
  auto opened = connected.then([&side, dll, where, cache, compress](kj::Own<Connection> c) {
    c->compress_ = compress;
    auto request = c->proxy_.openSessionRequest();
    auto options = request.initOptions();
    options.setProtocolVersion(wire::PROTOCOL_VERSION);
    options.setDll(dll);
    options.setClientArch(machine());
    options.setClientTaddrWidth(static_cast<uint8_t>(sizeof(mqs_taddr_t)));
    options.setCachePolicy(cache);
    options.setCompress(compress);
    request.setDebugger(kj::heap<DebuggerService>(*c, side));
    return request.send().then(
        [c = kj::mv(c)](capnp::Response<wire::Proxy::OpenSessionResults>&& response) mutable {
          c->session_ = response.getSession();
          auto d = response.getDll();
          c->dll_.path = d.getPath();
          c->dll_.versionString = d.getVersionString();
          c->dll_.compatibility = d.getCompatibility();
          c->dll_.taddrWidth = d.getTaddrWidth();
          for (auto name : d.getEntryPoints()) c->dll_.entryPoints.insert(name);
          c->dll_.buildId = d.getBuildId();
          return kj::mv(c);
        },
        [where](kj::Exception&& e) -> kj::Own<Connection> {
          std::string detail;
          int code = fromWireException(e, MQD_PROXY_ERR_SESSION_REFUSED, &detail);
          if (code == MQD_PROXY_ERR_SESSION_LOST) code = MQD_PROXY_ERR_SESSION_REFUSED;
          throw toWireException(code, where + ": " + detail);
        });
  });
  auto ms = config.timeout.count();
  return io.provider->getTimer().timeoutAfter(ms * kj::MILLISECONDS, kj::mv(opened))
      .catch_([where, ms](kj::Exception&& e) -> kj::Own<Connection> {
        std::string detail;
        int code = fromWireException(e, 0, &detail);
        if (code != 0) throw kj::mv(e);
        if (e.getType() == kj::Exception::Type::OVERLOADED ||
            detail.find("timed out") != std::string::npos) {
          throw toWireException(MQD_PROXY_ERR_TIMEOUT,
                                where + ": no session within " + std::to_string(ms) + " ms");
        }
        throw toWireException(MQD_PROXY_ERR_UNREACHABLE, where + ": " + detail);
      });
}

}  // namespace mqd::client
