// AdmissionFirst: a connection whose first bytes read are the server's admission reply
// (common/Handshake.h), for a client that sent its first RPC messages right behind its hello
// instead of waiting for the reply: the session opens in one round trip, not two.
//
// Writes pass through from the start. The first read reads the reply line alone; on OK, it and
// every read after it read on. On a refusal, or a connection that ended or broke before a
// whole reply (`closed`, with MQD_PROXY_ERR_UNREACHABLE for a broken one), it fails once the
// promise `refused` makes of the reply has failed (it must), so that the RPC system breaks the
// connection and the call waiting on it (openSession) fails too, while the refusal itself,
// kept by `refused` (a ChainFailure's raise), is what the caller reports.
#pragma once

#include <functional>

#include "ForwardingStream.h"
#include "Handshake.h"

namespace mqd::client {

class AdmissionFirst final : public ForwardingStream {
 public:
  using Refused = std::function<kj::Promise<void>(const HandshakeReply&)>;

  AdmissionFirst(kj::Own<kj::AsyncIoStream> inner, Refused refused)
      : ForwardingStream(kj::mv(inner)), refused_(std::move(refused)) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;

 private:
  Refused refused_;
  bool admitted_ = false;
};

}  // namespace mqd::client
