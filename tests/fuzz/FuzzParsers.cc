// fuzz_parsers: the parsers of untrusted bytes other than the server's connection, one input
// each, chosen by the input's first byte (modulo the number of parsers):
//   0  Endpoint::parse        an endpoint as a user or an environment variable writes it; a
//                             parsed endpoint must parse again, unchanged, from toString()
//   1  readBulk               a Bulk (wire payload, maybe zstd) with the announced size and
//                             payload from the input: byte 1 bit 0 = zstd, bytes 2..5 = size
//                             (little-endian), the rest = raw or compressed bytes
//   2  RecordedWalk           the client's reading of a walk the server recorded: the rest of
//                             the input is the walk message (Cap'n Proto, flat array); byte 1
//                             bit 0 asks for it to travel compressed. The walk is iterated as
//                             a debugger does, and every record applied to debugger buffers;
//                             then again from its start (fromStart: an epoch held)
//   3  LearnedLookups         a state file lookups-<build>.capnp (shim or server) (the rest of the input)
//   4  LearnedMemory          a server state file blocks-<build>-<fingerprint>.capnp
//   6  SetUpRecall            the shim's state file setups-<build>.capnp (the rest of the
//                             input), then searched, added to and written back
//   5  RecordReader           a recording (MQD_PROXY_RECORD) as `mqd-proxy replay` reads it,
//                             then indexed by RecordedDebugger, which answers the replayed
//                             DLL's callbacks from it. Byte 1 bit 0 clear: the rest is the whole
//                             file. Set: the rest is one chunk's raw content (Cap'n Proto
//                             messages in stream framing), put here into a file whose header,
//                             chunk header and zstd checksum are right, so that the fuzzer
//                             reaches the messages past the checks (RecordFile.h: the layout).
//                             The reader's limits are scaled down (SeedRecordings.h) so
//                             that small inputs reach them: compression bombs, too many messages
// The generator (make-corpus) writes seeds of each kind from real sessions.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "Bulk.h"
#include "Endpoint.h"
#include "LearnedLookups.h"
#include "LearnedMemory.h"
#include "Log.h"
#include "OutputApply.h"
#include "ProxyErrors.h"
#include "RecordFile.h"
#include "RecordedDebugger.h"
#include "RecordedWalk.h"
#include "SeedRecordings.h"
#include "SetUpRecall.h"
#include "mqd.capnp.h"

namespace {

// Announced Bulk sizes above this are refused before allocation (readBulk's limit check); the
// real limit (kMaxBulkBytes, 256 MiB) would only make each such input slower, not different.
constexpr size_t kFuzzBulkLimit = 4u << 20;

std::string stateDir;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_parsers: %s\n", what.c_str());
  std::abort();
}

void fuzzEndpoint(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  mqd::Endpoint e;
  try {
    e = mqd::Endpoint::parse(text);
  } catch (const std::invalid_argument&) {
    return;
  }
  // ssh:// and slurm: endpoints have no network address: toKjAddress() says so (Endpoint.h).
  if (!e.isLaunched()) (void)e.toKjAddress();
  (void)e.isLoopback();
  mqd::Endpoint again;
  try {
    again = mqd::Endpoint::parse(e.toString());
  } catch (const std::invalid_argument& x) {
    fail("Endpoint::parse(\"" + text + "\").toString() does not parse: " + x.what());
  }
  if (again.kind != e.kind || again.path != e.path || again.host != e.host ||
      again.port != e.port || again.user != e.user || again.job != e.job) {
    fail("Endpoint \"" + text + "\" does not survive toString() and parse()");
  }
}

void fuzzBulk(const uint8_t* data, size_t size) {
  if (size < 5) return;
  bool zstd = data[0] & 1;
  uint32_t announced = static_cast<uint32_t>(data[1]) | static_cast<uint32_t>(data[2]) << 8 |
                       static_cast<uint32_t>(data[3]) << 16 |
                       static_cast<uint32_t>(data[4]) << 24;
  kj::ArrayPtr<const kj::byte> payload(data + 5, size - 5);
  capnp::MallocMessageBuilder message;
  auto bulk = message.initRoot<mqd::wire::Bulk>();
  bulk.setSize(announced);
  if (zstd) {
    bulk.setZstd(payload);
  } else {
    bulk.setRaw(payload);
  }
  try {
    kj::Array<kj::byte> out = mqd::readBulk(bulk.asReader(), kFuzzBulkLimit);
    if (out.size() != announced) fail("readBulk returned other than the announced size");
    if (!zstd && memcmp(out.begin(), payload.begin(), payload.size()) != 0) {
      fail("readBulk changed a raw payload");
    }
  } catch (const mqd::ProxyError&) {
  }
}

