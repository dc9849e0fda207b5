#include <doctest/doctest.h>

#include <capnp/message.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "LearnedLookups.h"
#include "LearnedMemory.h"
#include "StateFile.h"
#include "mqd.capnp.h"
#include "ServerProcess.h"

using namespace mqd;
using namespace mqd::server;
using mqd::harness::TempDir;

TEST_CASE("LearnedLookups: what one session saw, the next one loads; per DLL build") {
  TempDir dir;
  std::string state = dir / "state";
  std::set<LookupKey> seen{{LookupKey::Symbol, "ompi_comm_list", 0, ""},
                           {LookupKey::Type, "mca_pml_base_request_t", 0, ""},
                           {LookupKey::Field, "ompi_communicator_t", 0, "c_name"},
                           {LookupKey::Function, "MPIR_Breakpoint", 1, ""},
                           {LookupKey::SizeOf, "ompi_group_t", 0, ""}};
  {
    LearnedLookups first(state, "/usr/lib/libx.so", "abc123");
    CHECK(first.enabled());
    CHECK(first.load().empty());
    first.save(seen);
  }
  struct stat st;
  REQUIRE(::stat(state.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  LearnedLookups second(state, "/usr/lib/libx.so", "abc123");
  auto loaded = second.load();
  std::set<LookupKey> got(loaded.begin(), loaded.end());
  CHECK(got.size() == seen.size());
  for (const LookupKey& k : seen) CHECK(got.count(k) == 1);
  // Another build of the DLL learns for itself.
  LearnedLookups other(state, "/usr/lib/libx.so", "def456");
  CHECK(other.load().empty());
  // No state directory, or no build id: learning is off.
  CHECK_FALSE(LearnedLookups("", "x", "abc123").enabled());
  CHECK_FALSE(LearnedLookups(state, "x", "").enabled());
}

TEST_CASE("LearnedLookups and LearnedMemory: an unreadable file is ignored, then replaced") {
  TempDir dir;
  std::string state = dir / "state";
  ::mkdir(state.c_str(), 0700);
  std::ofstream(state + "/lookups-abc123.capnp") << "this is not a Cap'n Proto message";
  LearnedLookups lookups(state, "x", "abc123");
  CHECK(lookups.load().empty());
  lookups.save({{LookupKey::Symbol, "s", 0, ""}});
  CHECK(LearnedLookups(state, "x", "abc123").load().size() == 1);

  LearnedMemory memory(state, "abc123");
  std::ofstream(state + "/blocks-abc123-00000000000000aa.capnp") << std::string(100, '\xff');
  CHECK(memory.load(0xaa).windows.empty());
  memory.save(0xaa, {{{0x1000, 4096}, {0x9000, 65536}}, {{0x1000, 4096}}});
  LearnedMemory next(state, "abc123");  // a later session reads the file
  auto record = next.load(0xaa);
  REQUIRE(record.windows.size() == 2);
  CHECK(record.windows[1].address == 0x9000);
  CHECK(record.windows[1].size == 65536);
  REQUIRE(record.setUp.size() == 1);  // what the set-up read, apart
  CHECK(record.setUp[0].address == 0x1000);
  CHECK(next.load(0xbb).windows.empty());  // another process
  CHECK(next.load(0).windows.empty());     // no fingerprint: nothing to recognise
}

TEST_CASE("LearnedMemory: a record without the mark of a whole one (an older server's) is "
          "ignored") {
  TempDir dir;
  std::string state = dir / "state";
  LearnedMemory(state, "abc123").save(0xaa, {{{0x1000, 512}}, {}});
  std::string path = state + "/blocks-abc123-00000000000000aa.capnp";
  capnp::MallocMessageBuilder message;
  auto learned = message.initRoot<wire::LearnedBlocks>();
  learned.setBuildId("abc123");
  learned.setFingerprint(0xaa);
  auto list = learned.initWindows(1);
  list[0].setAddress(0x1000);
  list[0].setSize(512);
  CHECK(LearnedMemory(state, "abc123").load(0xaa).windows.size() == 1);
  REQUIRE(writeStateFile(path, message));  // the same, but not marked whole
  CHECK(LearnedMemory(state, "abc123").load(0xaa).windows.empty());
}

TEST_CASE("LearnedMemory: a job of more ranks than the cap keeps every rank's record; the next "
          "session prunes the oldest") {
  TempDir dir;
  std::string state = dir / "state";
  constexpr size_t kCap = 4;
  auto path = [&](uint64_t fingerprint) {
    char name[32];
    std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(fingerprint));
    return state + "/blocks-abc123-" + name + ".capnp";
  };
  auto kept = [&](uint64_t fingerprint) { return ::access(path(fingerprint).c_str(), F_OK) == 0; };
  {
    LearnedMemory job(state, "abc123", kCap);  // one session over 6 ranks
    for (uint64_t rank = 1; rank <= 6; ++rank) job.save(rank, {{{0x1000 * rank, 512}}, {}});
  }
  for (uint64_t rank = 1; rank <= 6; ++rank) {
    CHECK(kept(rank));
    CHECK(LearnedMemory(state, "abc123", kCap).load(rank).windows.size() == 1);
  }
  // The next session's first save keeps the newest kCap files: ranks 1 to 3, the oldest, go.
  for (uint64_t rank = 1; rank <= 6; ++rank) {
    struct timespec times[2] = {{static_cast<time_t>(1000 + rank), 0},
                                {static_cast<time_t>(1000 + rank), 0}};
    REQUIRE(::utimensat(AT_FDCWD, path(rank).c_str(), times, 0) == 0);
  }
  LearnedMemory next(state, "abc123", kCap);
  next.save(7, {{{0x7000, 512}}, {}});
  next.save(8, {{{0x8000, 512}}, {}});  // pruned once per session: not again
  CHECK_FALSE(kept(1));
  CHECK_FALSE(kept(2));
  CHECK_FALSE(kept(3));
  for (uint64_t rank = 4; rank <= 8; ++rank) CHECK(kept(rank));
}

TEST_CASE("LearnedLookups: a link planted in the state directory is neither written through "
          "nor read") {
  TempDir dir;
  std::string state = dir / "state";
  ::mkdir(state.c_str(), 0700);
  std::string victim = dir / "victim";
  std::ofstream(victim) << "precious\n";
  std::string file = state + "/lookups-abc123.capnp";
  // Where a temporary file used to be made (FILE.tmp.PID), and the file itself.
  std::string oldTemporary = file + ".tmp." + std::to_string(::getpid());
  REQUIRE(::symlink(victim.c_str(), oldTemporary.c_str()) == 0);
  REQUIRE(::symlink(victim.c_str(), file.c_str()) == 0);
  LearnedLookups learned(state, "x", "abc123");
  CHECK(learned.load().empty());  // the link is not read
  learned.save({{LookupKey::Symbol, "s", 0, ""}});
  CHECK(mqd::harness::fileText(victim) == "precious\n");
  struct stat st;
  REQUIRE(::lstat(file.c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(LearnedLookups(state, "x", "abc123").load().size() == 1);
}

TEST_CASE("LearnedLookups: a truncated file is ignored without a word on stderr but our warning") {
  // In a worker, stderr is the vendor DLL's output, relayed to the debugger: nothing else may
  // write there (the server's own log has moved off it).
  TempDir dir;
  std::string state = dir / "state";
  LearnedLookups(state, "x", "abc123").save({{LookupKey::Symbol, "s", 0, ""},
                                            {LookupKey::Type, std::string(40000, 't'), 0, ""}});
  std::string file = state + "/lookups-abc123.capnp";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  REQUIRE(bytes.size() > 1000);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  std::string printed;
  {
    mqd::harness::StderrCapture capture;
    CHECK(LearnedLookups(state, "x", "abc123").load().empty());
    printed = capture.text();
  }
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.find("ignoring unreadable") != std::string::npos);
  }
}
