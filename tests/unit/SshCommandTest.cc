#include <doctest/doctest.h>

#include "ClientConfig.h"
#include "Endpoint.h"
#include "SshTransport.h"

using mqd::Endpoint;
using mqd::client::ClientConfig;
using mqd::client::sshCommand;

TEST_CASE("ssh command: fixed safety options, the endpoint, pass-through options, the server") {
  ClientConfig c;
  c.timeout = std::chrono::milliseconds(2500);
  c.sshOptions = "  -i /k/id   -J jump.example ";
  c.logLevel = mqd::LogLevel::Debug;
  auto args = sshCommand(Endpoint::parse("ssh://me@node7:2222/opt/mqd/mqd-proxy-server"), c);
  std::vector<std::string> want = {"ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                                   "-p", "2222", "-l", "me", "-i", "/k/id", "-J",
                                   "jump.example", "--", "node7",
                                   "'/opt/mqd/mqd-proxy-server' --stdio --log-level debug"};
  CHECK(args == want);
}

TEST_CASE("ssh command: defaults leave port, user and program to ssh and the remote PATH") {
  ClientConfig c;
  c.ssh = "/usr/local/bin/ssh";
  auto args = sshCommand(Endpoint::parse("ssh://node7"), c);
  std::vector<std::string> want = {"/usr/local/bin/ssh", "-T", "-o", "BatchMode=yes", "-o",
                                   "ConnectTimeout=30", "--", "node7",
                                   "mqd-proxy-server --stdio --log-level warn"};
  CHECK(args == want);
  args = sshCommand(Endpoint::parse("ssh://node7/~/bin/mqd-proxy-server"), c);
  CHECK(args.back() == "~/'bin/mqd-proxy-server' --stdio --log-level warn");
}
