#include "TlsIdentity.h"

#include <kj/debug.h>

#include <stdexcept>

#include "RegularFile.h"

namespace mqd::server {
namespace {

std::string readPem(const std::string& option, const std::string& path) {
  try {
    return readRegularFile(path, kMaxPemBytes);
  } catch (const FileRefused& e) {
    throw std::runtime_error(option + " " + e.what());
  }
}

}  // namespace

TlsIdentity::TlsIdentity(const std::string& certFile, const std::string& keyFile) {
  std::string certPem = readPem("--tls-cert", certFile);
  std::string keyPem = readPem("--tls-key", keyFile);
  kj::Maybe<kj::TlsCertificate> cert;
  kj::Maybe<kj::TlsPrivateKey> key;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() { cert = kj::TlsCertificate(certPem); })) {
    throw std::runtime_error("--tls-cert " + certFile + ": not a PEM certificate (" +
                             e->getDescription().cStr() + ")");
  }
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&]() { key = kj::TlsPrivateKey(keyPem); })) {
    throw std::runtime_error("--tls-key " + keyFile + ": not an unencrypted PEM private key (" +
                             e->getDescription().cStr() + ")");
  }
  // Scrub our copy of the key text; OpenSSL keeps the parsed key.
  for (char& c : keyPem) c = 0;
  keypair_ = std::make_unique<kj::TlsKeypair>(kj::TlsKeypair{
      kj::mv(KJ_ASSERT_NONNULL(key)), kj::mv(KJ_ASSERT_NONNULL(cert))});
}

kj::Own<kj::TlsContext> TlsIdentity::serverContext(kj::Timer& timer,
                                                   kj::Duration handshakeTimeout) const {
  kj::TlsContext::Options options;
  // Clients are not verified by certificate (the token authenticates them): loading the
  // system's trust store would only cost each new connection tens of milliseconds.
  options.useSystemTrustStore = false;
  options.defaultKeypair = *keypair_;
  options.timer = timer;
  options.acceptTimeout = handshakeTimeout;
  return kj::heap<kj::TlsContext>(kj::mv(options));
}

}  // namespace mqd::server
