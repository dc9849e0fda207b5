#include "AdmissionFirst.h"

#include <kj/debug.h>

#include "ProxyErrors.h"

namespace mqd::client {

kj::Promise<size_t> AdmissionFirst::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  if (admitted_) return inner_->tryRead(buffer, minBytes, maxBytes);
  return readReply(*inner_)
      .catch_([](kj::Exception&& e) {
        // The connection broke before a whole reply: the server is not there to be asked.
        HandshakeReply broken;
        broken.code = MQD_PROXY_ERR_UNREACHABLE;
        broken.reason = e.getDescription().cStr();
        broken.closed = true;
        return broken;
      })
      .then([this, buffer, minBytes, maxBytes](HandshakeReply reply) -> kj::Promise<size_t> {
        if (!reply.ok) {
          return refused_(reply).then([]() -> kj::Promise<size_t> {
            return KJ_EXCEPTION(DISCONNECTED, "the server refused the connection");
          });
        }
        admitted_ = true;
        return inner_->tryRead(buffer, minBytes, maxBytes);
      });
}

}  // namespace mqd::client
