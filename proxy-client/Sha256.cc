#include "Sha256.h"

#include <openssl/evp.h>

#include "ProxyErrors.h"

namespace mqd::client {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (context_->md == nullptr || EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) != 1) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "SHA-256 is not available from libcrypto");
  }
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::feed(const void* data, size_t size) {
  if (size > 0) EVP_DigestUpdate(context_->md, data, size);
}

Sha256& Sha256::number(int64_t value) {
  uint8_t le[8];
  auto u = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(u >> (8 * i));
  feed(le, sizeof le);
  return *this;
}

Sha256& Sha256::text(const std::string& value) { return bytes(value.data(), value.size()); }

Sha256& Sha256::bytes(const void* data, size_t size) {
  number(static_cast<int64_t>(size));
  feed(data, size);
  return *this;
}

Sha256::Digest Sha256::finish() {
  Digest out{};
  unsigned int n = 0;
  EVP_DigestFinal_ex(context_->md, out.data(), &n);
  return out;
}

}  // namespace mqd::client
