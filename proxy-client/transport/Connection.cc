#include "Connection.h"

#include <kj/one-of.h>
#include <algorithm>
#include <limits>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "AdmissionFirst.h"
#include "CountingStream.h"
#include "DebuggerService.h"
#include "DebuggerSide.h"
#include "Endpoint.h"
#include "Handshake.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "SessionRecorder.h"
#include "SlurmJob.h"
#include "StdioTransport.h"
#include "SocketTrust.h"
#include "TlsClient.h"
#include "TokenFile.h"
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

DllInfo DllInfo::from(wire::DllDescription::Reader d) {
  DllInfo info;
  info.path = d.getPath();
  info.versionString = d.getVersionString();
  info.compatibility = d.getCompatibility();
  info.taddrWidth = d.getTaddrWidth();
  for (auto name : d.getEntryPoints()) info.entryPoints.insert(name);
  info.buildId = d.getBuildId();
  return info;
}

void describeClient(wire::SessionOptions::Builder options, const std::string& dll) {
  options.setProtocolVersion(wire::PROTOCOL_VERSION);
  options.setDll(dll);
  options.setClientArch(machine());
  options.setClientTaddrWidth(static_cast<uint8_t>(sizeof(mqs_taddr_t)));
}

namespace {

// The stream, counting into `counters` when there are any.
kj::Own<kj::AsyncIoStream> counted(kj::Own<kj::AsyncIoStream> stream, ClientCounters* counters) {
  if (counters == nullptr) return stream;
  return kj::heap<CountingStream>(kj::mv(stream), [counters](size_t in, size_t out) {
    counters->wireBytesIn += in;
    counters->wireBytesOut += out;
  });
}

}  // namespace

Connection::Connection(kj::Own<kj::AsyncIoStream> stream, std::string endpoint,
                       ClientCounters* counters)
    : endpoint_(std::move(endpoint)),
      counters_(counters),
      stream_(counted(kj::mv(stream), counters)),
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
  for (const std::shared_ptr<PendingCall>& call : calls_) call->fail(code, why);
  calls_.clear();
}

