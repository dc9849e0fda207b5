// Record and replay with the harness as the debugger and the test DLL, which uses every
// callback: sessions recorded (MQD_PROXY_RECORD) in every cache policy, and across a lost
// session, replay against a fresh server with every result matched and every request
// answered from the recording; a recording that cannot be written never disturbs the session;
// the replay command's usage errors. (tests/e2e/e2e_replay.py does the same with gdb and a
// live Open MPI job, and compares the output with the live dump.)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "RecordFile.h"
#include "RunCommand.h"
#include "ServerProcess.h"
#include "ShimRig.h"
#include "TestPaths.h"
#include "mqd_proxy.h"

using namespace mqd::harness;
using namespace std::chrono_literals;

namespace {

ServerProcess startServer(TempDir& dir, const std::string& name) {
  return ServerProcess(mqd::test::kServer,
                       {"--listen", "unix:" + (dir / (name + ".sock")), "--dll",
                        mqd::test::kTestDll3, "--log-file", dir / (name + ".log")});
}

// The shim's environment: this server, this policy, recording into `recording`.
void configure(const ServerProcess& server, const char* cache, const std::string& recording,
               TempDir& dir) {
  setenv("MQD_PROXY_SERVER", server.endpoint().c_str(), 1);
  setenv("MQD_PROXY_DLL", mqd::test::kTestDll3, 1);
  setenv("MQD_PROXY_LOG_FILE", (dir / "shim.log").c_str(), 1);
  setenv("MQD_PROXY_LOG", "info", 1);  // a lost connection (killWorkerBetweenCalls)
  setenv("MQD_PROXY_CACHE", cache, 1);
  setenv("MQD_PROXY_COMPRESS", "on", 1);
  setenv("MQD_PROXY_RECORD", recording.c_str(), 1);
}

Command replay(const ServerProcess& server, const std::string& args) {
  return run(std::string(mqd::test::kCli) + " --server " + server.endpoint() + " replay " + args);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What a debugger does in a session: set-up, two refreshes, error texts, the level-3 job.
int useSession(Rig& rig) {
  rig.setUp();
  int ops = rig.refresh();
  ops += rig.refresh();
  rig.errorText(mqs_no_information);
  rig.errorText(4242);
  rig.dll().setup_job(reinterpret_cast<mqs_job*>(rig.job), rig.d->jobCallbacks());
  return ops;
}

// "prlimit --as=BYTES " to bound a command's memory; nothing under AddressSanitizer, whose
// shadow memory alone takes terabytes of address space (the time limit bounds it then).
std::string addressSpaceLimit(const char* bytes) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;
  return "";
#else
  return std::string("prlimit --as=") + bytes + " ";
#endif
}

}  // namespace

TEST_CASE("record and replay: every cache policy; every result matched, nothing unrecorded") {
  for (const char* cache : {"off", "call", "epoch"}) {
    INFO("MQD_PROXY_CACHE=", cache);
    TempDir dir;
    std::string recording = dir / "session.mqdrec";
    {
      ServerProcess live = startServer(dir, "live");
      configure(live, cache, recording, dir);
      Rig rig(20);
      CHECK(useSession(rig) == 2 * 20 * 3 * 5);
    }  // the shim unloads: the recording is complete
    unsetenv("MQD_PROXY_RECORD");
    ServerProcess fresh = startServer(dir, "fresh");
    Command r = replay(fresh, recording + " --stats");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(contains(r.output, "every result matched the recording"));
    CHECK(contains(r.output, "(0 not recorded, 0 from another epoch)"));
    CHECK(contains(r.output, "Inferior 1: process 0"));  // no label: the set-up order
    Command json = replay(fresh, recording + " --json");
    CHECK(json.status == 0);
    CHECK(contains(json.output, "\"communicators\": ["));
  }
}

