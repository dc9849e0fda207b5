#include "LoggingMessageStream.h"

#include "Log.h"

namespace mqd::server {

kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> LoggingMessageStream::tryReadMessage(
    kj::ArrayPtr<kj::AutoCloseFd> fdSpace, capnp::ReaderOptions options,
    kj::ArrayPtr<capnp::word> scratchSpace) {
  return inner_.tryReadMessage(fdSpace, options, scratchSpace)
      .catch_([](kj::Exception&& e) -> kj::Maybe<capnp::MessageReaderAndFds> {
        if (e.getType() != kj::Exception::Type::DISCONNECTED) {
          MQD_LOG(Warn, "dropping the connection: unreadable message from the client: %s",
                  e.getDescription().cStr());
        }
        kj::throwFatalException(kj::mv(e));
      });
}

}  // namespace mqd::server