namespace {

// Adds the deadline to a connection step and ends its chain in a Connected: the connection, or
// the failure raised on the way; when none was, a timeout is MQD_PROXY_ERR_TIMEOUT and any other
// failure MQD_PROXY_ERR_UNREACHABLE.
kj::Promise<Connected> withDeadline(kj::AsyncIoContext& io, kj::Promise<kj::Own<Connection>> step,
                                    const std::string& where, std::chrono::milliseconds timeout,
                                    std::shared_ptr<ChainFailure> failure) {
  auto ms = timeout.count();
  return io.provider->getTimer()
      .timeoutAfter(ms * kj::MILLISECONDS, kj::mv(step))
      .then(
          [](kj::Own<Connection> c) {
            Connected out;
            out.init<kj::Own<Connection>>(kj::mv(c));
            return out;
          },
          [where, ms, failure](kj::Exception&& e) {
            if (!failure->raised()) {
              if (e.getType() == kj::Exception::Type::OVERLOADED) {
                failure->raise(MQD_PROXY_ERR_TIMEOUT,
                               where + ": no answer within " + std::to_string(ms) + " ms");
              } else {
                failure->raise(MQD_PROXY_ERR_UNREACHABLE,
                               where + ": " + e.getDescription().cStr());
              }
            }
            Connected out;
            out.init<ProxyError>(failure->failureOf(e, MQD_PROXY_ERR_UNREACHABLE));
            return out;
          });
}

// ssh:// and slurm:JOB@NODE: ssh or srun (StdioTransport.h) runs the server with --stdio; the
// token, if any, is still presented (a --stdio server started with --token-file asks for it).
// A failure before the handshake completes is explained with what the launcher and the remote
// side wrote to stderr.
kj::Promise<kj::Own<Connection>> connectOverStdio(kj::AsyncIoContext& io,
                                                  const Endpoint& endpoint,
                                                  ClientCounters* counters,
                                                  const ClientConfig& config, std::string token,
                                                  std::shared_ptr<ChainFailure> failure) {
  std::string where = endpoint.toString();
  bool slurm = endpoint.kind == Endpoint::Kind::Slurm;
  if (slurm && endpoint.host.empty()) {
    // slurm:JOB whose nodes could not be listed as the sessions were made (SlurmJob.h): the
    // reason, asked again.
    try {
      slurmJobNodes(endpoint.job, config.timeout);
    } catch (const ProxyError& e) {
      return failure->raise(e.code(), where + ": " + e.what());
    }
    return failure->raise(MQD_PROXY_ERR_UNREACHABLE,
                          where + ": Slurm could not list the job's nodes as the session "
                                  "opened (it can now: try again)");
  }
  std::string launcher = endpoint.launcherName();
  std::string hint = slurm ? " (srun --jobid=" + endpoint.job + " --overlap must start a step "
                             "of the job: it must be yours and running, and mqd-proxy-server "
                             "installed on its nodes)"
                           : " (ssh runs with BatchMode=yes; MQD_PROXY_SSH_OPTIONS passes "
                             "options to it)";
  struct Holder {
    kj::Own<kj::AsyncIoStream> stream;
    StdioProcess* process = nullptr;
  };
  auto holder = kj::heap<Holder>();
  Holder* h = holder.get();
  kj::Own<StdioProcess> process;
  try {
    process = StdioProcess::start(io, endpoint, config, &h->stream);
  } catch (const ProxyError& e) {
    return failure->raise(e.code(), e.what());
  } catch (kj::Exception& e) {
    return kj::mv(e);
  }
  h->process = process.get();
  h->stream = h->stream.attach(kj::mv(process));
  // (evalNow: the launcher may already have gone, and a write can fail before any promise
  // exists.)
  auto handshake = kj::evalNow([&]() { return clientHandshake(*h->stream, token); });
  std::fill(token.begin(), token.end(), '\0');
  return handshake
      .then([h, where, counters, failure](HandshakeReply reply) -> kj::Own<Connection> {
        if (!reply.ok && reply.closed) {
          kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, reply.reason));
        }
        if (!reply.ok) throw failure->raise(reply.code, where + ": " + reply.reason);
        auto connection = kj::heap<Connection>(kj::mv(h->stream), where, counters);
        connection->setStdio(h->process);
        return connection;
      })
      .catch_([h, where, launcher, hint,
               failure](kj::Exception&& e) -> kj::Promise<kj::Own<Connection>> {
        if (failure->raised() || h->stream.get() == nullptr) return kj::mv(e);
        std::string detail = e.getDescription().cStr();
        // Most likely the launcher itself failed (authentication, host key, no such job or
        // command): wait briefly for its last words.
        return h->process->whenEnded(std::chrono::milliseconds(2000))
            .then([h, where, detail, launcher, hint, failure]() -> kj::Own<Connection> {
              std::string said = h->process->stderrTail();
              throw failure->raise(MQD_PROXY_ERR_UNREACHABLE,
                                   where + ": " +
                                       (said.empty() ? "the connection through " + launcher +
                                                           " ended: " + detail
                                       : said.rfind(launcher + ":", 0) == 0
                                                     ? said
                                                     : launcher + ": " + said) +
                                       hint);
            });
      })
      .attach(kj::mv(holder));
}