// Reads what a debugger-facing client reads of each record.
void touch(mqd::client::RecordedWalk::Effects effects) {
  for (auto e : effects) {
    switch (e.which()) {
      case mqd::wire::Effect::DPRINTS:
        (void)mqd::client::safePrintfFormat(e.getDprints());
        break;
      case mqd::wire::Effect::PUT_INFO:
        (void)e.getPutInfo().getInfo();
        break;
      case mqd::wire::Effect::DLL_OUTPUT:
        (void)e.getDllOutput().size();
        break;
    }
  }
}

void fuzzWalk(const uint8_t* data, size_t size) {
  if (size < 1) return;
  bool compress = data[0] & 1;
  capnp::MallocMessageBuilder message;
  auto bulk = message.initRoot<mqd::wire::Bulk>();
  mqd::setBulk(bulk, kj::ArrayPtr<const kj::byte>(data + 1, size - 1), compress);
  using namespace mqd::client;
  try {
    auto serve = [](RecordedWalk& walk) {
      for (auto t : walk.errorTexts()) (void)t.getText();
      mqd::wire::RecordedRc::Reader rc;
      walk.setupCommunicatorIterator(&rc);
      touch(rc.getEffects());
      // Every communicator, as the debugger's refresh walks them (a walk cannot be longer than
      // its message, but a loop over a hostile one is still bounded here).
      for (int comms = 0; comms < 1 << 16; ++comms) {
        mqd::wire::RecordedCommunicator::Reader c;
        if (!walk.getCommunicator(&c)) break;
        mqs_communicator communicator{};
        apply(c.getCommunicator(), communicator);
        touch(c.getEffects());
        mqd::wire::RecordedGroup::Reader g;
        if (walk.getCommGroup(&g)) {
          int ranks[64];
          applyGroup(g.getRanks(), g.getWritten(), ranks, 64);
          touch(g.getEffects());
        }
        for (int coll = 0; coll < 14; ++coll) {
          mqd::wire::RecordedCollState::Reader s;
          if (!walk.getCommCollState(coll, &s)) continue;
          int sequence = 0, active = 0;
          apply(s.getSequence(), &sequence);
          apply(s.getActive(), &active);
          touch(s.getEffects());
        }
        for (int q = 0; q < 3; ++q) {
          if (!walk.setupOperationIterator(q, &rc)) continue;
          touch(rc.getEffects());
          mqd::wire::RecordedOperation::Reader op;
          while (walk.nextOperation(&op)) {
            mqs_pending_operation operation{};
            apply(op.getOperation(), operation);
            touch(op.getEffects());
          }
        }
        if (!walk.nextCommunicator(&rc)) break;
        touch(rc.getEffects());
      }
      capnp::MallocMessageBuilder cursor;
      walk.cursor().writeTo(cursor.initRoot<mqd::wire::WalkCursor>());
    };
    RecordedWalk walk(bulk.asReader());
    std::unique_ptr<RecordedWalk> held = walk.fromStart();  // an epoch held: the same again
    serve(walk);
    serve(*held);
  } catch (const mqd::ProxyError&) {
  } catch (const kj::Exception&) {
    // Cap'n Proto refusing a malformed message: the client reports it as a protocol error.
  }
}

