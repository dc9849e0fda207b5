#include "TlsClient.h"

#include <kj/compat/tls.h>
#include <kj/debug.h>

#include <memory>

#include "ForwardingStream.h"
#include "Handshake.h"
#include "ProxyErrors.h"
#include "RegularFile.h"

namespace mqd::client {
namespace {

// Passes a stream through to the TLS layer, except when the server's first bytes are a
// plain-text REFUSED line: then it reads the whole line into `refusal` and reports end of
// stream, so the handshake fails and the caller can show the server's reason instead of an
// OpenSSL record error.
class RefusalTap final : public ForwardingStream {
 public:
  RefusalTap(kj::Own<kj::AsyncIoStream> inner, std::shared_ptr<std::string> refusal)
      : ForwardingStream(kj::mv(inner)), refusal_(std::move(refusal)) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override {
    if (!first_) return inner_->tryRead(buffer, minBytes, maxBytes);
    first_ = false;
    return inner_->tryRead(buffer, 1, maxBytes)
        .then([this, buffer, minBytes, maxBytes](size_t n) -> kj::Promise<size_t> {
          std::string got(static_cast<const char*>(buffer), n);
          if (n == 0 || !isRefusalStart(got)) {
            if (n >= minBytes || n == 0) return n;
            // The caller asked for more than the first read gave: complete it.
            auto* rest = static_cast<kj::byte*>(buffer) + n;
            return inner_->tryRead(rest, minBytes - n, maxBytes - n).then([n](size_t m) {
              return n + m;
            });
          }
          return readReplyLine(*inner_, got).then([this](std::string line) -> size_t {
            *refusal_ = line.empty() ? std::string(kRefusalPrefix) : line;
            return 0;
          });
        });
  }

 private:
  std::shared_ptr<std::string> refusal_;
  bool first_ = true;
};

}  // namespace

kj::Promise<kj::Own<kj::AsyncIoStream>> startTls(kj::Own<kj::AsyncIoStream> raw,
                                                 const std::string& caFile,
                                                 const std::string& host,
                                                 const std::string& where,
                                                 std::shared_ptr<ChainFailure> failure) {
  kj::TlsContext::Options options;
  kj::Maybe<kj::TlsCertificate> ca;
  if (!caFile.empty()) {
    std::string pem;
    try {
      pem = readRegularFile(caFile, kMaxPemBytes);
    } catch (const FileRefused& e) {
      return failure->raise(MQD_PROXY_ERR_TLS,
                            where + ": cannot read MQD_PROXY_TLS_CA " + e.what());
    }
    KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() { ca = kj::TlsCertificate(pem); })) {
      return failure->raise(MQD_PROXY_ERR_TLS, where + ": MQD_PROXY_TLS_CA " + caFile +
                                                    " is not a PEM certificate (" +
                                                    e->getDescription().cStr() + ")");
    }
    options.useSystemTrustStore = false;
    options.trustedCertificates = kj::arrayPtr(&KJ_ASSERT_NONNULL(ca), 1);
  }
  kj::Own<kj::TlsContext> context;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions(
                     [&]() { context = kj::heap<kj::TlsContext>(kj::mv(options)); })) {
    return failure->raise(MQD_PROXY_ERR_TLS,
                          where + ": cannot set up TLS: " + e->getDescription().cStr());
  }
  auto refusal = std::make_shared<std::string>();
  auto wrapped = context->wrapClient(kj::heap<RefusalTap>(kj::mv(raw), refusal), host);
  return wrapped.then(
      [context = kj::mv(context)](kj::Own<kj::AsyncIoStream> stream) mutable {
        return stream.attach(kj::mv(context));
      },
      [refusal, where, host, caFile, failure](kj::Exception&& e) -> kj::Own<kj::AsyncIoStream> {
        if (!refusal->empty()) {
          HandshakeReply reply = parseReply(*refusal);
          throw failure->raise(reply.code, where + ": " + reply.reason);
        }
        std::string trust = caFile.empty() ? "the system's trust store"
                                           : "MQD_PROXY_TLS_CA " + caFile;
        throw failure->raise(
            MQD_PROXY_ERR_TLS,
            where + ": TLS handshake failed: " + e.getDescription().cStr() +
                " (the server must speak TLS (--listen tls:...), and its certificate must be "
                "signed by a CA in " + trust + " and name \"" + host +
                "\"; MQD_PROXY_TLS_NAME sets the name to check)");
      });
}

}  // namespace mqd::client
