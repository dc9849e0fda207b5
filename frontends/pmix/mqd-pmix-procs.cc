// mqd-pmix-procs PID: the processes of the job a launcher runs, from its PMIx server, for
// launchers without an MPIR process table (Open MPI 5's mpirun, PRRTE's prterun). The gdb front
// end's `mqd attach --launcher PID` runs it when the launcher has no MPIR_proctable
// (frontends/gdb/mqd_gdb/job.py).
//
// It attaches to the PMIx server of process PID as a PMIx tool (through the rendezvous
// information the server leaves for tools), asks it for the namespaces it knows and for the
// process table of the one job that is not the server's own (PRRTE's daemons). Output, in rank
// order, one line per process: RANK <tab> PID <tab> HOST <tab> EXECUTABLE. Exit status 0; 1 with
// one sentence on stderr when there is no such server or job; 2 for a usage error.
// Builds against PMIx 4.2 (Debian 12) and 5.0 (Debian 13): only interfaces both have.
#include <pmix_tool.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Process {
  pmix_rank_t rank;
  pid_t pid;
  std::string host;
  std::string executable;
};

[[noreturn]] void fail(const std::string& sentence) {
  std::fprintf(stderr, "mqd-pmix-procs: %s\n", sentence.c_str());
  std::exit(1);
}

// This process as a PMIx tool attached to the launcher's server, while the object lives.
class Tool {
 public:
  explicit Tool(pid_t launcher) {
    // One try, no wait: a process without a server for tools is said at once.
    uint32_t tries = 1, pause = 0;
    pmix_info_t info[3];
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_PIDINFO, &launcher, PMIX_PID);
    PMIX_INFO_LOAD(&info[1], PMIX_CONNECT_MAX_RETRIES, &tries, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[2], PMIX_CONNECT_RETRY_DELAY, &pause, PMIX_UINT32);
    pmix_status_t rc = PMIx_tool_init(&self_, info, 3);
    for (auto& i : info) PMIX_INFO_DESTRUCT(&i);
    if (rc != PMIX_SUCCESS) {
      fail("process " + std::to_string(launcher) + " runs no PMIx server a tool can attach to (" +
           PMIx_Error_string(rc) + "): name the job's launcher (Open MPI 5's mpirun, PRRTE's "
           "prterun), on this host, run by this user");
    }
  }
  ~Tool() { PMIx_tool_finalize(); }
  Tool(const Tool&) = delete;
  Tool& operator=(const Tool&) = delete;

 private:
  pmix_proc_t self_;
};

// Runs one query of `key` (about namespace `nspace`, if not empty) on the server; `take` sees
// each value of the answer before the answer is freed.
template <typename Take>
void query(const char* key, const std::string& nspace, Take take) {
  pmix_query_t q;
  PMIX_QUERY_CONSTRUCT(&q);
  pmix_status_t rc;
  PMIX_ARGV_APPEND(rc, q.keys, key);
  if (!nspace.empty()) {
    PMIX_QUERY_QUALIFIERS_CREATE(&q, 1);
    PMIX_INFO_LOAD(&q.qualifiers[0], PMIX_NSPACE, nspace.c_str(), PMIX_STRING);
  }
  pmix_info_t* results = nullptr;
  size_t count = 0;
  rc = PMIx_Query_info(&q, 1, &results, &count);
  PMIX_QUERY_DESTRUCT(&q);
  if (rc != PMIX_SUCCESS) {
    fail(std::string("the launcher's PMIx server did not answer ") + key +
         (nspace.empty() ? "" : " for " + nspace) + " (" + PMIx_Error_string(rc) + ")");
  }
  for (size_t i = 0; i < count; ++i) take(results[i].value);
  PMIX_INFO_FREE(results, count);
}

std::vector<std::string> splitCommas(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// The namespaces the server knows.
std::vector<std::string> namespaces() {
  std::vector<std::string> all;
  query(PMIX_QUERY_NAMESPACES, "", [&](const pmix_value_t& v) {
    if (v.type == PMIX_STRING && v.data.string != nullptr) all = splitCommas(v.data.string);
  });
  return all;
}

// The processes of namespace `nspace`, in rank order.
std::vector<Process> processTable(const std::string& nspace) {
  std::vector<Process> table;
  query(PMIX_QUERY_PROC_TABLE, nspace, [&](const pmix_value_t& v) {
    if (v.type != PMIX_DATA_ARRAY || v.data.darray == nullptr ||
        v.data.darray->type != PMIX_PROC_INFO) {
      return;
    }
    auto* info = static_cast<const pmix_proc_info_t*>(v.data.darray->array);
    for (size_t i = 0; i < v.data.darray->size; ++i) {
      table.push_back({info[i].proc.rank, info[i].pid,
                       info[i].hostname ? info[i].hostname : "",
                       info[i].executable_name ? info[i].executable_name : ""});
    }
  });
  std::sort(table.begin(), table.end(),
            [](const Process& a, const Process& b) { return a.rank < b.rank; });
  return table;
}

// The one job the launcher runs: of the server's namespaces, those whose processes do not
// include the launcher itself (PRRTE's own namespace, its daemons, does).
std::vector<Process> jobOf(pid_t launcher) {
  std::vector<std::string> names;
  std::vector<Process> job;
  for (auto& nspace : namespaces()) {
    auto table = processTable(nspace);
    bool own = std::any_of(table.begin(), table.end(),
                           [&](const Process& p) { return p.pid == launcher; });
    if (!own && !table.empty()) {
      names.push_back(nspace);
      job = std::move(table);
    }
  }
  if (names.empty()) fail("the launcher's PMIx server runs no job (yet?)");
  if (names.size() > 1) {
    std::string all;
    for (auto& n : names) all += (all.empty() ? "" : ", ") + n;
    fail("the launcher's PMIx server runs " + std::to_string(names.size()) + " jobs (" + all +
         "): name the launcher of one job");
  }
  for (size_t i = 0; i < job.size(); ++i) {
    if (job[i].rank != i || job[i].pid <= 0) {
      fail("the process table of " + names[0] + " is not one process per rank from 0: rank " +
           std::to_string(job[i].rank) + " has pid " + std::to_string(job[i].pid));
    }
  }
  return job;
}

}  // namespace

int main(int argc, char** argv) {
  char* end = nullptr;
  errno = 0;
  long pid = argc == 2 ? std::strtol(argv[1], &end, 10) : 0;
  if (argc != 2 || end == argv[1] || *end != '\0' || errno != 0 || pid <= 0 || pid > 1L << 30) {
    std::fprintf(stderr, "usage: mqd-pmix-procs LAUNCHER_PID\n");
    return 2;
  }
  std::vector<Process> job;
  {
    Tool tool(static_cast<pid_t>(pid));
    job = jobOf(static_cast<pid_t>(pid));
  }
  for (auto& p : job) {
    std::printf("%u\t%d\t%s\t%s\n", p.rank, static_cast<int>(p.pid), p.host.c_str(),
                p.executable.c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
