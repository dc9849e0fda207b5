// make-corpus: seeds for the fuzz targets, recorded from real sessions.
//
// A real mqd-proxy-server (this build's, with the level-3 test DLL, configured as the fuzz
// target's worker: SeedSessions.h) is reached through a recording relay; the real shim, loaded
// into the debugger harness, runs the usual debugger sequences (set-up, refreshes) under every
// cache policy, with and without compression, plus a refused session and a `mqd-proxy stats`
// connection. A second server, which keeps learned state, provides the state files. Then
//   corpus/fuzz_server_connection/  every connection's client-to-server bytes
//   corpus/fuzz_parsers/             the walks the server recorded (taken from its replies),
//                                    Bulk payloads, the server's state files, endpoints
// A second test case writes, from no session, the recordings that reach each of the recording
// reader's limits in fuzz_parsers (SeedRecordings.h), and issue 16's compression bomb.
// Run: MQD_FUZZ_CORPUS_OUT=DIR make-corpus (a doctest program; writes into DIR/<target>/).
// The committed corpus is this output minimised with libFuzzer's -merge=1 (README.md).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <capnp/rpc.capnp.h>
#include <capnp/schema.h>
#include <capnp/serialize.h>
#include <kj/io.h>
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "Bulk.h"
#include "Handshake.h"
#include "SeedRecordings.h"
#include "SeedSessions.h"
#include "ServerProcess.h"
#include "SetUpRecall.h"
#include "ShimRig.h"
#include "TestPaths.h"
#include "mqd.capnp.h"

using namespace mqd::harness;
using namespace std::chrono_literals;

namespace {

// One relayed connection: the bytes each way.
struct Recording {
  std::string up;    // client to server
  std::string down;  // server to client
};

// Leaves the bytes after the admission handshake (common/Handshake.h): the supervisor completes
// it before a worker's serveConnection, which fuzz_server_connection fuzzes, reads anything.
void dropHandshake(Recording& r) {
  REQUIRE(r.up.size() >= mqd::kHelloHeaderBytes);
  REQUIRE(r.up.compare(0, sizeof mqd::kHandshakeMagic,
                       std::string(mqd::kHandshakeMagic, sizeof mqd::kHandshakeMagic)) == 0);
  size_t token = (static_cast<size_t>(static_cast<uint8_t>(r.up[6])) << 8) |
                 static_cast<uint8_t>(r.up[7]);
  r.up.erase(0, mqd::kHelloHeaderBytes + token);
  size_t reply = r.down.find('\n');
  REQUIRE(reply != std::string::npos);
  REQUIRE(r.down.compare(0, reply + 1, mqd::acceptLine()) == 0);
  r.down.erase(0, reply + 1);
}

sockaddr_un unixAddress(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) throw std::runtime_error("socket path too long: " + path);
  std::strcpy(a.sun_path, path.c_str());
  return a;
}

// Listens on a unix socket and relays each connection to `upstream`, recording both
// directions. Connections are served one at a time (the sessions here are sequential).
class RecordingRelay {
 public:
  RecordingRelay(const std::string& listenPath, const std::string& upstreamPath)
      : upstream_(upstreamPath), listener_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un a = unixAddress(listenPath);
    REQUIRE(listener_.get() >= 0);
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener_.get(), 8) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~RecordingRelay() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }

  // Waits until `n` connections have ended in all, and returns those not taken yet.
  std::vector<Recording> take(size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    REQUIRE(ended_.wait_for(lock, 20s, [&] { return count_ >= n; }));
    return std::move(done_);
  }

 private:
  void serve() {
    for (;;) {
      kj::AutoCloseFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (client.get() < 0) return;
      kj::AutoCloseFd server(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_un a = unixAddress(upstream_);
      if (::connect(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
      Recording r = relay(client.get(), server.get());
      std::lock_guard<std::mutex> lock(mutex_);
      done_.push_back(std::move(r));
      ++count_;
      ended_.notify_all();
    }
  }

  // Copies both ways until both directions have ended.
  static Recording relay(int client, int server) {
    Recording r;
    bool upOpen = true, downOpen = true;
    char buffer[65536];
    while (upOpen || downOpen) {
      pollfd fds[2] = {{upOpen ? client : -1, POLLIN, 0}, {downOpen ? server : -1, POLLIN, 0}};
      if (::poll(fds, 2, 30000) <= 0) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        int from = i == 0 ? client : server, to = i == 0 ? server : client;
        ssize_t n = ::read(from, buffer, sizeof buffer);
        if (n <= 0) {
          ::shutdown(to, SHUT_WR);
          (i == 0 ? upOpen : downOpen) = false;
          continue;
        }
        (i == 0 ? r.up : r.down).append(buffer, static_cast<size_t>(n));
        for (ssize_t done = 0; done < n;) {
          ssize_t w = ::send(to, buffer + done, static_cast<size_t>(n - done), MSG_NOSIGNAL);
          if (w <= 0) break;
          done += w;
        }
      }
    }
    return r;
  }

  std::string upstream_;
  kj::AutoCloseFd listener_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable ended_;
  std::vector<Recording> done_;
  size_t count_ = 0;
};

// Every Cap'n Proto message in a recorded stream, in order.
template <typename Visit>
void forEachMessage(const std::string& bytes, Visit&& visit) {
  kj::ArrayInputStream in(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()),
                                       bytes.size()));
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 1ull << 30;
  while (in.tryGetReadBuffer().size() > 0) {
    capnp::InputStreamMessageReader reader(in, options);
    visit(reader.getRoot<capnp::rpc::Message>());
  }
}

