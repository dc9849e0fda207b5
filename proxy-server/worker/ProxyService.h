// ProxyService: the bootstrap capability of one connection (wire Proxy).
//
// describe() tells a client what this server is and which DLLs it allows; openSession() loads
// the chosen DLL into this worker and returns the Session. One session per connection: the
// vendor DLL keeps process-global state (its basic-callbacks pointer), so a worker serves one
// debugger with one DLL.
#pragma once

#include <kj/timer.h>

#include "DllAllowList.h"
#include "Worker.h"
#include "mqd.capnp.h"

namespace mqd::server {

class DllOutput;

class ProxyService final : public wire::Proxy::Server {
 public:
  // `timer` paces postMortem's wait for the supervisor; `metrics` counts for the session.
  ProxyService(const WorkerConfig& config, kj::Maybe<DllOutput&> output, kj::Timer& timer,
               Metrics& metrics)
      : config_(config), output_(output), timer_(timer), metrics_(metrics) {}

  // The machine name this server was built for ("x86_64", "aarch64", "s390x", ...).
  static const char* architecture();

 protected:
  kj::Promise<void> describe(DescribeContext context) override;
  kj::Promise<void> openSession(OpenSessionContext context) override;
  kj::Promise<void> stats(StatsContext context) override;
  kj::Promise<void> postMortem(PostMortemContext context) override;

 private:
  kj::Promise<void> answerPostMortem(PostMortemContext context, uint64_t connection,
                                     uint64_t key, kj::TimePoint deadline);

  const WorkerConfig& config_;
  kj::Maybe<DllOutput&> output_;
  kj::Timer& timer_;
  Metrics& metrics_;
  bool sessionOpened_ = false;
};

}  // namespace mqd::server
