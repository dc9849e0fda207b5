// ChildProgram: programs the shim starts from inside the debugger process (ssh, srun, Slurm's
// squeue and scontrol), without disturbing it:
//   - the program is started through an intermediate child that exits at once, so that it is
//     never the debugger's child: the debugger gets no SIGCHLD for it and cannot reap it by
//     accident (nor can the shim wait for its exit status: what it printed is the answer);
//   - it runs in a session of its own (no controlling terminal: a Ctrl-C meant for the
//     debugger does not reach it), with default signal dispositions and mask, and only
//     descriptors 0-2 open;
//   - a pidfd names it afterwards, so that signalling it never hits a recycled pid.
#pragma once

#include <kj/io.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace mqd::client {

// A pipe or a socket pair (close-on-exec): [0] and [1] are its two ends, each closed when let
// go. Each maker returns false, nothing owned, when the system call failed.
struct FdPair {
  kj::AutoCloseFd end[2];
  bool pipe();        // [0] the read end, [1] the write end
  bool socketPair();  // AF_UNIX, SOCK_STREAM
};

// `name` itself when it has a slash, else its first executable match in $PATH; "" if none.
std::string findProgram(const std::string& name);

struct StartedProgram {
  int pid = -1;
  kj::AutoCloseFd pidfd;  // -1 when the program ended before it could be opened
};

// Starts `program` (a path: findProgram's) with `args` (args[0] included) and this process's
// environment; its stdin is `in`, its stdout `out`, its stderr `err` (descriptors of the
// caller, who keeps them). Throws std::runtime_error saying why it could not be started
// (fork, or exec's error: not found, not executable).
StartedProgram startProgram(const std::string& program, const std::vector<std::string>& args,
                            int in, int out, int err);

// What a program run to its end printed.
struct ProgramOutput {
  std::string out;
  std::string err;
};

// Runs `args` (args[0] found on $PATH) with stdin from /dev/null, to its end or for at most
// `limit` (then it is sent SIGTERM). Throws std::runtime_error when it cannot be started or
// does not end in time.
ProgramOutput runProgram(const std::vector<std::string>& args, std::chrono::milliseconds limit);

}  // namespace mqd::client
