// LocalProcess: a process of this host whose memory the server may read itself, instead of
// asking the debugger for every block (server option --node-memory, docs/round-trips.md
// "Reading the target on its node").
//
// Contract:
//   * Only processes of the user the worker runs as are ever considered (the owner of
//     /proc/PID, compared with geteuid(); root gets no exception), running a program for the
//     server's own machine (ofThisMachine).
//   * A LocalProcess is only a candidate. The caller (RemoteDebugger) must prove that it is the
//     debugger's process before reading it: the 16 bytes the kernel put at AT_RANDOM when the
//     program started must equal what the debugger reads at the same address, and exactly one
//     candidate may match.
//   * The memory is read through one /proc/PID/mem descriptor opened when the candidate is
//     proved: it stays bound to that process's address space, so a pid reused later never
//     redirects the reads to another program.
#pragma once

#include <sys/types.h>

#include <kj/io.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mqd::server {

class LocalProcess {
 public:
  using Random = std::array<uint8_t, 16>;

  // The processes of this user on this host whose environment names MPI rank `rank` (one of
  // OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK), each with its AT_RANDOM address and bytes.
  // Processes that vanish or cannot be read while they are listed are left out. `proc` is the
  // proc file system's mount point (tests may point it elsewhere).
  static std::vector<LocalProcess> withRank(int rank, const std::string& proc = "/proc");

  // The MPI ranks of this user's processes on this host that run a program for this machine
  // (the ranks withRank would find candidates for): what a server tells a shim that serves
  // each process from the node that runs it (openSession's nodeRanks).
  static std::set<int> ranksHere(const std::string& proc = "/proc");

  // Where a shim reads a process through its debugger as it sets it up: the AT_RANDOM bytes,
  // the proof of identity, and its main thread's stack pointer, the set-up epoch's check (0:
  // not known, the thread running).
  struct ProofAddresses {
    pid_t pid = 0;
    uint64_t random = 0;
    uint64_t stack = 0;
  };

  // The same ranks, each with the ProofAddresses of the processes that name it (none for a
  // process whose auxiliary vector cannot be read): read before the process is set up, they
  // spare its set-up a round trip of its own (openSession's nodeProcesses).
  static std::map<int, std::vector<ProofAddresses>> proofAddressesHere(
      const std::string& proc = "/proc");

  // The same facts for one pid, if it is this user's and readable; else nullopt and `why`.
  static std::optional<LocalProcess> at(pid_t pid, std::string* why,
                                        const std::string& proc = "/proc");

  // Whether `pid` runs a program for the machine this server is built for (ELF class, byte
  // order and machine of /proc/PID/exe and of the server's own program). No other process
  // can be a candidate: the vendor DLL reads only targets of its own machine, and another
  // machine's auxiliary vector has another layout. Under qemu-user the server is the emulated
  // program, so host processes are never candidates (and emulated ones show qemu's host
  // program, so neither are they: node reads cannot work under qemu-user).
  static bool ofThisMachine(pid_t pid, const std::string& proc = "/proc");

  pid_t pid() const { return pid_; }
  uint64_t randomAddress() const { return randomAddress_; }
  const Random& random() const { return random_; }

  // Whether every thread of the process is stopped (a debugger's ptrace stop or a job-control
  // stop): only then is its memory what a debugger shows. A running process behind a debugger
  // means the debugger shows something else (a core file, a replay) or a state about to change.
  bool stopped() const;

  // Reads exactly `size` bytes at `address`; false if any of them is unreadable.
  bool read(uint64_t address, void* out, size_t size) const;

 private:
  LocalProcess(pid_t pid, kj::AutoCloseFd mem, std::string proc)
      : pid_(pid), mem_(kj::mv(mem)), proc_(std::move(proc)) {}

  pid_t pid_;
  kj::AutoCloseFd mem_;  // /proc/PID/mem, opened once
  std::string proc_;     // the proc file system it was found in
  uint64_t randomAddress_ = 0;
  Random random_{};
};

}  // namespace mqd::server
