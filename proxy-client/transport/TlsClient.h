// TlsClient: the client half of a tls: endpoint.
#pragma once

#include <kj/async-io.h>

#include <memory>
#include <string>

#include "ProxyErrors.h"

namespace mqd::client {

// Wraps the connected `raw` stream in TLS as a client and completes the handshake. The
// server's certificate must chain to a certificate in `caFile` (PEM; empty: the system's trust
// store) and name `host` (a DNS name in its subjectAltName or common name). The returned
// stream owns everything it needs.
//
// Fails with a failure raised on `failure` naming `where`: MQD_PROXY_ERR_TLS when the CA file
// cannot be read or the handshake or verification fails; when the server answered with a
// plain-text REFUSED line instead of TLS (it requires no TLS, or is at its session limit), the
// code and reason of that line.
kj::Promise<kj::Own<kj::AsyncIoStream>> startTls(kj::Own<kj::AsyncIoStream> raw,
                                                 const std::string& caFile,
                                                 const std::string& host,
                                                 const std::string& where,
                                                 std::shared_ptr<ChainFailure> failure);

}  // namespace mqd::client
