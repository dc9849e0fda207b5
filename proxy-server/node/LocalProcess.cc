#include "LocalProcess.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace mqd::server {
namespace {

// The environment variables through which launchers give each process its MPI_COMM_WORLD rank
// (Open MPI's, MPICH Hydra's, PMIx's).
constexpr const char* kRankVariables[] = {"OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "PMIX_RANK="};

std::string procPath(const std::string& proc, pid_t pid, const char* what) {
  return proc + "/" + std::to_string(pid) + "/" + what;
}

// The whole of a small /proc file (environ, auxv); nullopt if it cannot be read.
std::optional<std::string> slurp(const std::string& path) {
  kj::AutoCloseFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
}

// The ranks an environment (NUL-separated, as /proc/PID/environ) names in kRankVariables:
// decimal numbers from 0 to INT_MAX, anything else ignored.
std::set<int> ranksIn(const std::string& environ) {
  std::set<int> ranks;
  size_t at = 0;
  while (at < environ.size()) {
    size_t end = environ.find('\0', at);
    if (end == std::string::npos) end = environ.size();
    std::string entry = environ.substr(at, end - at);
    for (const char* name : kRankVariables) {
      size_t n = std::strlen(name);
      if (entry.compare(0, n, name) != 0 || entry.size() == n || entry.size() - n > 10) continue;
      std::string digits = entry.substr(n);
      if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
      long long value = std::stoll(digits);
      if (value <= INT_MAX) ranks.insert(static_cast<int>(value));
    }
    at = end + 1;
  }
  return ranks;
}

// The pids of this user's processes in `proc`.
std::vector<pid_t> thisUsersPids(const std::string& proc) {
  std::vector<pid_t> pids;
  DIR* dir = ::opendir(proc.c_str());
  if (dir == nullptr) return pids;
  while (struct dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    struct stat st;
    if (::stat((proc + "/" + e->d_name).c_str(), &st) == 0 && st.st_uid == ::geteuid()) {
      pids.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(dir);
  return pids;
}

// AT_RANDOM's value in an auxiliary vector of this server's word size; 0 if absent.
uint64_t atRandom(const std::string& auxv) {
  const size_t pair = 2 * sizeof(unsigned long);
  for (size_t at = 0; at + pair <= auxv.size(); at += pair) {
    unsigned long entry[2];
    std::memcpy(entry, auxv.data() + at, pair);
    if (entry[0] == AT_NULL) break;
    if (entry[0] == AT_RANDOM) return entry[1];
  }
  return 0;
}

// The stack pointer /proc/PID/syscall shows for a thread that does not run: the next to last
// of its words ("-1 SP PC" out of a system call, "NR ARGS... SP PC" in one); 0 for a thread
// that runs ("running") or a file that cannot be read.
uint64_t stackPointer(const std::string& path) {
  auto text = slurp(path);
  if (!text) return 0;
  std::istringstream in(*text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  if (words.size() < 3 || words[words.size() - 2].compare(0, 2, "0x") != 0) return 0;
  const std::string& sp = words[words.size() - 2];
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(sp.c_str() + 2, &end, 16);
  if (errno != 0 || end == sp.c_str() + 2 || *end != '\0') return 0;
  return value;
}

// What says which machine an ELF file is for: its class, byte order and e_machine. Empty if
// the file cannot be read or is no ELF file.
std::string elfMachine(const std::string& path) {
  kj::AutoCloseFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  unsigned char h[EI_NIDENT + 4];
  if (fd.get() < 0 || ::pread(fd.get(), h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
      std::memcmp(h, ELFMAG, SELFMAG) != 0) {
    return {};
  }
  // e_machine follows e_type (2 bytes) in both classes, in the file's own byte order.
  const char* bytes = reinterpret_cast<const char*>(h);
  return std::string(bytes + EI_CLASS, 2) + std::string(bytes + EI_NIDENT + 2, 2);
}

}  // namespace

bool LocalProcess::ofThisMachine(pid_t pid, const std::string& proc) {
  // Under qemu-user, /proc/self/exe is the emulated program: the machine the server is for.
  static const std::string self = elfMachine("/proc/self/exe");
  return !self.empty() && elfMachine(procPath(proc, pid, "exe")) == self;
}

std::optional<LocalProcess> LocalProcess::at(pid_t pid, std::string* why,
                                             const std::string& proc) {
  struct stat st;
  if (::stat((proc + "/" + std::to_string(pid)).c_str(), &st) != 0) {
    *why = "no process " + std::to_string(pid) + " on this host";
    return std::nullopt;
  }
  if (st.st_uid != ::geteuid()) {
    *why = "process " + std::to_string(pid) + " belongs to another user";
    return std::nullopt;
  }
  if (!ofThisMachine(pid, proc)) {
    // Its auxiliary vector has another layout, and the vendor DLL cannot be reading it.
    *why = "process " + std::to_string(pid) + " runs a program for another machine";
    return std::nullopt;
  }
  kj::AutoCloseFd mem(::open(procPath(proc, pid, "mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (mem.get() < 0) {
    *why = "cannot read process " + std::to_string(pid) + "'s memory: " + std::strerror(errno);
    return std::nullopt;
  }
  LocalProcess process(pid, kj::mv(mem), proc);
  auto auxv = slurp(procPath(proc, pid, "auxv"));
  process.randomAddress_ = auxv ? atRandom(*auxv) : 0;
  if (process.randomAddress_ == 0 ||
      !process.read(process.randomAddress_, process.random_.data(), process.random_.size())) {
    *why = "process " + std::to_string(pid) + " shows no AT_RANDOM bytes";
    return std::nullopt;
  }
  return process;
}

std::vector<LocalProcess> LocalProcess::withRank(int rank, const std::string& proc) {
  std::vector<LocalProcess> found;
  for (pid_t pid : thisUsersPids(proc)) {
    auto environ = slurp(procPath(proc, pid, "environ"));
    if (!environ || ranksIn(*environ).count(rank) == 0) continue;
    std::string why;
    if (auto p = at(pid, &why, proc)) found.push_back(kj::mv(*p));
  }
  return found;
}

std::set<int> LocalProcess::ranksHere(const std::string& proc) {
  std::set<int> ranks;
  for (const auto& [rank, addresses] : proofAddressesHere(proc)) ranks.insert(rank);
  return ranks;
}

std::map<int, std::vector<LocalProcess::ProofAddresses>> LocalProcess::proofAddressesHere(
    const std::string& proc) {
  std::map<int, std::vector<ProofAddresses>> here;
  for (pid_t pid : thisUsersPids(proc)) {
    auto environ = slurp(procPath(proc, pid, "environ"));
    if (!environ) continue;
    std::set<int> named = ranksIn(*environ);
    if (named.empty() || !ofThisMachine(pid, proc)) continue;
    auto auxv = slurp(procPath(proc, pid, "auxv"));
    ProofAddresses at{pid, auxv ? atRandom(*auxv) : 0,
                      stackPointer(procPath(proc, pid, "syscall"))};
    for (int rank : named) {
      auto& addresses = here[rank];
      if (at.random != 0) addresses.push_back(at);
    }
  }
  return here;
}

bool LocalProcess::stopped() const {
  std::string tasks = proc_ + "/" + std::to_string(pid_) + "/task";
  DIR* dir = ::opendir(tasks.c_str());
  if (dir == nullptr) return false;
  bool any = false, all = true;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    auto stat = slurp(tasks + "/" + e->d_name + "/stat");
    // "TID (COMM) STATE ...": COMM may hold spaces and parentheses, so the state follows the
    // last ')'.
    size_t close = stat ? stat->rfind(')') : std::string::npos;
    char state = close != std::string::npos && close + 2 < stat->size() ? (*stat)[close + 2] : '?';
    any = true;
    if (state != 't' && state != 'T') all = false;
  }
  ::closedir(dir);
  return any && all;
}

bool LocalProcess::read(uint64_t address, void* out, size_t size) const {
  auto* to = static_cast<char*>(out);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread64(mem_.get(), to + done, size - done, static_cast<off64_t>(address + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace mqd::server