// Connects to `endpoint` and passes its admission. `pipelined`: the connection is ready as
// soon as the hello is sent, and its first read checks the server's reply (AdmissionFirst),
// so that what is sent next (openSession) travels behind the hello. Otherwise, and always
// through a launcher (whose failure before the reply is explained from its stderr), it is
// ready once the server said OK.
kj::Promise<kj::Own<Connection>> connectTo(kj::AsyncIoContext& io, const Endpoint& endpoint,
                                           ClientCounters* counters, const ClientConfig& config,
                                           std::shared_ptr<ChainFailure> failure,
                                           bool pipelined = false) {
  std::string where = endpoint.toString();
  std::string token;
  if (!config.tokenFile.empty()) {
    try {
      token = readTokenFile(config.tokenFile);
    } catch (const std::runtime_error& e) {
      return failure->raise(MQD_PROXY_ERR_AUTH_FAILED,
                            where + ": MQD_PROXY_TOKEN_FILE: " + e.what());
    }
  }
  if (endpoint.isLaunched()) {
    return connectOverStdio(io, endpoint, counters, config, kj::mv(token), failure);
  }
  std::string caFile = config.tlsCa;
  std::string tlsName = config.tlsName.empty() ? endpoint.host : config.tlsName;
  bool tls = endpoint.tls;
  // A unix socket must be trusted before anything is sent (SocketTrust.h): its directory and
  // file now, the process listening on it once connected.
  TrustedUsers trusted{::geteuid(), config.serverUid};
  bool isUnix = endpoint.kind == Endpoint::Kind::Unix;
  if (isUnix) {
    try {
      if (socketDirectory(endpoint.path) == privateSocketDirectory()) {
        try {
          preparePrivateDirectory(privateSocketDirectory());
        } catch (const SocketDistrusted& e) {
          throw SocketDistrusted(where + ": " + e.what());
        }
      }
      checkSocketPath(endpoint.path, trusted);
    } catch (const SocketDistrusted& e) {
      return failure->raise(MQD_PROXY_ERR_AUTH_FAILED, e.what());
    }
  }
  return io.provider->getNetwork()
      .parseAddress(endpoint.toKjAddress())
      .then([](kj::Own<kj::NetworkAddress> address) {
        return address->connect().attach(kj::mv(address));
      })
      .then(
          [tcp = endpoint.kind == Endpoint::Kind::Tcp, isUnix, trusted, path = endpoint.path,
           failure](kj::Own<kj::AsyncIoStream> stream) {
            if (tcp) {
              // Small request, small reply, over and over: Nagle's algorithm would hold each
              // one back for the peer's delayed ACK.
              int one = 1;
              stream->setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            }
            if (isUnix) {
              KJ_IF_MAYBE(fd, stream->getFd()) {
                try {
                  checkSocketPeer(*fd, path, trusted);
                } catch (const SocketDistrusted& e) {
                  throw failure->raise(MQD_PROXY_ERR_AUTH_FAILED, e.what());
                }
              } else {
                throw failure->raise(MQD_PROXY_ERR_AUTH_FAILED,
                                     "unix:" + path + ": cannot tell who runs the server there");
              }
            }
            return kj::mv(stream);
          },
          [where, failure](kj::Exception&& e) -> kj::Own<kj::AsyncIoStream> {
            throw failure->raise(MQD_PROXY_ERR_UNREACHABLE,
                                 where + ": " + e.getDescription().cStr() +
                                      " (is mqd-proxy-server running there? set "
                                      "MQD_PROXY_SERVER)");
          })
      .then([tls, caFile, tlsName, where, failure](kj::Own<kj::AsyncIoStream> stream)
                -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
        if (!tls) return kj::mv(stream);
        return startTls(kj::mv(stream), caFile, tlsName, where, failure);
      })
      .then([where, counters, failure, pipelined,
             token = kj::mv(token)](kj::Own<kj::AsyncIoStream> stream) mutable
            -> kj::Promise<kj::Own<Connection>> {
        // Admission before any RPC: the server answers OK or says why not.
        if (pipelined) {
          auto hello = sendHello(*stream, token);
          std::fill(token.begin(), token.end(), '\0');
          return hello.then([where, counters, failure, stream = kj::mv(stream)]() mutable {
            auto gated = kj::heap<AdmissionFirst>(
                kj::mv(stream), [where, failure](const HandshakeReply& reply) {
                  return kj::Promise<void>(failure->raise(reply.code, where + ": " + reply.reason));
                });
            return kj::heap<Connection>(kj::mv(gated), where, counters);
          });
        }
        auto handshake = clientHandshake(*stream, token);
        std::fill(token.begin(), token.end(), '\0');
        return handshake.then([where, counters, failure, stream = kj::mv(stream)](
                                  HandshakeReply reply) mutable -> kj::Own<Connection> {
          if (!reply.ok) throw failure->raise(reply.code, where + ": " + reply.reason);
          return kj::heap<Connection>(kj::mv(stream), where, counters);
        });
      });
}

