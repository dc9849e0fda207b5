// RecordFile: a recording written in chunks reads back whole; a last chunk cut short is
// dropped with a warning; a damaged chunk, another format version, a file that is not a
// recording, and a file that cannot be written are each a clear error naming the file.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "RecordFile.h"
#include "ServerProcess.h"

using namespace mqd;
using namespace mqd::client;

namespace {

std::vector<char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A recording as the shim writes one: a chunk with the header, then `entries` apiCall
// entries ("call N", rc N) in chunks of `perChunk`. Returns the file offset where each chunk
// of entries starts.
std::vector<size_t> writeRecording(const std::string& path, int entries, int perChunk) {
  RecordWriter w(path);
  std::vector<size_t> starts;
  capnp::MallocMessageBuilder header;
  auto h = header.initRoot<record::Header>();
  h.setFormatVersion(record::FORMAT_VERSION);
  h.setShimVersion("test");
  h.getDll().setVersionString("a DLL");
  w.add(header);
  w.flush();
  for (int i = 0; i < entries; ++i) {
    if (i % perChunk == 0) starts.push_back(static_cast<size_t>(w.bytesWritten()));
    capnp::MallocMessageBuilder message;
    auto e = message.initRoot<record::Entry>();
    e.setMicros(static_cast<uint64_t>(i));
    auto call = e.initApiCall();
    call.setEntryPoint("call " + std::to_string(i));
    call.setRc(i);
    w.add(message);
    if ((i + 1) % perChunk == 0) w.flush();
  }
  w.flush();
  return starts;
}

std::string errorOf(const std::string& path) {
  try {
    RecordReader r(path);
  } catch (const RecordFileError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string errorOf(const std::string& path, const RecordLimits& limits) {
  try {
    RecordReader r(path, limits);
  } catch (const RecordFileError& e) {
    return e.what();
  }
  return "";
}

void append(std::vector<unsigned char>& file, const std::vector<unsigned char>& more) {
  file.insert(file.end(), more.begin(), more.end());
}

void spitBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  spit(path, std::vector<char>(bytes.begin(), bytes.end()));
}

// The bytes of a message, in the stream framing.
std::vector<unsigned char> messageBytes(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::vector<unsigned char>(bytes.begin(), bytes.end());
}

// The file header and a chunk with a right record::Header, as the shim starts a recording.
std::vector<unsigned char> recordingStart(uint32_t formatVersion = record::FORMAT_VERSION) {
  capnp::MallocMessageBuilder header;
  header.initRoot<record::Header>().setFormatVersion(formatVersion);
  std::vector<unsigned char> file = recordFileHeader();
  std::vector<unsigned char> raw = messageBytes(header);
  append(file, recordChunk(kj::arrayPtr(raw.data(), raw.size())));
  return file;
}

// `count` of the smallest valid message there is: one segment of one word, a null root (an
// Entry with every field at its default). 16 bytes each, and they compress to almost nothing.
std::vector<unsigned char> tinyMessages(size_t count) {
  const unsigned char one[16] = {0, 0, 0, 0, 1, 0, 0, 0};
  std::vector<unsigned char> raw;
  raw.reserve(count * sizeof one);
  for (size_t i = 0; i < count; ++i) raw.insert(raw.end(), one, one + sizeof one);
  return raw;
}

std::vector<unsigned char> chunkOf(const std::vector<unsigned char>& raw) {
  return recordChunk(kj::arrayPtr(raw.data(), raw.size()));
}

}  // namespace

TEST_CASE("RecordFile: a recording written in chunks reads back whole, in order") {
  harness::TempDir dir;
  std::string path = dir / "a.mqdrec";
  writeRecording(path, 2500, 1000);
  RecordReader r(path);
  CHECK(r.warnings().empty());
  CHECK(r.chunks() == 4);
  CHECK(r.header().getShimVersion() == "test");
  CHECK(r.header().getDll().getVersionString() == "a DLL");
  REQUIRE(r.entries().size() == 2500);
  for (int i : {0, 999, 1000, 2499}) {
    auto e = r.entries()[static_cast<size_t>(i)];
    REQUIRE(e.isApiCall());
    CHECK(e.getApiCall().getEntryPoint() == "call " + std::to_string(i));
    CHECK(e.getApiCall().getRc() == i);
    CHECK(e.getMicros() == static_cast<uint64_t>(i));
  }
  CHECK(r.rawBytes() > r.fileBytes());  // compressed
}

TEST_CASE("RecordFile: a last chunk cut short is dropped with a warning; the rest reads") {
  harness::TempDir dir;
  std::string path = dir / "a.mqdrec";
  std::vector<size_t> starts = writeRecording(path, 300, 100);
  std::vector<char> whole = slurp(path);
  // Cut inside the last chunk's payload, and inside its 16-byte header.
  for (size_t cut : {whole.size() - 5, starts.back() + 8}) {
    INFO("cut at ", cut, " of ", whole.size());
    spit(path, std::vector<char>(whole.begin(), whole.begin() + static_cast<long>(cut)));
    RecordReader r(path);
    CHECK(r.entries().size() == 200);
    CHECK(r.chunks() == 3);  // the header's chunk and two of entries
    REQUIRE(r.warnings().size() == 1);
    CHECK(contains(r.warnings()[0], path));
    CHECK(contains(r.warnings()[0], "chunk 4 at byte " + std::to_string(starts.back())));
    CHECK(contains(r.warnings()[0], "cut short"));
  }
}

TEST_CASE("RecordFile: damage, another version, not a recording: each a clear error") {
  harness::TempDir dir;
  std::string path = dir / "a.mqdrec";
  std::vector<size_t> starts = writeRecording(path, 300, 100);
  std::vector<char> whole = slurp(path);

  SUBCASE("a byte changed inside a chunk's compressed data") {
    std::vector<char> bad = whole;
    bad[starts[1] + 40] ^= 0x5a;
    spit(path, bad);
    std::string e = errorOf(path);
    CHECK(contains(e, path));
    CHECK(contains(e, "chunk 3 at byte " + std::to_string(starts[1]) + " is corrupt"));
  }
  SUBCASE("a byte changed in a chunk header") {
    std::vector<char> bad = whole;
    bad[starts[2] + 5] ^= 0x01;  // its compressed size
    spit(path, bad);
    std::string e = errorOf(path);
    CHECK(contains(e, "chunk 4 at byte " + std::to_string(starts[2]) + ": damaged chunk header"));
  }
  SUBCASE("another format version") {
    std::vector<char> bad = whole;
    bad[8] = 7;
    spit(path, bad);
    std::string e = errorOf(path);
    CHECK(contains(e, path));
    CHECK(contains(e, "format version 7; this mqd-proxy reads version 1"));
  }
  SUBCASE("not a recording") {
    spit(path, std::vector<char>{'h', 'e', 'l', 'l', 'o', '\n'});
    CHECK(contains(errorOf(path), "not an mqd-proxy recording"));
    spit(path, {});
    CHECK(contains(errorOf(path), "not an mqd-proxy recording"));
  }
  SUBCASE("cut inside the file header, or before any chunk ended") {
    spit(path, std::vector<char>(whole.begin(), whole.begin() + 10));
    CHECK(contains(errorOf(path), "cut short inside its file header"));
    spit(path, std::vector<char>(whole.begin(), whole.begin() + 20));
    std::string e = errorOf(path);
    CHECK(contains(e, "holds no complete chunk"));
    CHECK(contains(e, "cut short"));
  }
  SUBCASE("no such file") {
    std::string e = errorOf(dir / "missing.mqdrec");
    CHECK(contains(e, dir / "missing.mqdrec"));
    CHECK(contains(e, "cannot open"));
  }
}

TEST_CASE("RecordFile: the file and its header are checked before anything else is read") {
  harness::TempDir dir;
  std::string path = dir / "a.mqdrec";
  // A recording whose Header says another format version, followed by a chunk that would
  // take the reader past its limits: the version is what it is told.
  std::vector<unsigned char> file = recordingStart(99);
  append(file, chunkOf(tinyMessages(100000)));
  spitBytes(path, file);
  RecordLimits small;
  small.messages = 1000;
  std::string e = errorOf(path, small);
  CHECK(contains(e, path + ": its header says format version 99"));
  // Not a regular file: said at once, nothing read.
  std::string fifo = dir / "fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(contains(errorOf(fifo), fifo + ": a FIFO, not a regular file"));
  CHECK(contains(errorOf("/dev/zero"), "/dev/zero: a character device, not a regular file"));
  CHECK(contains(errorOf(dir.path()), dir.path() + ": a directory, not a regular file"));
}

TEST_CASE("RecordFile: a recording past a limit is refused by name, before the memory is "
          "spent") {
  harness::TempDir dir;
  std::string path = dir / "a.mqdrec";
  RecordLimits small;
  small.chunkBytes = 1 << 20;
  small.totalBytes = 4 << 20;
  small.messages = 100000;
  small.chunkMessages = 65536;

  SUBCASE("a compression bomb: a chunk of tiny messages") {
    // 2 MiB of 16-byte messages in one chunk compress to a few hundred bytes.
    std::vector<unsigned char> file = recordingStart();
    std::vector<unsigned char> bomb = chunkOf(tinyMessages(2 << 16));
    CHECK(bomb.size() < 2048);
    append(file, bomb);
    spitBytes(path, file);
    std::string e = errorOf(path, small);
    CHECK(contains(e, path + ": chunk 2 at byte "));
    CHECK(contains(e, "holds 2097152 bytes decompressed, more than a chunk may (1 MiB)"));
  }
  SUBCASE("a chunk of more tiny messages than a writer puts in one") {
    std::vector<unsigned char> file = recordingStart();
    append(file, chunkOf(tinyMessages(5000)));
    spitBytes(path, file);
    RecordLimits fewer = small;
    fewer.chunkMessages = 4096;
    std::string e = errorOf(path, fewer);
    CHECK(contains(e, path + ": chunk 2 at byte "));
    CHECK(contains(e, "holds more than 4096 messages, more than a chunk may"));
  }
  SUBCASE("many chunks of tiny messages: the message count") {
    std::vector<unsigned char> file = recordingStart();
    std::vector<unsigned char> chunk = chunkOf(tinyMessages(60000));
    for (int i = 0; i < 3; ++i) append(file, chunk);
    spitBytes(path, file);
    std::string e = errorOf(path, small);
    CHECK(contains(e, path + ": chunk 3 at byte "));
    CHECK(contains(e, "takes the recording past 100000 messages"));
  }
  SUBCASE("chunks within their limit, too many of them: the total") {
    std::vector<unsigned char> file = recordingStart();
    capnp::MallocMessageBuilder big;
    auto call = big.initRoot<record::Entry>().initDebuggerCall();
    call.getResults().initAs<capnp::Data>(900 << 10);
    std::vector<unsigned char> raw = messageBytes(big);
    for (int i = 0; i < 5; ++i) append(file, chunkOf(raw));
    spitBytes(path, file);
    std::string e = errorOf(path, small);
    CHECK(contains(e, path + ": chunk 6 at byte "));
    CHECK(contains(e, "takes the recording past 4 MiB decompressed"));
  }
  SUBCASE("a chunk header that lies about its size") {
    // The frame holds 16 bytes; its chunk header claims the whole chunk limit.
    std::vector<unsigned char> file = recordingStart();
    size_t at = file.size();
    append(file, chunkOf(tinyMessages(1)));
    uint32_t lie = 1 << 20;
    for (int i = 0; i < 4; ++i) file[at + 8 + i] = static_cast<unsigned char>(lie >> (8 * i));
    uint32_t check = 2166136261u;  // the chunk header's FNV-1a, made right again
    for (size_t i = at; i < at + 12; ++i) check = (check ^ file[i]) * 16777619u;
    for (int i = 0; i < 4; ++i) file[at + 12 + i] = static_cast<unsigned char>(check >> (8 * i));
    spitBytes(path, file);
    CHECK(contains(errorOf(path, small), "is corrupt: its zstd frame holds 16 bytes, its header "
                                         "says 1048576"));
  }
  SUBCASE("a message whose pointers share their targets: refused at once") {
    // A root struct with two pointers to one struct, which has two pointers to the next, and
    // so on: 40 levels, 2^40 visits for a naive walk of 82 words.
    constexpr int kDepth = 40;
    std::vector<uint64_t> words;
    words.push_back(0x0000000100000000ull | 0);  // segment table: one segment (size set below)
    auto structPointer = [](int32_t offset) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(offset) << 2)) |
             (static_cast<uint64_t>(2) << 48);  // no data, two pointers
    };
    words.push_back(structPointer(0));  // the root, to the struct right after it
    for (int level = 0; level < kDepth; ++level) {
      bool last = level == kDepth - 1;
      words.push_back(last ? 0 : structPointer(1));  // both to the next struct
      words.push_back(last ? 0 : structPointer(0));
    }
    words[0] |= static_cast<uint64_t>(words.size() - 1) << 32;
    words[0] &= 0xffffffff00000000ull;  // segment count - 1 = 0
    std::vector<unsigned char> raw;  // Cap'n Proto words are little-endian on every host
    for (uint64_t word : words) {
      for (int byte = 0; byte < 8; ++byte) {
        raw.push_back(static_cast<unsigned char>(word >> (8 * byte)));
      }
    }
    std::vector<unsigned char> file = recordingStart();
    append(file, chunkOf(raw));
    spitBytes(path, file);
    auto start = std::chrono::steady_clock::now();
    std::string e = errorOf(path);
    // Refused by the limit, not after traversing it all (minutes, and memory): within a loaded
    // machine's slack.
    CHECK(std::chrono::steady_clock::now() - start < mqd::harness::kLoadedMachineSlack);
    CHECK(contains(e, "chunk 2 at byte "));
    CHECK(contains(e, "message 1 is malformed"));
    CHECK(contains(e, "traversal limit"));
  }
}

