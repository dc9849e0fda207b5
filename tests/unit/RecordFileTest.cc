// RecordFile: a recording written in chunks reads back whole; a last chunk cut short is
// dropped with a warning; a damaged chunk, another format version, a file that is not a
// recording, and a file that cannot be written are each a clear error naming the file.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

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