// The walks the server sent in its replies to updateCommunicatorList (payload bytes as the
// server built them, before any compression). Question ids are reused once a question is
// finished, so the k-th Return for an id answers the k-th question (Call or Bootstrap) with it.
std::vector<std::string> recordedWalks(const Recording& r) {
  std::map<uint32_t, std::deque<bool>> asked;  // question id -> "is updateCommunicatorList"
  forEachMessage(r.up, [&](capnp::rpc::Message::Reader m) {
    if (m.isCall()) {
      auto call = m.getCall();
      asked[call.getQuestionId()].push_back(
          call.getInterfaceId() == capnp::typeId<mqd::wire::Session>() &&
          call.getMethodId() == capnp::Schema::from<mqd::wire::Session>()
                                    .getMethodByName("updateCommunicatorList")
                                    .getIndex());
    } else if (m.isBootstrap()) {
      asked[m.getBootstrap().getQuestionId()].push_back(false);
    }
  });
  std::vector<std::string> walks;
  forEachMessage(r.down, [&](capnp::rpc::Message::Reader m) {
    if (!m.isReturn()) return;
    auto& questions = asked[m.getReturn().getAnswerId()];
    REQUIRE_FALSE(questions.empty());
    bool wanted = questions.front();
    questions.pop_front();
    if (!wanted || !m.getReturn().isResults()) return;
    auto results = m.getReturn()
                       .getResults()
                       .getContent()
                       .getAs<mqd::wire::Session::UpdateCommunicatorListResults>();
    if (results.getWalk().getSize() == 0) return;
    kj::Array<kj::byte> walk = mqd::readBulk(results.getWalk());
    walks.emplace_back(reinterpret_cast<const char*>(walk.begin()), walk.size());
  });
  return walks;
}

