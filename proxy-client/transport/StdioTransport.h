// StdioTransport: reaches a server that a launcher starts with --stdio and whose stdin and
// stdout are the stream (Endpoint.h):
//
//   ssh://...    ssh -T -o BatchMode=yes -o ConnectTimeout=S [-p PORT] [-l USER] OPTIONS...
//                    -- HOST 'PATH' --stdio --log-level LEVEL
//   slurm:J@NODE srun --jobid=J --overlap --nodelist=NODE ... PATH --stdio --node-memory ...
//                (SlurmJob.h: a server on a node of a running Slurm job, as its user)
//
// with a socketpair as the launcher's stdin and stdout (the Cap'n Proto stream) and a pipe as
// its stderr (the launcher's own messages and the remote server's log).
//
// The debugger process is not disturbed (ChildProgram.h): the launcher is never the
// debugger's child, runs in a session of its own (no controlling terminal: a Ctrl-C meant for
// the debugger does not reach it, and it cannot prompt), with default signal dispositions and
// mask, and only descriptors 0-2 open; its lifetime is bounded by the stream's: destroying
// StdioProcess signals it through a pidfd (no risk of hitting a recycled pid), and a hung-up
// stream ends it too.
#pragma once

#include <kj/async-io.h>
#include <kj/io.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ClientConfig.h"
#include "Endpoint.h"
#include "PostMortem.h"

namespace mqd::client {

// The ssh command line for `endpoint` under `config` (exposed for tests and `mqd-proxy config`).
std::vector<std::string> sshCommand(const Endpoint& endpoint, const ClientConfig& config);

// The command that starts the server of an ssh:// or slurm:JOB@NODE `endpoint`.
std::vector<std::string> stdioCommand(const Endpoint& endpoint, const ClientConfig& config);

// The launcher behind one connection, and what it wrote to stderr.
class StdioProcess {
 public:
  // Starts the launcher for `endpoint`. Returns the process; `stream` receives our end of the
  // socketpair. Throws ProxyError(MQD_PROXY_ERR_UNREACHABLE) when it cannot be started (not
  // found, fork failure).
  static kj::Own<StdioProcess> start(kj::AsyncIoContext& io, const Endpoint& endpoint,
                                   const ClientConfig& config,
                                   kj::Own<kj::AsyncIoStream>* stream);
  ~StdioProcess();
  StdioProcess(const StdioProcess&) = delete;
  StdioProcess& operator=(const StdioProcess&) = delete;

  // Resolves once the launcher closed its stderr (it ended), or after `limit`.
  kj::Promise<void> whenEnded(std::chrono::milliseconds limit);

  // The last lines the launcher and the remote server wrote to stderr, joined with "; " (at
  // most kTailLines lines): the explanation of a failed connection.
  std::string stderrTail() const;

  // How the remote --stdio server's worker ended, from the post-mortem line it wrote on
  // stderr (known and ended once it did; see whenEnded()).
  const PostMortem& workerEnd() const { return workerEnd_; }

  static constexpr size_t kTailLines = 6;

 private:
  StdioProcess(kj::AsyncIoContext& io, int pid, kj::AutoCloseFd pidfd, int stderrFd,
               std::string launcher, std::string host);
  kj::Promise<void> readStderr();
  void takeLines(bool flush);

  kj::AsyncIoContext& io_;
  int pid_;
  kj::AutoCloseFd pidfd_;  // -1 when the launcher ended before it could be opened
  std::string launcher_;   // "ssh", "srun": in log lines
  std::string host_;
  kj::Own<kj::AsyncInputStream> stderr_;
  char buffer_[4096];
  std::string partial_;
  std::deque<std::string> tail_;
  PostMortem workerEnd_;
  kj::ForkedPromise<void> ended_;
};

}  // namespace mqd::client
