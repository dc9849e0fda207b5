#include "AdmissionFirst.h"

namespace mqd::client {

kj::Promise<size_t> AdmissionFirst::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  if (admitted_) return inner_->tryRead(buffer, minBytes, maxBytes);
  return readReply(*inner_).then(
      [this, buffer, minBytes, maxBytes](HandshakeReply reply) -> kj::Promise<size_t> {
        if (!reply.ok) return refused_(reply);
        admitted_ = true;
        return inner_->tryRead(buffer, minBytes, maxBytes);
      });
}

}  // namespace mqd::client
