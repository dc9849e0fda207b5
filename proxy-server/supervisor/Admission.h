// Admission: the worker's gate between an accepted connection and Cap'n Proto RPC.
//
// Before any RPC traffic is read, a new connection must (in this order)
//   1. on a tls: listener, start with a TLS ClientHello (a plain-text client is told, in plain
//      text, that the server requires TLS) and complete the TLS handshake;
//   2. send the handshake hello (common/Handshake.h) within the handshake deadline;
//   3. present the server's token, when it has one (compared in constant time).
// A connection failing any step gets a REFUSED line saying why (when there is anyone to tell),
// is logged, and is closed: no session, no DLL, no RPC object ever exists for it.
#pragma once

#include <kj/async-io.h>

#include <string>

namespace mqd::server {

class TlsIdentity;

struct AdmissionPolicy {
  std::string token;                // the token clients must present; empty: none required
  const TlsIdentity* tls = nullptr;  // set for a tls: listener
  int handshakeTimeoutMs = 5000;     // for TLS and for the hello, each
};

// Runs the steps above on `fd` (taking ownership). Returns the stream RPC must run on (TLS
// when the listener is tls:, owning everything it needs), or null when the connection was
// refused or dropped (already logged and closed). Blocks on `io`'s wait scope.
kj::Own<kj::AsyncIoStream> admit(kj::AsyncIoContext& io, int fd, const AdmissionPolicy& policy);

// Refuses the connection on `fd` in plain text, whatever the listener: writes
// refusalLine(code, reason), stops writing, and discards what the client still sends for up
// to `lingerMs` (or until it closes) so that the line is not lost to a TCP reset. Closes `fd`.
// Blocking: for a forked process that does nothing else.
void refuseInPlain(int fd, int code, const std::string& reason, int lingerMs);

}  // namespace mqd::server
