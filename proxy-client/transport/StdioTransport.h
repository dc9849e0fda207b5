// SshTransport: reaches an ssh:// server (Endpoint.h) by running
//
//   ssh -T -o BatchMode=yes -o ConnectTimeout=S [-p PORT] [-l USER] OPTIONS... -- HOST
//       'PATH' --stdio --log-level LEVEL
//
// with a socketpair as ssh's stdin and stdout (the Cap'n Proto stream) and a pipe as its
// stderr (ssh's own messages and the remote server's log).
//
// The debugger process is not disturbed:
//   - ssh is started through an intermediate child that exits at once, so ssh is never the
//     debugger's child: the debugger gets no SIGCHLD for it and cannot reap it by accident;
//   - ssh runs in a session of its own (no controlling terminal: a Ctrl-C meant for the
//     debugger does not reach it, and it cannot prompt: BatchMode), with default signal
//     dispositions and mask, and only descriptors 0-2 open;
//   - ssh's lifetime is bounded by the stream's: destroying SshProcess signals it through a
//     pidfd (no risk of hitting a recycled pid), and a hung-up stream ends it too.
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

// The ssh process behind one connection, and what it wrote to stderr.
class SshProcess {
 public:
  // Starts ssh for `endpoint`. Returns the process; `stream` receives our end of the
  // socketpair. Throws ProxyError(MQD_PROXY_ERR_UNREACHABLE) when ssh cannot be
  // started (not found, fork failure).
  static kj::Own<SshProcess> start(kj::AsyncIoContext& io, const Endpoint& endpoint,
                                   const ClientConfig& config,
                                   kj::Own<kj::AsyncIoStream>* stream);
  ~SshProcess();
  SshProcess(const SshProcess&) = delete;
  SshProcess& operator=(const SshProcess&) = delete;

  // Resolves once ssh closed its stderr (it ended), or after `limit`.
  kj::Promise<void> whenEnded(std::chrono::milliseconds limit);

  // The last lines ssh and the remote server wrote to stderr, joined with "; " (at most
  // kTailLines lines): the explanation of a failed connection.
  std::string stderrTail() const;

  // How the remote --stdio server's worker ended, from the post-mortem line it wrote on
  // stderr (known and ended once it did; see whenEnded()).
  const PostMortem& workerEnd() const { return workerEnd_; }

  static constexpr size_t kTailLines = 6;

 private:
  SshProcess(kj::AsyncIoContext& io, int pid, kj::AutoCloseFd pidfd, int stderrFd,
             std::string host);
  kj::Promise<void> readStderr();
  void takeLines(bool flush);

  kj::AsyncIoContext& io_;
  int pid_;
  kj::AutoCloseFd pidfd_;  // -1 when ssh ended before it could be opened
  std::string host_;
  kj::Own<kj::AsyncInputStream> stderr_;
  char buffer_[4096];
  std::string partial_;
  std::deque<std::string> tail_;
  PostMortem workerEnd_;
  kj::ForkedPromise<void> ended_;
};

}  // namespace mqd::client
