// The differences between the Cap'n Proto releases mqd-proxy builds against that its code
// meets, each in one place: 0.9 (Debian 12) and 1.x (Debian 13). Code calls these instead of
// the API that changed, so no other file tests CAPNP_VERSION.
#pragma once

#include <capnp/any.h>
#include <capnp/capability.h>
#include <capnp/common.h>

#include <cstdint>

namespace mqd::capnp_compat {

// A request of method `methodId` of interface `interfaceId` on `client`, without knowing its
// types: for the session tap of a recording and for a replay, which forward calls as they
// come. 1.0 added the call's CallHints; none apply to these calls.
inline capnp::Request<capnp::AnyPointer, capnp::AnyPointer> typelessRequest(
    capnp::Capability::Client& client, uint64_t interfaceId, uint16_t methodId,
    capnp::MessageSize sizeHint) {
#if CAPNP_VERSION >= 1000000
  return client.typelessRequest(interfaceId, methodId, sizeHint, {});
#else
  return client.typelessRequest(interfaceId, methodId, sizeHint);
#endif
}

}  // namespace mqd::capnp_compat
