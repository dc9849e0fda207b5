// mqd-proxy graph SNAPSHOT.json [options]: the deadlock analysis of a saved whole-job snapshot
// (docs/deadlock.md, "Running it"). The analysis is Python (frontends/analysis/mqd_analysis, the
// same code `mqd graph` runs in gdb): this command replaces itself with
// `python3 -B -m mqd_analysis graph OPERANDS...`, the package on PYTHONPATH, so the analysis's
// output, messages and exit status (0 analysis made, 2 bad input or usage, 3 an output could
// not be produced) are the command's own.
//
// The package is found relative to this executable, never by an absolute path of the build:
// installed, bin/mqd-proxy and share/mqd-proxy/analysis share a prefix; in a build, the build
// stages it in BUILD/share/mqd-proxy/analysis (frontends/CMakeLists.txt). cli/CMakeLists.txt
// gives both relative paths (MQD_ANALYSIS_FROM_INSTALLED_BIN, MQD_ANALYSIS_FROM_BUILT_BIN).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "Cli.h"

namespace mqd::client::cli {
namespace {

constexpr int kUsageOrInput = 2;  // the analysis's own status for bad input or usage

// The directory holding this executable ("" if /proc does not say).
std::string executableDir() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  path[n] = '\0';
  char* slash = std::strrchr(path, '/');
  if (slash == nullptr) return "";
  *slash = '\0';
  return path;
}

bool isFile(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

}  // namespace

const char* graphUsage() {
  return "SNAPSHOT.json [--json] [--dot FILE] [--svg FILE] [--png FILE] [--html FILE] "
         "[--compare LATER.json]\n"
         "Who waits on whom: the deadlock analysis of a whole-job snapshot saved by gdb's `mqd "
         "snapshot` (or `mqd dump --all --json`), without a debugger or a server. Prints the "
         "verdict, the ranks of each deadlock and its likely cause (--json: the analysis as "
         "JSON); --dot, --svg, --png and --html write the picture and a self-contained HTML "
         "report (SVG, PNG and HTML need Graphviz's dot); --compare reports which ranks are "
         "stuck and which moved in a later snapshot. Runs python3 with the analysis installed "
         "in share/mqd-proxy/analysis. Exit status 0 when the analysis was made (whatever the "
         "verdict), 2 for bad input or usage, 3 when an output could not be written.";
}

int graphCommand(Context& c) {
  std::vector<std::string> operands = c.args;
  if (c.json) operands.insert(operands.begin(), "--json");  // mqd-proxy --json graph FILE
  std::string here = executableDir();
  std::vector<std::string> tried;
  std::string package;
  for (const char* relative : {MQD_ANALYSIS_FROM_INSTALLED_BIN, MQD_ANALYSIS_FROM_BUILT_BIN}) {
    std::string dir = here + "/" + relative;
    if (isFile(dir + "/mqd_analysis/__main__.py")) {
      package = dir;
      break;
    }
    tried.push_back(dir);
  }
  if (package.empty()) {
    std::string where;
    for (const std::string& t : tried) where += (where.empty() ? "" : " or ") + t;
    std::fprintf(stderr,
                 "mqd-proxy: graph: the deadlock analysis (the Python package mqd_analysis) "
                 "is not installed: it is not in %s\n",
                 where.c_str());
    return kUsageOrInput;
  }
  // Ours first; whatever the user had on PYTHONPATH after it.
  const char* old = std::getenv("PYTHONPATH");
  std::string path = package + (old != nullptr && *old != '\0' ? ":" + std::string(old) : "");
  ::setenv("PYTHONPATH", path.c_str(), 1);
  ::setenv("MQD_ANALYSIS_PROG", "mqd-proxy", 1);  // its usage and messages name this command
  // Python 3.11 and later: not the working directory before PYTHONPATH, so a directory named
  // mqd_analysis where the user stands is not run instead (older versions ignore it).
  ::setenv("PYTHONSAFEPATH", "1", 1);
  // -B: no bytecode written into the installed package (a package manager removes it whole).
  std::vector<std::string> argv = {"python3", "-B", "-m", "mqd_analysis", "graph"};
  argv.insert(argv.end(), operands.begin(), operands.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::fflush(stdout);
  ::execvp("python3", args.data());
  int error = errno;
  if (error == ENOENT) {
    std::fprintf(stderr,
                 "mqd-proxy: graph needs python3, which is not on PATH (Debian: apt-get install "
                 "python3)\n");
  } else {
    std::fprintf(stderr, "mqd-proxy: graph: cannot run python3: %s\n", std::strerror(error));
  }
  return kUsageOrInput;
}

}  // namespace mqd::client::cli
