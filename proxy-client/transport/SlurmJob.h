// SlurmJob: servers on the nodes of a running Slurm job, started by Slurm itself (the
// `server` setting slurm:JOB, Endpoint.h). Nobody starts a daemon, opens a port or makes a
// token by hand: for every node of the job the shim runs
//
//   srun --jobid=JOB --overlap --nodelist=NODE --nodes=1 --ntasks=1 --mpi=none --unbuffered
//        --quiet --job-name=mqd-proxy-server PATH --stdio --node-memory --log-level LEVEL
//
// a step of the job beside its others (--overlap: it takes none of the job's resources from
// its ranks), run by Slurm as the user who asks, which only the job's owner (or Slurm's
// administrators) may do. The stream is srun's stdin and stdout, forwarded by Slurm between
// srun and the node (--unbuffered: as written, no line buffering; through pipes, never a
// terminal), as ssh's is for ssh://; the server reads the node's processes itself
// (--node-memory). When the shim ends the session, srun ends and so does the step.
//
// The job's nodes are Slurm's: `squeue -h -t R -j JOB -o %N` (its node list, running jobs
// only), expanded by `scontrol show hostnames`. srun, squeue and scontrol are the ones on PATH,
// reading the user's Slurm configuration ($SLURM_CONF or the system's): the shim must run
// where the job's user can run srun (the login node, as gdb does with `mqd attach`).
// docs/debuggers.md ("Servers Slurm starts") is the user's side; docs/security.md ("A Slurm
// job's nodes") says who can do what.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ClientConfig.h"
#include "Endpoint.h"

namespace mqd::client {

// The srun command line for a slurm:JOB@NODE `endpoint` (above).
std::vector<std::string> srunCommand(const Endpoint& endpoint, const ClientConfig& config);

// The nodes of running Slurm job `job`, in Slurm's order. Throws ProxyError
// (MQD_PROXY_ERR_UNREACHABLE) saying why there are none: Slurm's commands missing or failing,
// the job unknown or not running; squeue and scontrol get `limit` each.
std::vector<std::string> slurmJobNodes(const std::string& job, std::chrono::milliseconds limit);

// `servers` (ClientConfig::servers()) with each slurm:JOB[/PATH] that names no node replaced
// by a slurm:JOB@NODE[/PATH] for every node of the job. One whose nodes Slurm cannot list
// stays as written (connecting to it fails, saying why), and the reason is added to
// `problems` when given.
std::vector<std::string> expandSlurmJobs(const std::vector<std::string>& servers,
                                         std::chrono::milliseconds limit,
                                         std::vector<std::string>* problems = nullptr);

}  // namespace mqd::client
