#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "ChildProgram.h"

using mqd::client::ProgramOutput;
using mqd::client::runProgram;

TEST_CASE("runProgram: what a program printed on stdout and stderr, apart") {
  ProgramOutput o = runProgram({"sh", "-c", "echo out; echo err >&2; echo more"},
                               std::chrono::seconds(30));
  CHECK(o.out == "out\nmore\n");
  CHECK(o.err == "err\n");
  // Its stdin is /dev/null: a program reading it ends at once.
  CHECK(runProgram({"cat"}, std::chrono::seconds(30)).out.empty());
}

TEST_CASE("startProgram: the program is never this process's child") {
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  REQUIRE(null >= 0);
  mqd::client::StartedProgram p =
      mqd::client::startProgram("/bin/sleep", {"sleep", "30"}, null, null, null);
  ::close(null);
  REQUIRE(p.pid > 0);
  REQUIRE(p.pidfd.get() >= 0);
  // A debugger reaping its own children finds nothing of ours, and we cannot wait for it.
  errno = 0;
  CHECK(::waitpid(p.pid, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  CHECK(::syscall(SYS_pidfd_send_signal, p.pidfd.get(), SIGKILL, nullptr, 0) == 0);
}

TEST_CASE("runProgram: a missing program and one that does not end say so") {
  CHECK_THROWS_WITH_AS(runProgram({"mqd-no-such-program"}, std::chrono::seconds(5)),
                       "cannot find mqd-no-such-program on PATH", std::runtime_error);
  CHECK_THROWS_WITH_AS(runProgram({"sleep", "60"}, std::chrono::milliseconds(200)),
                       "sleep did not end within 200 ms", std::runtime_error);
}
