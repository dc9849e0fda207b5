// NodeRouter: the MQD entry points of libmqdproxy.so, each process served by the server on the
// node that runs it.
//
// With one server (the `server` setting), every call goes to one MqsClient, untouched. With
// several (a server with --node-memory on each node of a job), there is one MqsClient per
// server, and:
//   - every session opens at once, at the first call that needs a server (one thread each);
//     the first whose session opens is the home node, which answers what belongs to no
//     process: the DLL's version and level, the debugger's image set-ups and has-queues
//     questions, a job's set-up;
//   - mqs_setup_process sends the process to the one node whose server listed the process's
//     MPI rank (the debugger's get_global_rank) among its host's ranks as its session opened
//     (MqsClient::nodeRanks); when none or several did, to the home node, whose server then
//     reads it through the debugger's callbacks, as a server without node memory does. The
//     node sets up the process's image first if it has not (the home's set-up and has-queues
//     call replayed on it), and serves every later call about the process;
//   - info tokens: the debugger holds one per image, process and job, the router's own; the
//     router keeps, per token, what each node's DLL put (a node's set-up of an image the
//     debugger holds already is kept here, not given to the debugger again), and a
//     mqs_destroy_*_info goes to every node that holds one;
//   - mqs_dll_error_string explains a code of the node that made the last call.
// A node whose server dies or cannot be reached loses its own processes' answers (their calls
// fail with the proxy's error code, as with one server); the others' go on.
// The rule is docs/round-trips.md's "A server on every node".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "MqsClient.h"
#include "mqs_entry_points.h"
#include "mqs_interface.h"

namespace mqd::client {

class NodeRouter {
 public:
  NodeRouter();
  ~NodeRouter();
  NodeRouter(const NodeRouter&) = delete;
  NodeRouter& operator=(const NodeRouter&) = delete;

#define MQD_DECLARE_ENTRY_POINT(result, name, method, parameters, arguments, absent) \
  result method parameters;
  MQS_ENTRY_POINTS(MQD_DECLARE_ENTRY_POINT)
#undef MQD_DECLARE_ENTRY_POINT

  // The debugger's put_*_info, as a node's DLL calls it (the callback table each node's
  // client was given routes here).
  void putImageInfo(size_t node, mqs_image* image, mqs_image_info* info);
  void putProcessInfo(size_t node, mqs_process* process, mqs_process_info* info);
  void putJobInfo(size_t node, mqs_job* job, mqs_job_info* info);

 private:
  // The clients, made from the `server` setting at the first call after
  // mqs_setup_basic_callbacks. Under state_.
  void makeNodes();
  bool routing() const { return nodes_.size() > 1; }
  // Opens every node's session, once (routing only), and picks the home node. Under state_.
  void openNodes();
  // The home node, the nodes made and opened.
  size_t home();
  // The node that serves `process` (set up), else the home node; the nodes made and opened.
  size_t nodeFor(mqs_process* process);
  // The node mqs_setup_process sends `process` to (the class comment). Under state_.
  size_t route(mqs_process* process, const mqs_process_callbacks* callbacks);
  // Sets up `image` on `node` as on the home node, if it is not yet.
  void setUpImageOn(size_t node, mqs_image* image);
  // The client of `node`, noted as the last one called.
  MqsClient& on(size_t node);
  enum class Kind { Image, Process, Job };
  template <typename Destroy>
  void destroyHeld(const void* info, Kind kind, Destroy&& destroy);

  // The routing state below. Never held while a client runs a call: a call may take the
  // timeout, and calls about different nodes' processes need not wait for each other (each
  // client serialises its own). Held while the sessions open, once.
  std::mutex state_;
  const mqs_basic_callbacks* debugger_ = nullptr;  // the debugger's table
  mqs_basic_callbacks routed_{};                   // the nodes': put_*_info route here
  std::vector<std::unique_ptr<MqsClient>> nodes_;  // made once, never changed after
  // One server, nodes_ made: every call goes to node 0, with no routing state to consult.
  std::atomic<bool> single_{false};
  bool opened_ = false;
  size_t home_ = 0;
  std::atomic<size_t> last_{0};  // the node of the last call (for mqs_dll_error_string)

  struct ImageSetUp {
    const mqs_image_callbacks* callbacks = nullptr;
    bool queried = false;        // the debugger asked mqs_image_has_queues
    std::vector<bool> setUpOn;   // per node
  };
  std::map<mqs_image*, ImageSetUp> images_;
  std::map<mqs_process*, size_t> processNodes_;

  // A token the debugger holds, and what the nodes' DLLs put for its object.
  struct Held {
    const void* object = nullptr;        // the image, process or job
    std::map<size_t, uintptr_t> byNode;  // node -> the token its client put
  };
  uintptr_t nextToken_ = 1;
  std::map<uintptr_t, Held> held_;                 // the router's tokens
  std::map<const void*, uintptr_t> heldByObject_;  // image -> its router token
  // A new router token for what `node` put for `object`. Under state_.
  uintptr_t hold(const void* object, size_t node, uintptr_t token);
  // What `node` put for a process or job, which the debugger gets as a new router token
  // through `put` (its own put_*_info).
  template <typename Object, typename Info>
  void putHeld(size_t node, Object* object, Info* info, void (*put)(Object*, Info*));
};

}  // namespace mqd::client
