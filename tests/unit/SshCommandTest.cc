#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "ClientConfig.h"
#include "Endpoint.h"
#include "SlurmJob.h"
#include "StdioTransport.h"

using mqd::Endpoint;
using mqd::client::ClientConfig;
using mqd::client::sshCommand;
using mqd::client::stdioCommand;

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

TEST_CASE("srun command: a one-task step of the job on the node, the stream unbuffered") {
  ClientConfig c;
  c.logLevel = mqd::LogLevel::Info;
  auto args = stdioCommand(Endpoint::parse("slurm:77@node3/opt/mqd/mqd-proxy-server"), c);
  std::vector<std::string> want = {
      "srun",         "--jobid=77",         "--overlap",
      "--nodelist=node3", "--nodes=1",      "--ntasks=1",
      "--mpi=none",   "--unbuffered",       "--quiet",
      "--job-name=mqd-proxy-server", "/opt/mqd/mqd-proxy-server", "--stdio",
      "--node-memory", "--log-level",       "info"};
  CHECK(args == want);
  CHECK(stdioCommand(Endpoint::parse("slurm:77@node3"), c)[10] == "mqd-proxy-server");
  CHECK(stdioCommand(Endpoint::parse("ssh://node3"), c)[0] == "ssh");
}

TEST_CASE("slurm:JOB without Slurm's commands stays as written, the reason given") {
  const char* saved = std::getenv("PATH");
  std::string path = saved != nullptr ? saved : "";
  ::setenv("PATH", "/nonexistent", 1);
  std::vector<std::string> problems;
  auto servers = mqd::client::expandSlurmJobs({"slurm:5", "tcp:h:1", "slurm:5@n1"},
                                              std::chrono::milliseconds(5000), &problems);
  ::setenv("PATH", path.c_str(), 1);
  CHECK(servers == std::vector<std::string>{"slurm:5", "tcp:h:1", "slurm:5@n1"});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("slurm:5: squeue: cannot find squeue") == 0);
}
