// RegularFile and ReplacementFile: what the product reads (configuration, tokens, TLS and
// state files, recordings) is a regular file of bounded size, opened without waiting; what it
// writes replaces the file at its path, privately, and never writes through what was there.
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "RegularFile.h"
#include "ReplacementFile.h"
#include "ServerProcess.h"

using namespace mqd;
using mqd::harness::TempDir;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `f` in a child process and says whether it returned within `seconds` (a call that
// blocks is killed by SIGALRM there, not here).
bool returnsWithin(int seconds, const std::function<void()>& f) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(static_cast<unsigned>(seconds));
    try {
      f();
    } catch (...) {
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  closedir(d);
  return names;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("RegularFile: anything but a regular file is refused by what it is, at once") {
  TempDir dir;
  std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(returnsWithin(60, [&] { (void)readRegularFile(fifo, 100); }));  // never blocks: a loaded machine's slack
  CHECK(refusal([&] { readRegularFile(fifo, 100); }) == fifo + ": a FIFO, not a regular file");
  CHECK(refusal([&] { readRegularFile("/dev/zero", 100); }) ==
        "/dev/zero: a character device, not a regular file");
  CHECK(refusal([&] { readRegularFile(dir.path(), 100); }) ==
        dir.path() + ": a directory, not a regular file");
  try {
    readRegularFile(dir / "missing", 100);
    FAIL("read a missing file");
  } catch (const FileRefused& e) {
    CHECK(e.missing());
    CHECK(contains(e.what(), "No such file"));
  }
  std::ofstream(dir / "ok") << "hello\n";
  CHECK(readRegularFile(dir / "ok", 6) == "hello\n");
  CHECK(contains(refusal([&] { readRegularFile(dir / "ok", 5); }), "larger than 5 bytes"));
  // A link is followed unless refused (the server's state files).
  REQUIRE(symlink((dir / "ok").c_str(), (dir / "link").c_str()) == 0);
  CHECK(readRegularFile(dir / "link", 100) == "hello\n");
  CHECK(contains(refusal([&] { readRegularFile(dir / "link", 100, LastLink::Refuse); }),
                 "a symbolic link, not a regular file"));
}

TEST_CASE("ReplacementFile: a new private file in the place of whatever file or link was "
          "there") {
  TempDir dir;
  std::string victim = dir / "victim";
  std::ofstream(victim) << "precious\n";
  std::string path = dir / "out";
  REQUIRE(symlink(victim.c_str(), path.c_str()) == 0);
  mode_t old = umask(0);  // the mode is set on the descriptor, whatever the umask
  {
    ReplacementFile file(path, 0640);
    file.write("new\n", 4);
    // Until commit(), nothing is in place; the temporary file is private and hidden.
    struct stat st;
    REQUIRE(lstat(path.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    file.commit();
    file.write("more\n", 5);  // the descriptor goes on writing into the file now in place
  }
  umask(old);
  struct stat st;
  REQUIRE(lstat(path.c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(harness::fileText(path) == "new\nmore\n");
  CHECK(harness::fileText(victim) == "precious\n");
  // Abandoned before commit(): nothing changes and nothing is left behind.
  { ReplacementFile abandoned(path, 0600); }
  CHECK(harness::fileText(path) == "new\nmore\n");
  CHECK(entries(dir.path()) == std::set<std::string>{"out", "victim"});
  // A device, a FIFO or a directory is not replaced.
  CHECK(contains(refusal([&] { ReplacementFile f("/dev/null", 0600); }),
                 "/dev/null: cannot replace it: it is a character device"));
  std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(contains(refusal([&] { ReplacementFile f(fifo, 0600); }), "it is a FIFO"));
  CHECK(contains(refusal([&] { ReplacementFile f(dir.path() + "/", 0600); }),
                 "it names a directory"));
  CHECK(contains(refusal([&] { ReplacementFile f(dir / "no-such-dir/x", 0600); }),
                 "cannot create it: No such file or directory"));
}