struct Corpus {
  std::string dir;
  std::set<std::string> written;
  void add(const std::string& target, const std::string& name, const std::string& bytes) {
    if (!written.insert(target + "\n" + bytes).second) return;  // the same bytes once
    std::ofstream(dir + "/" + target + "/" + name, std::ios::binary) << bytes;
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void configure(const std::string& endpoint, const std::string& dll, const char* cache,
               const char* compress, TempDir& dir) {
  setenv("MQD_PROXY_SERVER", endpoint.c_str(), 1);
  setenv("MQD_PROXY_DLL", dll.c_str(), 1);
  setenv("MQD_PROXY_LOG_FILE", (dir / "shim.log").c_str(), 1);
  setenv("MQD_PROXY_CACHE", cache, 1);
  setenv("MQD_PROXY_COMPRESS", compress, 1);
}

}  // namespace

TEST_CASE("record real sessions as fuzz seeds") {
  const char* out = std::getenv("MQD_FUZZ_CORPUS_OUT");
  REQUIRE_MESSAGE(out != nullptr, "set MQD_FUZZ_CORPUS_OUT to the corpus directory to write");
  Corpus corpus{out, {}};
  for (const char* t : {"fuzz_server_connection", "fuzz_parsers"}) {
    REQUIRE(system(("mkdir -p '" + corpus.dir + "/" + t + "'").c_str()) == 0);
  }

  TempDir dir;
  // Configured as fuzz_server_connection's worker (SeedSessions.h).
  const std::string blockSize = std::to_string(mqd::fuzz::kSeedBlockSize);
  ServerProcess server(mqd::test::kServer,
                       {"--listen", "unix:" + (dir / "s.sock"), "--dll", mqd::test::kTestDll3,
                        "--log-file", dir / "server.log", "--state-dir", "none",
                        "--block-size", blockSize, "--no-lookup-discovery"});
  RecordingRelay relay(dir / "r.sock", dir / "s.sock");
  const std::string relayed = "unix:" + (dir / "r.sock");

  std::vector<std::pair<std::string, Recording>> sessions;
  size_t connections = 0;
  auto record = [&](const std::string& name) {
    for (Recording& r : relay.take(++connections)) {
      dropHandshake(r);
      sessions.emplace_back(name, std::move(r));
    }
  };

  // A session: set-up and two refreshes (the second one, under the epoch policy, served from
  // the recorded walk).
  auto session = [&](const std::string& endpoint, const char* cache, const char* compress,
                     size_t ops) {
    configure(endpoint, mqd::test::kTestDll3, cache, compress, dir);
    Rig rig(ops);
    rig.setUp();
    CHECK(rig.refresh() == static_cast<int>(ops * 3 * 5));
    CHECK(rig.refresh() == static_cast<int>(ops * 3 * 5));
    char* m = nullptr;
    rig.dll().image_has_queues(rig.i(), &m);
  };
  // Every cache policy, compressed or not, with small queues; larger ones once.
  for (const char* cache : {"off", "call", "epoch"}) {
    for (const char* compress : {"off", "on"}) {
      session(relayed, cache, compress, 2);
      record(std::string("session-") + cache + "-compress-" + compress);
    }
  }
  session(relayed, "epoch", "on", 40);
  record("session-epoch-compress-on-40-ops");
  // Look-ups answered ahead with mqs_setup_image: the shim learns them in one session
  // (MQD_PROXY_STATE_DIR) and sends them, with its debugger's answers, in the next.
  setenv("MQD_PROXY_STATE_DIR", (dir / "shim-state").c_str(), 1);
  session(relayed, "epoch", "off", 2);
  record("session-epoch-shim-learning");
  session(relayed, "epoch", "off", 2);
  record("session-epoch-lookups-ahead");
  setenv("MQD_PROXY_STATE_DIR", "off", 1);
  // A job of three ranks refreshed rank by rank: from the second round on, the first rank's
  // update carries the others' memory and the server refreshes them ahead (`others`).
  configure(relayed, mqd::test::kTestDll3, "epoch", "on", dir);
  {
    std::vector<std::unique_ptr<TargetModel>> targets;
    DebuggerHarness d(mqd::test::kShim, DebuggerHarness::Options{});
    std::vector<mqs_process*> ranks;
    d.dll().setup_basic_callbacks(d.basicCallbacks());
    for (int r = 0; r < 3; ++r) {
      targets.push_back(std::make_unique<TargetModel>(8, false));
      layOut(*targets.back(), standardJob(2, 3, r));
      auto* image = d.addImage(*targets.back(), "a.out");
      ranks.push_back(reinterpret_cast<mqs_process*>(d.addProcess(image, r, "rank")));
      char* m = nullptr;
      CHECK(d.dll().setup_image(reinterpret_cast<mqs_image*>(image), d.imageCallbacks()) ==
            mqs_ok);
      CHECK(d.dll().image_has_queues(reinterpret_cast<mqs_image*>(image), &m) == mqs_ok);
      CHECK(d.dll().setup_process(ranks.back(), d.processCallbacks()) == mqs_ok);
      CHECK(d.dll().process_has_queues(ranks.back(), &m) == mqs_ok);
    }
    for (int round = 0; round < 3; ++round) {
      for (mqs_process* p : ranks) {
        CHECK(d.dll().update_communicator_list(p) == mqs_ok);
        CHECK(d.dll().setup_communicator_iterator(p) == mqs_ok);
      }
    }
  }
  record("session-epoch-job-refreshed-ahead");
  // A session the server refuses (a DLL not on its allow-list).
  configure(relayed, "/no/such/libmpi_dbg_msgq.so", "epoch", "off", dir);
  {
    Rig rig(1);
    rig.dll().setup_basic_callbacks(rig.d->basicCallbacks());
    CHECK(rig.dll().setup_image(rig.i(), rig.d->imageCallbacks()) != mqs_ok);
  }
  record("refused-session");
  // The CLI's stats connection (describe, stats).
  REQUIRE(system((std::string(mqd::test::kCli) + " --server " + relayed + " stats >/dev/null")
                     .c_str()) == 0);
  record("stats");

  size_t walks = 0;
  for (auto& [name, r] : sessions) {
    corpus.add("fuzz_server_connection", name, r.up);
    int n = 0;
    for (const std::string& walk : recordedWalks(r)) {
      ++walks;
      std::string tag = name + "-" + std::to_string(n++);
      // 2: RecordedWalk, sent raw (0) or compressed (1).
      corpus.add("fuzz_parsers", "walk-" + tag, std::string("\x02\x00", 2) + walk);
      corpus.add("fuzz_parsers", "walk-zstd-" + tag, std::string("\x02\x01", 2) + walk);
      // 1: the same bytes as a Bulk, raw and zstd: flag, announced size, payload.
      capnp::MallocMessageBuilder message;
      auto bulk = message.initRoot<mqd::wire::Bulk>();
      mqd::setBulk(bulk, kj::arrayPtr(reinterpret_cast<const kj::byte*>(walk.data()), walk.size()),
                   true);
      std::string size(4, '\0');
      for (int i = 0; i < 4; ++i) size[i] = static_cast<char>(walk.size() >> (8 * i));
      if (bulk.isZstd()) {
        auto z = bulk.getZstd();
        corpus.add("fuzz_parsers", "bulk-zstd-" + tag,
                   std::string("\x01\x01", 2) + size +
                       std::string(reinterpret_cast<const char*>(z.begin()), z.size()));
      }
      corpus.add("fuzz_parsers", "bulk-raw-" + tag, std::string("\x01\x00", 2) + size + walk);
    }
  }
  CHECK(walks > 0);

  // 3, 4: the state files a server writes (learned look-ups and memory windows), from a
  // session with a server that keeps them.
  ServerProcess learning(mqd::test::kServer,
                         {"--listen", "unix:" + (dir / "l.sock"), "--dll", mqd::test::kTestDll3,
                          "--log-file", dir / "learning.log", "--block-size", blockSize});
  session(learning.endpoint(), "epoch", "off", 2);
  size_t stateFiles = 0;
  for (int tries = 0; tries < 100 && stateFiles == 0; ++tries) {
    std::this_thread::sleep_for(100ms);
    if (DIR* d = ::opendir(learning.stateDir().c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        char selector = name.rfind("lookups-", 0) == 0 ? 3 : name.rfind("blocks-", 0) == 0 ? 4 : 0;
        if (selector == 0 || name.find(".tmp") != std::string::npos) continue;
        corpus.add("fuzz_parsers", "state-" + name,
                   std::string(1, selector) + readFile(learning.stateDir() + "/" + name));
        ++stateFiles;
      }
      ::closedir(d);
    }
  }
  CHECK(stateFiles > 0);

  // 6: the shim's set-up records, as SetUpRecall writes them.
  {
    mqd::client::SetUpRecall recall(dir / "shim-state", "seed");
    mqd::client::DebuggerSide::LookupResult symbol, field;
    symbol.written = true;
    symbol.address = 0x1000;
    field.value = 8;
    const mqd::LookupKey kSymbol{mqd::LookupKey::Symbol, "tmpi_comm_list", 0, ""};
    const mqd::LookupKey kField{mqd::LookupKey::Field, "tmpi_comm", 1, "next"};
    mqd::client::SetUpRecall::Answers answers{{kSymbol, symbol}, {kField, field}};
    mqd::client::SetUpRecall::Record record;
    mqd::ConsumedLookups::Lookups image{{kField, false}, {kSymbol, false}};
    mqd::ConsumedLookups::Lookups taken{{kSymbol, true}};
    record.lookupDigest = *mqd::client::SetUpRecall::digestOf(image, answers);
    record.lookups = recall.share(image);
    record.image.setUp.effects = {{mqd::client::SetUpRecall::Effect::PutInfo, {}},
                                  {mqd::client::SetUpRecall::Effect::Dprints, "image set up"}};
    record.image.hasQueues.message = {mqd::client::SetUpRecall::Message::Null, {}};
    mqd::client::SetUpRecall::ProcessOutcome process;
    process.lookupDigest = *mqd::client::SetUpRecall::digestOf(taken, answers);
    process.lookups = recall.share(taken);
    process.reads = {{0x1000, 8, 0x1000, 8}};
    process.setUp.effects = {{mqd::client::SetUpRecall::Effect::PutInfo, {}}};
    process.hasQueues.message = {mqd::client::SetUpRecall::Message::Text, "none in %s"};
    record.process = process;
    ::mkdir((dir / "shim-state").c_str(), 0700);
    recall.keep(record);
    recall.save();
    corpus.add("fuzz_parsers", "state-setups",
               std::string(1, 6) + readFile(dir / "shim-state" + "/setups-seed.capnp"));
  }

  // 0: endpoints as users write them (docs/configuration.md: --listen, MQD_PROXY_SERVER).
  int e = 0;
  for (const char* text : {"unix:/run/user/1000/mqd-proxy.sock", "unix:relative.sock",
                           "tcp:127.0.0.1:4000", "tcp:[::1]:0", "tcp:node17.cluster:65535",
                           "tcp:[fe80::1%eth0]:4000"}) {
    corpus.add("fuzz_parsers", "endpoint-" + std::to_string(e++), std::string(1, '\0') + text);
  }
  MESSAGE(sessions.size() << " connections, " << walks << " walks, " << stateFiles
                          << " state files recorded");
}

namespace {

// 5, whole-file mode: a recording made of `chunks` (each whole messages in stream framing)
// behind a right file header and record::Header.
std::string recordingSeed(const std::vector<std::vector<unsigned char>>& chunks, int level) {
  capnp::MallocMessageBuilder header;
  header.initRoot<mqd::record::Header>().setFormatVersion(mqd::record::FORMAT_VERSION);
  auto words = capnp::messageToFlatArray(header);
  std::vector<unsigned char> file = mqd::client::recordFileHeader();
  auto append = [&](kj::ArrayPtr<const kj::byte> raw) {
    auto chunk = mqd::client::recordChunk(raw, level);
    file.insert(file.end(), chunk.begin(), chunk.end());
  };
  append(words.asBytes());
  for (const auto& raw : chunks) append(kj::arrayPtr(raw.data(), raw.size()));
  return std::string("\x05\x00", 2) + std::string(file.begin(), file.end());
}

// `count` of the smallest valid message: one segment of one word, a null root (16 bytes).
std::vector<unsigned char> tinyMessages(size_t count) {
  const unsigned char one[16] = {0, 0, 0, 0, 1, 0, 0, 0};
  std::vector<unsigned char> raw;
  for (size_t i = 0; i < count; ++i) raw.insert(raw.end(), one, one + sizeof one);
  return raw;
}

}  // namespace

TEST_CASE("recordings at the reader's limits (fuzz_parsers, SeedRecordings.h)") {
  const char* out = std::getenv("MQD_FUZZ_CORPUS_OUT");
  REQUIRE_MESSAGE(out != nullptr, "set MQD_FUZZ_CORPUS_OUT to the corpus directory to write");
  Corpus corpus{out, {}};
  REQUIRE(system(("mkdir -p '" + corpus.dir + "/fuzz_parsers'").c_str()) == 0);
  mqd::client::RecordLimits limits = mqd::fuzz::fuzzRecordLimits();

  // Issue 16's compression bomb: 22 KB that decompress to 256 MiB of 16-byte messages.
  corpus.add("fuzz_parsers", "regress-recording-bomb-tiny-messages",
             recordingSeed({tinyMessages((256u << 20) / 16)}, 19));
  // One chunk with more messages than a chunk may hold.
  corpus.add("fuzz_parsers", "limit-recording-chunk-messages",
             recordingSeed({tinyMessages(limits.chunkMessages + 1)}, 19));
  // Chunks within that, more messages than a recording may hold.
  std::vector<std::vector<unsigned char>> many(limits.messages / limits.chunkMessages + 1,
                                               tinyMessages(limits.chunkMessages));
  corpus.add("fuzz_parsers", "limit-recording-messages", recordingSeed(many, 19));
  // Chunks of one message each, as large as a chunk may be, past the total.
  std::vector<unsigned char> big(limits.chunkBytes, 0);
  uint32_t words = static_cast<uint32_t>(big.size() / 8 - 1);  // one segment, a null root
  for (int i = 0; i < 4; ++i) big[4 + i] = static_cast<unsigned char>(words >> (8 * i));
  std::vector<std::vector<unsigned char>> full(limits.totalBytes / limits.chunkBytes + 1, big);
  corpus.add("fuzz_parsers", "limit-recording-total", recordingSeed(full, 19));
  // A message whose pointers share their targets: 40 levels of two pointers to one struct.
  std::vector<uint64_t> chain;
  auto structPointer = [](int32_t offset) {
    return static_cast<uint64_t>(static_cast<uint32_t>(offset) << 2) | (uint64_t{2} << 48);
  };
  chain.push_back(0);  // the segment table, below
  chain.push_back(structPointer(0));
  for (int level = 0; level < 40; ++level) {
    chain.push_back(level == 39 ? 0 : structPointer(1));
    chain.push_back(level == 39 ? 0 : structPointer(0));
  }
  chain[0] = static_cast<uint64_t>(chain.size() - 1) << 32;
  std::vector<unsigned char> amplified(chain.size() * 8);
  std::memcpy(amplified.data(), chain.data(), amplified.size());
  corpus.add("fuzz_parsers", "limit-recording-amplified", recordingSeed({amplified}, 3));
}
