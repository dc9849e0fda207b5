#include "NodeRouter.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <thread>

#include "ClientConfig.h"
#include "Log.h"
#include "SlurmJob.h"

namespace mqd::client {
namespace {

// The node whose client is making a call on this thread: where a put_*_info its DLL makes
// belongs (the routed callback table has no other way to tell).
struct Current {
  NodeRouter* router = nullptr;
  size_t node = 0;
};
thread_local Current tCurrent;

// For the duration of a call delegated to `node`.
class OnNode {
 public:
  OnNode(NodeRouter* router, size_t node) : saved_(tCurrent) { tCurrent = Current{router, node}; }
  ~OnNode() { tCurrent = saved_; }
  OnNode(const OnNode&) = delete;
  OnNode& operator=(const OnNode&) = delete;

 private:
  Current saved_;
};

void routedPutImageInfo(mqs_image* image, mqs_image_info* info) {
  if (tCurrent.router != nullptr) tCurrent.router->putImageInfo(tCurrent.node, image, info);
}
void routedPutProcessInfo(mqs_process* process, mqs_process_info* info) {
  if (tCurrent.router != nullptr) tCurrent.router->putProcessInfo(tCurrent.node, process, info);
}
void routedPutJobInfo(mqs_job* job, mqs_job_info* info) {
  if (tCurrent.router != nullptr) tCurrent.router->putJobInfo(tCurrent.node, job, info);
}

}  // namespace

NodeRouter::NodeRouter() = default;
NodeRouter::~NodeRouter() = default;

// ---- the nodes ----

void NodeRouter::makeNodes() {
  if (!nodes_.empty()) return;
  std::vector<std::string> problems;  // each client reports them as its session opens
  ClientConfig config = ClientConfig::load(&problems);
  // slurm:JOB is a server on every node of the job (SlurmJob.h); one Slurm cannot list stays
  // one server, whose connection says why.
  std::vector<std::string> servers = expandSlurmJobs(config.servers(), config.timeout);
  if (servers.size() <= 1) {
    bool expanded = servers.size() == 1 && servers[0] != config.server;
    nodes_.push_back(std::make_unique<MqsClient>(expanded ? servers[0] : std::string()));
    if (debugger_ != nullptr) nodes_[0]->setupBasicCallbacks(debugger_);
    single_.store(true, std::memory_order_release);
    return;
  }
  for (const std::string& server : servers) {
    nodes_.push_back(std::make_unique<MqsClient>(server));
    if (debugger_ != nullptr) nodes_.back()->setupBasicCallbacks(&routed_);
  }
}

void NodeRouter::openNodes() {
  makeNodes();
  if (!routing() || opened_) return;
  opened_ = true;
  std::vector<int> rc(nodes_.size(), mqs_ok);
  {
    std::vector<std::thread> opening;
    opening.reserve(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      opening.emplace_back([this, i, &rc]() {
        OnNode on(this, i);
        rc[i] = nodes_[i]->openNow();
      });
    }
    for (std::thread& t : opening) t.join();
  }
  home_ = 0;
  while (home_ < nodes_.size() && rc[home_] != mqs_ok) ++home_;
  if (home_ == nodes_.size()) home_ = 0;  // none opened: the first says why
  size_t ranks = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (rc[i] != mqs_ok) {
      MQD_LOG(Warn, "node server %s: %s; its processes are served by %s",
              nodes_[i]->server().c_str(), nodes_[i]->dllErrorString(rc[i]),
              nodes_[home_]->server().c_str());
    }
    ranks += nodes_[i]->nodeRanks().size();
  }
  MQD_LOG(Info, "%zu node servers, home %s: %zu ranks on their nodes", nodes_.size(),
          nodes_[home_]->server().c_str(), ranks);
}

MqsClient& NodeRouter::on(size_t node) {
  last_ = node;
  return *nodes_[node];
}