// Writes the input as a state file named after the build id (and fingerprint) it declares, as
// the server reads only the file named after its DLL's build id.
void writeFile(const std::string& path, const uint8_t* data, size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot write " + path);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) fail("cannot write " + path);
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

// The build id and fingerprint the input declares, if it is a message at all (else made-up
// ones: the reader must still refuse the file gracefully).
template <typename Root>
std::string declaredBuildId(const uint8_t* data, size_t size, uint64_t* fingerprint) {
  std::string id = "unknown";
  try {
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
    memcpy(words.begin(), data, words.size() * sizeof(capnp::word));
    capnp::FlatArrayMessageReader reader(words);
    auto root = reader.getRoot<Root>();
    id = root.getBuildId();
    if constexpr (std::is_same_v<Root, mqd::wire::LearnedBlocks>) {
      *fingerprint = root.getFingerprint();
    }
  } catch (const kj::Exception&) {
  }
  // A build id names a file: keep it a plain name.
  for (char& c : id) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (id.empty() || id.size() > 128 || id == "." || id == "..") id = "unknown";
  return id;
}

void fuzzLookups(const uint8_t* data, size_t size) {
  std::string build = declaredBuildId<mqd::wire::LearnedLookups>(data, size, nullptr);
  writeFile(stateDir + "/lookups-" + build + ".capnp", data, size);
  mqd::LearnedLookups learned(stateDir, "fuzz.so", build);
  (void)learned.load();
  ::unlink((stateDir + "/lookups-" + build + ".capnp").c_str());
}

void fuzzBlocks(const uint8_t* data, size_t size) {
  uint64_t fingerprint = 1;
  std::string build = declaredBuildId<mqd::wire::LearnedBlocks>(data, size, &fingerprint);
  if (fingerprint == 0) fingerprint = 1;  // 0 means "no fingerprint": nothing is read
  char name[64];
  std::snprintf(name, sizeof name, "-%016llx.capnp", static_cast<unsigned long long>(fingerprint));
  std::string path = stateDir + "/blocks-" + build + name;
  writeFile(path, data, size);
  mqd::server::LearnedMemory learned(stateDir, build);
  (void)learned.load(fingerprint);
  ::unlink(path.c_str());
}

void fuzzSetUps(const uint8_t* data, size_t size) {
  std::string build = declaredBuildId<mqd::wire::SetUpRecords>(data, size, nullptr);
  std::string path = stateDir + "/setups-" + build + ".capnp";
  writeFile(path, data, size);
  mqd::client::SetUpRecall recall(stateDir, build);
  // Whatever the file held: look-ups that answer as its records might, and a record kept.
  mqd::client::DebuggerSide::LookupResult symbol, type;
  symbol.written = true;
  symbol.address = 0x1000;
  type.type = 1;
  mqd::client::SetUpRecall::Answers answers{
      {{mqd::LookupKey::Symbol, "MPIR_debug_typedefs_sizeof", 0, ""}, symbol},
      {{mqd::LookupKey::Type, "t", 1, ""}, type}};
  for (const auto* r : recall.find(answers)) {
    (void)r->image.setUp.putsInfo();
    if (r->process) {
      (void)r->process->reads.size();
      (void)mqd::client::SetUpRecall::lookupsProve(*r->process, answers);
    }
  }
  mqd::client::SetUpRecall::Record record;
  mqd::ConsumedLookups::Lookups keys;
  for (const auto& [key, answer] : answers) keys[key] = key.kind == mqd::LookupKey::Symbol;
  record.lookupDigest = *mqd::client::SetUpRecall::digestOf(keys, answers);
  record.lookups = recall.share(keys);
  record.image.setUp.effects.push_back({mqd::client::SetUpRecall::Effect::PutInfo, {}});
  recall.keep(record);
  recall.save();
  if (recall.find(answers).empty()) fail("a record kept was not found");
  ::unlink(path.c_str());
}

// A recording file holding `raw` (padded to whole words) as its one chunk, every check right.
std::vector<uint8_t> wrapRecording(const uint8_t* raw, size_t size) {
  std::vector<uint8_t> content(raw, raw + size);
  content.resize((size + 7) / 8 * 8, 0);
  std::vector<uint8_t> file = mqd::client::recordFileHeader();
  std::vector<uint8_t> chunk =
      mqd::client::recordChunk(kj::arrayPtr(content.data(), content.size()));
  file.insert(file.end(), chunk.begin(), chunk.end());
  return file;
}

void fuzzRecording(const uint8_t* data, size_t size) {
  if (size < 1) return;
  std::string path = stateDir + "/recording";
  if (data[0] & 1) {
    std::vector<uint8_t> file = wrapRecording(data + 1, size - 1);
    writeFile(path, file.data(), file.size());
  } else {
    writeFile(path, data + 1, size - 1);
  }
  try {
    mqd::client::RecordReader recording(path, mqd::fuzz::fuzzRecordLimits());
    (void)recording.header().getDll().getPath();
    (void)recording.header().getDll().getEntryPoints().size();
    for (auto e : recording.entries()) (void)e.which();
    mqd::replay::RecordedDebugger answers(recording);
    (void)answers.counts();
  } catch (const mqd::client::RecordFileError&) {
  } catch (const kj::Exception&) {
    // A message Cap'n Proto refuses: the replay reports it and exits 1.
  }
  ::unlink(path.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* level = std::getenv("MQD_FUZZ_LOG");
  mqd::logSetLevel(level != nullptr ? mqd::parseLogLevel(level) : mqd::LogLevel::Error);
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") +
                        "/mqd-fuzz-state-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) fail("cannot create a state directory");
  stateDir = pattern;
  std::atexit([] { ::rmdir(stateDir.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* rest = data + 1;
  size_t n = size - 1;
  switch (data[0] % 7) {
    case 0: fuzzEndpoint(rest, n); break;
    case 1: fuzzBulk(rest, n); break;
    case 2: fuzzWalk(rest, n); break;
    case 3: fuzzLookups(rest, n); break;
    case 4: fuzzBlocks(rest, n); break;
    case 5: fuzzRecording(rest, n); break;
    case 6: fuzzSetUps(rest, n); break;
  }
  return 0;
}