// The endpoint, or the reason it is not one.
kj::OneOf<Endpoint, ProxyError> parseEndpoint(const std::string& server) {
  kj::OneOf<Endpoint, ProxyError> out;
  try {
    out.init<Endpoint>(Endpoint::parse(server));
  } catch (const std::invalid_argument& e) {
    out.init<ProxyError>(
        ProxyError(MQD_PROXY_ERR_UNREACHABLE, std::string(e.what()) + " in MQD_PROXY_SERVER"));
  }
  return out;
}

Connected failed(ProxyError e) {
  Connected out;
  out.init<ProxyError>(kj::mv(e));
  return out;
}

}  // namespace

kj::Promise<Connected> Connection::connect(kj::AsyncIoContext& io, const ClientConfig& config) {
  auto parsed = parseEndpoint(config.server);
  if (parsed.is<ProxyError>()) return failed(parsed.get<ProxyError>());
  const Endpoint& endpoint = parsed.get<Endpoint>();
  auto failure = ChainFailure::make();
  return withDeadline(io, connectTo(io, endpoint, nullptr, config, failure), endpoint.toString(),
                      config.timeout, failure);
}

kj::Own<Connection> Connection::connectNow(kj::AsyncIoContext& io, const ClientConfig& config) {
  return take(connect(io, config).wait(io.waitScope));
}

kj::Own<Connection> Connection::take(Connected&& connected) {
  if (connected.is<ProxyError>()) throw connected.get<ProxyError>();
  return kj::mv(connected.get<kj::Own<Connection>>());
}

kj::Promise<PostMortem> Connection::postMortem(kj::AsyncIoContext& io,
                                               const ClientConfig& config, SessionTicket ticket,
                                               std::chrono::milliseconds timeout) {
  auto bounded = kj::heap<ClientConfig>(config);
  bounded->timeout = timeout;
  auto connected = connect(io, *bounded);
  return connected.attach(kj::mv(bounded)).then([&io, ticket, timeout](
                                                    Connected connected) -> kj::Promise<PostMortem> {
    if (connected.is<ProxyError>()) {
      // Text for the post-mortem's reader, who only says the end could not be asked for.
      return kj::Promise<PostMortem>(KJ_EXCEPTION(FAILED, connected.get<ProxyError>().what()));
    }
    kj::Own<Connection> c = kj::mv(connected.get<kj::Own<Connection>>());
    auto request = c->proxy().postMortemRequest();
    request.getTicket().setConnection(ticket.connection);
    request.getTicket().setKey(ticket.key);
    // The server waits for the worker's end for half of this call's bound: the rest is for
    // connecting, which is done, and the answer's way back.
    request.setWaitMs(static_cast<uint32_t>(
        std::min<int64_t>(timeout.count() / 2, std::numeric_limits<uint32_t>::max())));
    auto asked = request.send().then(
        [](capnp::Response<wire::Proxy::PostMortemResults>&& response) {
          auto r = response.getReport();
          PostMortem out;
          out.known = r.getKnown();
          out.ended = r.getEnded();
          out.worker = r.getWorker();
          out.how = r.getHow();
          out.dll = r.getDll();
          out.lastCall = r.getLastCall();
          return out;
        });
    return io.provider->getTimer()
        .timeoutAfter(timeout.count() * kj::MILLISECONDS, kj::mv(asked))
        .attach(kj::mv(c));
  });
}