size_t NodeRouter::route(mqs_process* process, const mqs_process_callbacks* callbacks) {
  // No node runs a rank: nothing to ask the debugger (a question a native load would not ask
  // here).
  bool anyRanks = false;
  for (const auto& node : nodes_) anyRanks = anyRanks || !node->nodeRanks().empty();
  if (!anyRanks || callbacks == nullptr || callbacks->mqs_get_global_rank_fp == nullptr) {
    return home_;
  }
  int rank = callbacks->mqs_get_global_rank_fp(process);
  std::vector<size_t> claims;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::vector<int>& ranks = nodes_[i]->nodeRanks();
    if (std::binary_search(ranks.begin(), ranks.end(), rank)) claims.push_back(i);
  }
  if (claims.size() == 1) {
    MQD_LOG(Debug, "rank %d: served by %s, its node", rank, nodes_[claims[0]]->server().c_str());
    return claims[0];
  }
  MQD_LOG(Info, "rank %d: %s node server lists it; served by %s through the debugger", rank,
          claims.empty() ? "no" : "more than one", nodes_[home_]->server().c_str());
  return home_;
}

void NodeRouter::setUpImageOn(size_t node, mqs_image* image) {
  const mqs_image_callbacks* callbacks = nullptr;
  bool queried = false;
  {
    std::lock_guard<std::mutex> guard(state_);
    auto it = images_.find(image);
    if (it == images_.end()) return;  // never set up by the debugger: the DLL will say
    ImageSetUp& setUp = it->second;
    setUp.setUpOn.resize(nodes_.size(), false);
    if (setUp.setUpOn[node]) return;
    setUp.setUpOn[node] = true;
    callbacks = setUp.callbacks;
    queried = setUp.queried;
  }
  OnNode current(this, node);
  if (on(node).setupImage(image, callbacks) == mqs_ok && queried) {
    char* message = nullptr;
    on(node).imageHasQueues(image, &message);
  }
}

// ---- info tokens ----

uintptr_t NodeRouter::hold(const void* object, size_t node, uintptr_t token) {
  uintptr_t mine = nextToken_++;
  Held& h = held_[mine];
  h.object = object;
  h.byNode[node] = token;
  return mine;
}

void NodeRouter::putImageInfo(size_t node, mqs_image* image, mqs_image_info* info) {
  auto token = reinterpret_cast<uintptr_t>(info);
  uintptr_t mine = 0;
  {
    std::lock_guard<std::mutex> guard(state_);
    auto known = heldByObject_.find(image);
    if (known != heldByObject_.end()) {  // the debugger holds the image's token already
      held_[known->second].byNode[node] = token;
      return;
    }
    mine = hold(image, node, token);
    heldByObject_[image] = mine;
  }
  if (debugger_->mqs_put_image_info_fp != nullptr) {
    debugger_->mqs_put_image_info_fp(image, reinterpret_cast<mqs_image_info*>(mine));
  }
}

template <typename Object, typename Info>
void NodeRouter::putHeld(size_t node, Object* object, Info* info, void (*put)(Object*, Info*)) {
  uintptr_t mine = 0;
  {
    std::lock_guard<std::mutex> guard(state_);
    mine = hold(object, node, reinterpret_cast<uintptr_t>(info));
  }
  if (put != nullptr) put(object, reinterpret_cast<Info*>(mine));
}

void NodeRouter::putProcessInfo(size_t node, mqs_process* process, mqs_process_info* info) {
  putHeld(node, process, info, debugger_->mqs_put_process_info_fp);
}

void NodeRouter::putJobInfo(size_t node, mqs_job* job, mqs_job_info* info) {
  // Only a level-3 DLL has jobs, and a debugger that took one gives level-3 tables.
  putHeld(node, job, info, debugger_->mqs_put_job_info_fp);
}

// ---- entry points ----

