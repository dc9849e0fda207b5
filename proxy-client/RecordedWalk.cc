#include "RecordedWalk.h"

#include "ProxyErrors.h"
#include "WalkLimits.h"
#include "mqs_interface.h"

namespace mqd::client {

RecordedWalk::RecordedWalk(BulkMessageReader message) : message_(kj::mv(message)) {
  walk_ = message_.getRoot<wire::CommunicatorWalk>();
  communicators_ = walk_.getCommunicators();
}

std::unique_ptr<RecordedWalk> RecordedWalk::fromStart() const {
  return std::unique_ptr<RecordedWalk>(new RecordedWalk(message_.again()));
}

RecordedWalk::RecordedWalk(wire::Bulk::Reader walk) : message_(walk) {
  if (message_.empty()) throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "empty walk");
  walk_ = message_.getRoot<wire::CommunicatorWalk>();
  communicators_ = walk_.getCommunicators();
  if (communicators_.size() > kMaxWalkCommunicators) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "walk with more communicators than a server records");
  }
  size_t operations = 0;
  for (auto c : communicators_) {
    auto queues = c.getQueues();
    if (queues.size() != 0 && queues.size() != 3) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "walk with a malformed communicator");
    }
    for (auto q : queues) operations += q.getOperations().size();
    if (operations > kMaxWalkOperations) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "walk with more operations than a server records");
    }
  }
}

void RecordedWalk::enterCommunicator() {
  operations_ = {};
  if (!onCommunicator()) return;
  queues_ = current().getQueues();
  collStates_ = current().getCollStates();
}

bool RecordedWalk::setupCommunicatorIterator(wire::RecordedRc::Reader* out) {
  *out = walk_.getSetup();
  at_.setupCommunicatorIterator();
  enterCommunicator();
  return true;
}

bool RecordedWalk::getCommunicator(wire::RecordedCommunicator::Reader* out) {
  if (!onCommunicator()) return false;
  *out = current().getGet();
  return true;
}

bool RecordedWalk::getCommGroup(wire::RecordedGroup::Reader* out) {
  if (!onCommunicator() || !current().getHasGroup()) return false;
  *out = current().getGroup();
  return true;
}

bool RecordedWalk::nextCommunicator(wire::RecordedRc::Reader* out) {
  if (!onCommunicator() || !current().getHasNext()) return false;
  *out = current().getNext();
  at_.nextCommunicator();
  enterCommunicator();
  return true;
}

bool RecordedWalk::setupOperationIterator(int opClass, wire::RecordedRc::Reader* out) {
  if (!onCommunicator() || opClass < 0 || opClass > 2 || queues_.size() != 3) return false;
  auto queue = queues_[static_cast<unsigned>(opClass)];
  *out = queue.getSetup();
  at_.setupOperationIterator(opClass);
  operations_ = out->getRc() == mqs_ok ? queue.getOperations()
                                       : capnp::List<wire::RecordedOperation>::Reader();
  return true;
}

bool RecordedWalk::nextOperation(wire::RecordedOperation::Reader* out) {
  if (!onCommunicator() || at_.opClass < 0 || at_.operations >= operations_.size()) return false;
  *out = operations_[at_.operations];
  at_.nextOperation();
  return true;
}

bool RecordedWalk::getCommCollState(int collective, wire::RecordedCollState::Reader* out) {
  if (!onCommunicator() || collective < 0 ||
      static_cast<unsigned>(collective) >= collStates_.size()) {
    return false;
  }
  *out = collStates_[static_cast<unsigned>(collective)];
  return true;
}

}  // namespace mqd::client
