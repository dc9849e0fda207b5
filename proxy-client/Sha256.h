// Sha256: the SHA-256 digest of a sequence of values, through OpenSSL's libcrypto (which kj-tls
// brings already). The set-up records (SetUpRecall) prove with it that what a DLL consumed is
// the same as when an outcome was recorded.
//
// Values are fed in a fixed encoding, so that equal sequences give equal digests on every
// host: integers as 8 bytes little-endian, text and bytes with their length first.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mqd::client {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  Sha256& number(int64_t value);
  Sha256& text(const std::string& value);
  Sha256& bytes(const void* data, size_t size);  // with its size first

  // The digest of everything fed so far; the object may not be fed again.
  Digest finish();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
  void feed(const void* data, size_t size);
};

}  // namespace mqd::client