TEST_CASE("record and replay: a session lost and re-established replays as two sessions") {
  TempDir dir;
  std::string recording = dir / "session.mqdrec";
  {
    ServerProcess live = startServer(dir, "live");
    configure(live, "epoch", recording, dir);
    Rig rig(5);
    rig.setUp();
    killWorkerBetweenCalls(live.pid(), dir / "shim.log");
    CHECK(rig.refresh() == 5 * 3 * 5);  // on a new worker, the set-up replayed first
  }
  unsetenv("MQD_PROXY_RECORD");
  ServerProcess fresh = startServer(dir, "fresh");
  Command r = replay(fresh, recording);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "in 2 session(s)"));
  CHECK(contains(r.output, "every result matched the recording"));
}

TEST_CASE("a DLL without mqs_get_comm_group: groups unknown in the replay, one shim warning") {
  // MPICH's DLL has no mqs_get_comm_group; the level-2 test DLL neither. The shim answers
  // MQD_PROXY_ERR_NO_ENTRY_POINT at every call, and logs it once; the replay's dump shows the
  // group as unknown (null), as the gdb front end does (frontends/gdb/mqd_gdb/dump.py).
  TempDir dir;
  std::string recording = dir / "session.mqdrec";
  auto server = [&](const std::string& name) {
    return ServerProcess(mqd::test::kServer,
                         {"--listen", "unix:" + (dir / (name + ".sock")), "--dll",
                          mqd::test::kTestDll2, "--log-file", dir / (name + ".log")});
  };
  {
    ServerProcess live = server("live");
    configure(live, "epoch", recording, dir);
    setenv("MQD_PROXY_DLL", mqd::test::kTestDll2, 1);
    Rig rig(3);
    rig.setUp();
    int asked = 0;
    for (int round = 0; round < 2; ++round) {
      REQUIRE(rig.dll().update_communicator_list(rig.p()) == mqs_ok);
      REQUIRE(rig.dll().setup_communicator_iterator(rig.p()) == mqs_ok);
      do {
        mqs_communicator c;
        REQUIRE(rig.dll().get_communicator(rig.p(), &c) == mqs_ok);
        int ranks[64];
        CHECK(rig.dll().get_comm_group(rig.p(), ranks) == MQD_PROXY_ERR_NO_ENTRY_POINT);
        ++asked;
      } while (rig.dll().next_communicator(rig.p()) == mqs_ok);
    }
    CHECK(asked > 2);
  }
  unsetenv("MQD_PROXY_RECORD");
  std::string log = slurp(dir / "shim.log");
  size_t lines = 0;
  for (size_t at = log.find("mqs_get_comm_group is not provided"); at != std::string::npos;
       at = log.find("mqs_get_comm_group is not provided", at + 1)) {
    ++lines;
  }
  CHECK(lines == 1);
  ServerProcess fresh = server("fresh");
  Command json = replay(fresh, recording + " --json");
  INFO(json.output);
  CHECK(json.status == 0);
  CHECK(contains(json.output, "\"group\": null"));
  CHECK(!contains(json.output, "\"group\": {"));
  CHECK(!contains(json.output, "does not provide"));
}

TEST_CASE("record: a recording that cannot be written never disturbs the session") {
  TempDir dir;
  ServerProcess server = startServer(dir, "live");
  // A missing directory (the file cannot be created) and a full disk (every write fails).
  for (std::string path : {dir / "no-such-dir/session.mqdrec", std::string("/dev/full")}) {
    INFO("MQD_PROXY_RECORD=", path);
    configure(server, "epoch", path, dir);
    {
      Rig rig(10);
      CHECK(useSession(rig) == 2 * 10 * 3 * 5);
    }
    std::string log = slurp(dir / "shim.log");
    CHECK(contains(log, "recording stopped (MQD_PROXY_RECORD): " + path));
    CHECK(contains(log, "the session goes on unrecorded"));
  }
  unsetenv("MQD_PROXY_RECORD");
}