void NodeRouter::setupBasicCallbacks(const mqs_basic_callbacks* callbacks) {
  size_t count = 0;
  {
    std::lock_guard<std::mutex> guard(state_);
    debugger_ = callbacks;
    routed_ = mqs_basic_callbacks{};
    if (callbacks != nullptr) {
      // The members every debugger gives (the level-3 ones are read only for a level-3 DLL).
      std::memcpy(&routed_, callbacks, offsetof(mqs_basic_callbacks, mqs_put_job_info_fp));
    }
    routed_.mqs_put_image_info_fp = routedPutImageInfo;
    routed_.mqs_put_process_info_fp = routedPutProcessInfo;
    routed_.mqs_put_job_info_fp = routedPutJobInfo;
    count = nodes_.size();  // none before the first other call: makeNodes() passes it on
  }
  for (size_t i = 0; i < count; ++i) {
    OnNode current(this, i);
    nodes_[i]->setupBasicCallbacks(routing() ? &routed_ : callbacks);
  }
}

size_t NodeRouter::home() {
  if (single_.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> guard(state_);
  openNodes();
  return home_;
}

size_t NodeRouter::nodeFor(mqs_process* process) {
  if (single_.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> guard(state_);
  openNodes();
  auto it = processNodes_.find(process);
  return it != processNodes_.end() ? it->second : home_;
}

// What belongs to no process: the home node's.
#define MQD_ON_HOME(call)        \
  size_t node = home();          \
  OnNode current(this, node);    \
  return on(node).call

char* NodeRouter::versionString() { MQD_ON_HOME(versionString()); }
int NodeRouter::versionCompatibility() { MQD_ON_HOME(versionCompatibility()); }
int NodeRouter::dllTaddrWidth() { MQD_ON_HOME(dllTaddrWidth()); }
int NodeRouter::setupJob(mqs_job* job, const mqs_job_callbacks* callbacks) {
  MQD_ON_HOME(setupJob(job, callbacks));
}

char* NodeRouter::dllErrorString(int code) {
  home();  // the nodes made
  size_t node = last_;
  OnNode current(this, node);
  return nodes_[node]->dllErrorString(code);
}

int NodeRouter::setupImage(mqs_image* image, const mqs_image_callbacks* callbacks) {
  size_t node = 0;
  {
    std::lock_guard<std::mutex> guard(state_);
    openNodes();
    node = home_;
    if (routing()) {
      ImageSetUp& setUp = images_[image];
      setUp = ImageSetUp{};  // set up afresh: the other nodes set it up again as they need it
      setUp.callbacks = callbacks;
      setUp.setUpOn.assign(nodes_.size(), false);
      setUp.setUpOn[node] = true;
    }
  }
  OnNode current(this, node);
  return on(node).setupImage(image, callbacks);
}

int NodeRouter::imageHasQueues(mqs_image* image, char** message) {
  size_t node = 0;
  {
    std::lock_guard<std::mutex> guard(state_);
    openNodes();
    node = home_;
    auto it = images_.find(image);
    if (it != images_.end()) it->second.queried = true;
  }
  OnNode current(this, node);
  return on(node).imageHasQueues(image, message);
}

int NodeRouter::setupProcess(mqs_process* process, const mqs_process_callbacks* callbacks) {
  size_t node = 0;
  mqs_image* image = nullptr;
  {
    std::lock_guard<std::mutex> guard(state_);
    openNodes();
    node = routing() ? route(process, callbacks) : 0;
    if (routing()) processNodes_[process] = node;
    if (routing() && node != home_ && callbacks != nullptr &&
        callbacks->mqs_get_image_fp != nullptr) {
      image = callbacks->mqs_get_image_fp(process);
    }
  }
  if (image != nullptr) setUpImageOn(node, image);
  OnNode current(this, node);
  return on(node).setupProcess(process, callbacks);
}

// A destroy of a token the router handed out goes to every node that put one for it; any other
// (one with a single server, or a debugger's mistake) to the home node, which says what it
// makes of it. `destroy(node, token)` destroys one node's. The token's object is forgotten as
// the debugger's `kind` of object: an image's token, or the node a process went to.
template <typename Destroy>
void NodeRouter::destroyHeld(const void* info, Kind kind, Destroy&& destroy) {
  Held h;
  size_t node = 0;
  {
    std::lock_guard<std::mutex> guard(state_);
    openNodes();
    node = home_;
    auto it = routing() ? held_.find(reinterpret_cast<uintptr_t>(info)) : held_.end();
    if (it != held_.end()) {
      h = std::move(it->second);
      held_.erase(it);
      if (kind == Kind::Image) heldByObject_.erase(h.object);
      if (kind == Kind::Process) {
        processNodes_.erase(static_cast<mqs_process*>(const_cast<void*>(h.object)));
      }
    }
  }
  if (h.byNode.empty()) {
    OnNode current(this, node);
    destroy(node, reinterpret_cast<uintptr_t>(info));
    return;
  }
  for (const auto& [holder, token] : h.byNode) {
    OnNode current(this, holder);
    destroy(holder, token);
  }
}

void NodeRouter::destroyImageInfo(mqs_image_info* info) {
  destroyHeld(info, Kind::Image, [this](size_t node, uintptr_t token) {
    on(node).destroyImageInfo(reinterpret_cast<mqs_image_info*>(token));
  });
}

void NodeRouter::destroyProcessInfo(mqs_process_info* info) {
  destroyHeld(info, Kind::Process, [this](size_t node, uintptr_t token) {
    on(node).destroyProcessInfo(reinterpret_cast<mqs_process_info*>(token));
  });
}

int NodeRouter::destroyJobInfo(mqs_job_info* info) {
  int rc = mqs_ok;
  destroyHeld(info, Kind::Job, [this, &rc](size_t node, uintptr_t token) {
    rc = on(node).destroyJobInfo(reinterpret_cast<mqs_job_info*>(token));
  });
  return rc;
}

// About one process: its node's.
#define MQD_ON_NODE_OF(process, call) \
  size_t node = nodeFor(process);     \
  OnNode current(this, node);         \
  return on(node).call

int NodeRouter::processHasQueues(mqs_process* process, char** message) {
  MQD_ON_NODE_OF(process, processHasQueues(process, message));
}
int NodeRouter::updateCommunicatorList(mqs_process* process) {
  MQD_ON_NODE_OF(process, updateCommunicatorList(process));
}
int NodeRouter::setupCommunicatorIterator(mqs_process* process) {
  MQD_ON_NODE_OF(process, setupCommunicatorIterator(process));
}
int NodeRouter::getCommunicator(mqs_process* process, mqs_communicator* communicator) {
  MQD_ON_NODE_OF(process, getCommunicator(process, communicator));
}
int NodeRouter::nextCommunicator(mqs_process* process) {
  MQD_ON_NODE_OF(process, nextCommunicator(process));
}
int NodeRouter::getCommGroup(mqs_process* process, int* ranks) {
  MQD_ON_NODE_OF(process, getCommGroup(process, ranks));
}
int NodeRouter::setupOperationIterator(mqs_process* process, int op_class) {
  MQD_ON_NODE_OF(process, setupOperationIterator(process, op_class));
}
int NodeRouter::nextOperation(mqs_process* process, mqs_pending_operation* operation) {
  MQD_ON_NODE_OF(process, nextOperation(process, operation));
}
int NodeRouter::setupNewProcessIterator(mqs_process* process) {
  MQD_ON_NODE_OF(process, setupNewProcessIterator(process));
}
int NodeRouter::nextNewProcess(mqs_process* process, mqs_process_location* location) {
  MQD_ON_NODE_OF(process, nextNewProcess(process, location));
}
int NodeRouter::setProcessIdentity(mqs_process* process, int identity) {
  MQD_ON_NODE_OF(process, setProcessIdentity(process, identity));
}
int NodeRouter::getCommCollState(mqs_process* process, int collective, int* sequence,
                                 int* active) {
  MQD_ON_NODE_OF(process, getCommCollState(process, collective, sequence, active));
}

#undef MQD_ON_NODE_OF
#undef MQD_ON_HOME

}  // namespace mqd::client