kj::Maybe<kj::Promise<PostMortem>> Connection::transportPostMortem(
    std::chrono::milliseconds timeout) {
  if (stdio_ == nullptr) return nullptr;
  StdioProcess* ssh = stdio_;
  return ssh->whenEnded(timeout).then([ssh]() { return ssh->workerEnd(); });
}

kj::Promise<Connected> Connection::open(kj::AsyncIoContext& io, const ClientConfig& config,
                                        DebuggerSide& side, ClientCounters& counters,
                                        SessionRecorder* recorder) {
  auto parsed = parseEndpoint(config.server);
  if (parsed.is<ProxyError>()) return failed(parsed.get<ProxyError>());
  Endpoint endpoint = parsed.get<Endpoint>();
  std::string where = endpoint.toString();
  std::string dll = config.dll;
  wire::CachePolicy cache = config.cache;
  bool compress = config.compress == ClientConfig::Compress::On ||
                  (config.compress == ClientConfig::Compress::Auto &&
                   endpoint.kind != Endpoint::Kind::Unix);
  auto failure = ChainFailure::make();
  auto openSession = [&side, dll, where, cache, compress, recorder,
                      failure](kj::Own<Connection> c) {
    c->compress_ = compress;
    auto request = c->proxy_.openSessionRequest();
    auto options = request.initOptions();
    describeClient(options, dll);
    options.setCachePolicy(cache);
    options.setCompress(compress);
    options.setRecorded(recorder != nullptr);
    auto held = side.heldInfos();
    auto resume = options.initResumeInfos(static_cast<unsigned>(held.size()));
    for (unsigned i = 0; i < resume.size(); ++i) {
      resume[i].setKind(held[i].kind);
      resume[i].setHandle(held[i].handle);
      resume[i].setInfo(held[i].info);
    }
    kj::Own<wire::SessionOptions::Reader> asked;  // what the recorder keeps
    auto service = kj::heap<DebuggerService>(*c, side);
    if (recorder != nullptr) {
      asked = capnp::clone(options.asReader());
      c->tasks_.add(recorder->describeServer(c->proxy_));
      request.setDebugger(recorder->tapDebugger(kj::mv(service)));
    } else {
      request.setDebugger(kj::mv(service));
    }
    return request.send().then(
        [c = kj::mv(c), recorder, asked = kj::mv(asked), failure](
            capnp::Response<wire::Proxy::OpenSessionResults>&& response) mutable {
          if (response.hasFailure()) {
            auto refused = response.getFailure();
            throw failure->raise(refused.getCode(),
                                 c->endpoint_ + ": " + refused.getDetail().cStr());
          }
          c->session_ = response.getSession();
          auto d = response.getDll();
          c->dll_ = DllInfo::from(d);
          c->ticket_.connection = response.getTicket().getConnection();
          c->ticket_.key = response.getTicket().getKey();
          c->takesInfoTokens_ = response.getTakesInfoTokens();
          c->readsOnNode_ = response.getReadsOnNode();
          c->refreshAheadBytes_ = response.getRefreshAheadBytes();
          for (int rank : response.getNodeRanks()) c->nodeRanks_.push_back(rank);
          for (auto p : response.getNodeProcesses()) {
            c->nodeProcesses_[p.getRank()].push_back({p.getRandom(), p.getStack()});
          }
          if (recorder != nullptr) {
            c->session_ = recorder->sessionOpened(c->endpoint_, *asked, d,
                                                  kj::mv(c->session_));
          }
          return kj::mv(c);
        },
        [where, failure](kj::Exception&& e) -> kj::Own<Connection> {
          throw failure->raise(MQD_PROXY_ERR_SESSION_REFUSED,
                               where + ": " + e.getDescription().cStr());
        });
  };
  // openSession travels behind the hello (AdmissionFirst).
  const bool pipelined = true;
  auto opened = connectTo(io, endpoint, &counters, config, failure, pipelined)
                    .then(kj::mv(openSession));
  return withDeadline(io, kj::mv(opened), where, config.timeout, failure);
}

}  // namespace mqd::client
