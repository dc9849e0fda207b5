// libmqdproxy.so: the MQD entry points a debugger dlopen()s, forwarded to mqd-proxy-server.
//
// This file is the whole C ABI veneer: one exported function per entry point of
// schema/mqs_entry_points.h, each handing its arguments to the same-named method of the one
// NodeRouter of this library instance (one MqsClient, or one per node's server), which never
// throws. The signatures are checked against
// mqs_interface.h's declarations by the compiler. Nothing else is exported (the version script
// libmqdproxy.map is made from the same list); the client is created on first use and destroyed
// when the library is unloaded.
#include "NodeRouter.h"
#include "mqs_entry_points.h"
#include "mqs_interface.h"

namespace {

mqd::client::NodeRouter& client() {
  static mqd::client::NodeRouter instance;
  return instance;
}

}  // namespace

#define MQD_EXPORT_ENTRY_POINT(result, name, method, parameters, arguments, absent) \
  extern "C" __attribute__((visibility("default"))) result mqs_##name parameters {   \
    return client().method arguments;                                                 \
  }
MQS_ENTRY_POINTS(MQD_EXPORT_ENTRY_POINT)
#undef MQD_EXPORT_ENTRY_POINT