TEST_CASE("replay: usage errors and unusable recordings exit 2, naming what is wrong") {
  TempDir dir;
  ServerProcess server = startServer(dir, "live");
  Command none = replay(server, "");
  CHECK(none.status == 2);
  CHECK(contains(none.output, "replay needs a recording"));
  Command option = replay(server, dir / "x --frobnicate");
  CHECK(option.status == 2);
  CHECK(contains(option.output, "unknown option \"--frobnicate\""));
  Command missing = replay(server, dir / "missing.mqdrec");
  CHECK(missing.status == 2);
  CHECK(contains(missing.output, dir / "missing.mqdrec"));
  CHECK(contains(missing.output, "cannot open"));
  std::ofstream(dir / "text.mqdrec") << "not a recording\n";
  Command text = replay(server, dir / "text.mqdrec");
  CHECK(text.status == 2);
  CHECK(contains(text.output, "not an mqd-proxy recording"));

  // A good recording, but no server there.
  std::string recording = dir / "session.mqdrec";
  {
    configure(server, "epoch", recording, dir);
    Rig rig(2);
    rig.setUp();
  }
  unsetenv("MQD_PROXY_RECORD");
  Command nowhere = run(std::string(mqd::test::kCli) + " --server unix:" + (dir / "none.sock") +
                        " replay " + recording);
  CHECK(nowhere.status == 2);
  CHECK(contains(nowhere.output, "cannot reach the server"));
}

TEST_CASE("replay: a compression bomb, /dev/zero, a FIFO, a directory: exit 2 at once, in "
          "bounded memory") {
  TempDir dir;
  std::string cli =
      "timeout -s KILL 120 " + addressSpaceLimit("2000000000") + std::string(mqd::test::kCli);
  // A right file header and recording Header, then one chunk that decompresses to 256 MiB of
  // the smallest valid message there is (16 bytes: one segment, one word, a null root), 16 Mi
  // of them. The unfixed reader needed some 5.8 GB for it, and ran out under this limit.
  std::string bomb = dir / "bomb.mqdrec";
  {
    capnp::MallocMessageBuilder header;
    header.initRoot<mqd::record::Header>().setFormatVersion(mqd::record::FORMAT_VERSION);
    auto words = capnp::messageToFlatArray(header);
    std::vector<unsigned char> file = mqd::client::recordFileHeader();
    auto headerChunk = mqd::client::recordChunk(words.asBytes());
    file.insert(file.end(), headerChunk.begin(), headerChunk.end());
    const unsigned char tiny[16] = {0, 0, 0, 0, 1, 0, 0, 0};
    std::vector<unsigned char> raw(256u << 20);
    for (size_t at = 0; at < raw.size(); at += sizeof tiny) {
      std::memcpy(raw.data() + at, tiny, sizeof tiny);
    }
    auto chunk = mqd::client::recordChunk(kj::arrayPtr(raw.data(), raw.size()), 19);
    file.insert(file.end(), chunk.begin(), chunk.end());
    std::ofstream(bomb, std::ios::binary)
        .write(reinterpret_cast<const char*>(file.data()), static_cast<long>(file.size()));
    MESSAGE("the bomb: " << file.size() << " bytes");
    CHECK(file.size() < 64 * 1024);
  }
  auto start = std::chrono::steady_clock::now();
  Command r = run(cli + " replay " + bomb);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(contains(r.output, bomb + ": chunk 2 at byte "));
  CHECK(contains(r.output, " holds more than 65536 messages, more than a chunk may"));
  CHECK(seconds < kLoadedMachineSlack.count());  // at once, not after decompressing it all

  std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& file : {fifo, std::string("/dev/zero"), dir.path()}) {
    INFO(file);
    Command c = run(cli + " replay " + file);
    INFO(c.output);
    CHECK(c.status == 2);
    CHECK(contains(c.output, file + ": "));
    CHECK(contains(c.output, "not a regular file"));
  }
}
