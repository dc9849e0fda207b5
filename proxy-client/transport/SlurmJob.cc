#include "SlurmJob.h"

#include <sstream>
#include <stdexcept>

#include "ChildProgram.h"
#include "Log.h"
#include "ProxyErrors.h"

namespace mqd::client {
namespace {

[[noreturn]] void slurmFailed(const std::string& why) {
  throw ProxyError(MQD_PROXY_ERR_UNREACHABLE, why);
}

// What a Slurm command printed on stdout; throws with its stderr when it printed nothing
// there (the shim cannot see the exit status of a program that is not its child:
// ChildProgram.h).
std::string ask(const std::vector<std::string>& args, std::chrono::milliseconds limit) {
  ProgramOutput output;
  try {
    output = runProgram(args, limit);
  } catch (const std::runtime_error& e) {
    slurmFailed(args[0] + ": " + e.what() +
                " (Slurm's client commands, slurm-client, on PATH where the debugger runs)");
  }
  std::string said = output.err;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (output.out.find_first_not_of(" \n") == std::string::npos && !said.empty()) {
    slurmFailed(args[0] + ": " + said);
  }
  return output.out;
}

}  // namespace

std::vector<std::string> srunCommand(const Endpoint& endpoint, const ClientConfig& config) {
  return {"srun",
          "--jobid=" + endpoint.job,
          "--overlap",
          "--nodelist=" + endpoint.host,
          "--nodes=1",
          "--ntasks=1",
          "--mpi=none",
          "--unbuffered",
          "--quiet",
          "--job-name=mqd-proxy-server",
          endpoint.path.empty() ? "mqd-proxy-server" : endpoint.path,
          "--stdio",
          "--node-memory",
          "--log-level",
          logLevelName(config.logLevel)};
}

std::vector<std::string> slurmJobNodes(const std::string& job, std::chrono::milliseconds limit) {
  std::string list = ask({"squeue", "--noheader", "--states=R", "--jobs=" + job, "--format=%N"},
                         limit);
  std::istringstream lines(list);
  std::string compressed;
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(' ') != std::string::npos) {
      compressed += (compressed.empty() ? "" : ",") + line;
    }
  }
  if (compressed.empty()) {
    slurmFailed("Slurm lists no running job " + job + " (squeue --states=R --jobs=" + job +
                "): a server starts on the nodes of a running job");
  }
  std::istringstream names(ask({"scontrol", "show", "hostnames", compressed}, limit));
  std::vector<std::string> nodes;
  for (std::string name; names >> name;) nodes.push_back(name);
  if (nodes.empty()) slurmFailed("scontrol show hostnames " + compressed + " names no node");
  return nodes;
}

std::vector<std::string> expandSlurmJobs(const std::vector<std::string>& servers,
                                         std::chrono::milliseconds limit,
                                         std::vector<std::string>* problems) {
  // Nothing of Slurm's is touched unless a slurm: server is named. (Running the loop below
  // for every setting made LeakSanitizer's tracer crash at the exit of a shim process in the
  // sanitized security-local-user test, reproducibly and not yet explained.)
  bool any = false;
  for (const std::string& server : servers) any = any || server.rfind("slurm:", 0) == 0;
  if (!any) return servers;
  std::vector<std::string> out;
  for (const std::string& server : servers) {
    Endpoint endpoint;
    try {
      endpoint = Endpoint::parse(server);
    } catch (const std::invalid_argument&) {
      out.push_back(server);  // connecting says what is wrong with it
      continue;
    }
    if (endpoint.kind != Endpoint::Kind::Slurm || !endpoint.host.empty()) {
      out.push_back(server);
      continue;
    }
    try {
      std::vector<std::string> nodes = slurmJobNodes(endpoint.job, limit);
      for (const std::string& node : nodes) {
        Endpoint one = endpoint;
        one.host = node;
        out.push_back(one.toString());
      }
      MQD_LOG(Info, "%s: Slurm job %s runs on %zu node(s): a server through srun on each",
              server.c_str(), endpoint.job.c_str(), nodes.size());
    } catch (const ProxyError& e) {
      if (problems != nullptr) problems->push_back(server + ": " + e.what());
      out.push_back(server);
    }
  }
  return out;
}

}  // namespace mqd::client