TEST_CASE("RecordFile: the writer stops at the reader's limits, and what it wrote reads") {
  harness::TempDir dir;
  std::string path = dir / "a.mqdrec";
  RecordLimits small;
  small.messages = 50;
  std::string stopped;
  {
    RecordWriter w(path, small);
    capnp::MallocMessageBuilder header;
    header.initRoot<record::Header>().setFormatVersion(record::FORMAT_VERSION);
    w.add(header);
    for (int i = 0; i < 80 && stopped.empty(); ++i) {
      capnp::MallocMessageBuilder message;
      message.initRoot<record::Entry>().initApiCall().setRc(i);
      try {
        w.add(message);
      } catch (const RecordFileError& e) {
        stopped = e.what();
      }
    }
  }
  CHECK(contains(stopped, path + ": the recording reached the most a replay reads (50 messages"));
  RecordReader r(path, small);
  CHECK(r.entries().size() == 49);  // and the header: 50 messages
}

TEST_CASE("RecordFile: a file that cannot be created or written is an error, not a crash") {
  harness::TempDir dir;
  std::string bad = dir / "no-such-dir/a.mqdrec";
  try {
    RecordWriter w(bad);
    FAIL("created a recording in a missing directory");
  } catch (const RecordFileError& e) {
    CHECK(contains(e.what(), bad));
    CHECK(contains(e.what(), "cannot create"));
  }
  // A full disk, as a file size limit: every write past it fails (EFBIG).
  {
    struct rlimit saved;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    auto oldHandler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit tiny = saved;
    tiny.rlim_cur = 8;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &tiny) == 0);
    std::string full = dir / "full.mqdrec";
    std::string what;
    try {
      RecordWriter w(full);
    } catch (const RecordFileError& e) {
      what = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, oldHandler);
    CHECK(contains(what, full));
    CHECK(contains(what, "File too large"));
  }
  // A device is not replaced by a recording (nor written: it is not ours to replace).
  try {
    RecordWriter w("/dev/full");
    FAIL("recorded into /dev/full");
  } catch (const RecordFileError& e) {
    CHECK(contains(e.what(), "/dev/full: cannot replace it: it is a character device"));
  }
  struct stat st;
  REQUIRE(stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}
