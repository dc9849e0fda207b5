// TlsIdentity: the server's certificate and private key for a tls: listener.
//
// Loaded once by the supervisor at start-up (as the user that started the server, before
// --worker-user applies), so a key readable only by root still works. Each forked worker makes
// its own kj::TlsContext from the parsed pair it inherited; nothing is re-read from disk.
#pragma once

#include <kj/async-io.h>
#include <kj/compat/tls.h>
#include <kj/time.h>

#include <memory>
#include <string>

namespace mqd::server {

class TlsIdentity {
 public:
  // Reads and parses both PEM files. Throws std::runtime_error naming the file that cannot be
  // read or parsed (an encrypted key counts as unparseable: give the server a plain one).
  TlsIdentity(const std::string& certFile, const std::string& keyFile);
  TlsIdentity(const TlsIdentity&) = delete;
  TlsIdentity& operator=(const TlsIdentity&) = delete;

  // A server context presenting this identity. The handshake of each wrapped stream fails
  // after `handshakeTimeout` on `timer`. The context must outlive the streams it wraps
  // (TlsIdentity must outlive the context).
  kj::Own<kj::TlsContext> serverContext(kj::Timer& timer, kj::Duration handshakeTimeout) const;

 private:
  std::unique_ptr<kj::TlsKeypair> keypair_;
};

}  // namespace mqd::server
