// LoggingMessageStream: a MessageStream that logs why reading a message failed (bigger than
// --max-message-mib, malformed framing) before passing the failure on. Cap'n Proto then aborts
// the connection and tells the peer; without this the worker's log would only show that the
// client went away.
#pragma once

#include <capnp/serialize-async.h>

namespace mqd::server {

class LoggingMessageStream final : public capnp::MessageStream {
 public:
  // `inner` must outlive this stream.
  explicit LoggingMessageStream(capnp::MessageStream& inner) : inner_(inner) {}

  kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> tryReadMessage(
      kj::ArrayPtr<kj::AutoCloseFd> fdSpace, capnp::ReaderOptions options = {},
      kj::ArrayPtr<capnp::word> scratchSpace = nullptr) override;
  kj::Promise<void> writeMessage(kj::ArrayPtr<const int> fds,
                                 kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments)
      override {
    return inner_.writeMessage(fds, segments);
  }
  kj::Promise<void> writeMessages(
      kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) override {
    return inner_.writeMessages(messages);
  }
  kj::Maybe<int> getSendBufferSize() override { return inner_.getSendBufferSize(); }
  kj::Promise<void> end() override { return inner_.end(); }

 private:
  capnp::MessageStream& inner_;
};

}  // namespace mqd::server
