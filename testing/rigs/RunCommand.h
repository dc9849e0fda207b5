// RunCommand: runs a shell command for a test and keeps its exit status and its output
// (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace mqd::harness {

struct Command {
  int status;          // the exit status; -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

inline Command run(const std::string& cmd) {
  Command out{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.output.append(buf, n);
  int status = pclose(p);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace mqd::harness
