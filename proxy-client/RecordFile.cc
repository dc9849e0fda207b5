#include "RecordFile.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace mqd::client {
namespace {

constexpr char kFileMagic[8] = {'M', 'Q', 'D', '-', 'R', 'E', 'C', '\n'};
constexpr char kChunkMagic[4] = {'M', 'Q', 'D', 'C'};
constexpr size_t kFileHeaderBytes = 16;
constexpr size_t kChunkHeaderBytes = 16;
// The most a chunk may hold raw; a reader refuses more before it allocates. A writer's chunk
// is much smaller (SessionRecorder flushes every few MiB), but one entry may carry a 64 MiB
// fetch.
constexpr uint32_t kMaxChunkBytes = 256u << 20;
// Fast, and a recording of target memory and walks still shrinks several times.
constexpr int kZstdLevel = 3;
// Per message, for all its reads together: the reader checks a message whole, and a replay
// reads it again (an entry holds at most a 64 MiB fetch, 8 Mi words).
constexpr uint64_t kTraversalLimitWords = 256ull << 20;

void putU32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint32_t getU32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// FNV-1a of a chunk header's first 12 bytes: tells a damaged header from a file cut short.
uint32_t headerCheck(const unsigned char* p) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < 12; ++i) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}

std::string errnoText() { return std::strerror(errno); }

}  // namespace

// ---- writing ----

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  unsigned char header[kFileHeaderBytes] = {};
  std::memcpy(header, kFileMagic, sizeof kFileMagic);
  putU32(header + 8, record::FORMAT_VERSION);
  try {
    // Created private beside `path` and put in its place once it has its header: what was
    // there before (a file, a link) is replaced, and the recording grows in the new file,
    // which is ours alone.
    file_ = kj::heap<ReplacementFile>(path, 0600);
    write(header, sizeof header);
    file_->commit();
  } catch (const std::runtime_error& e) {
    throw RecordFileError(e.what());
  }
}

void RecordWriter::add(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  ++pendingMessages_;
}

void RecordWriter::flush() {
  if (pending_.empty()) return;
  size_t raw = pending_.size();
  if (raw > kMaxChunkBytes) {
    throw RecordFileError(path_ + ": a chunk of " + std::to_string(raw) +
                          " bytes exceeds the format's limit");
  }
  struct ContextDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  std::unique_ptr<ZSTD_CCtx, ContextDeleter> context(ZSTD_createCCtx());
  if (!context) throw RecordFileError(path_ + ": out of memory for compression");
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_checksumFlag, 1);
  std::vector<unsigned char> chunk(kChunkHeaderBytes + ZSTD_compressBound(raw));
  size_t packed = ZSTD_compress2(context.get(), chunk.data() + kChunkHeaderBytes,
                                 chunk.size() - kChunkHeaderBytes, pending_.data(), raw);
  if (ZSTD_isError(packed)) {
    throw RecordFileError(path_ + ": cannot compress a chunk: " + ZSTD_getErrorName(packed));
  }
  std::memcpy(chunk.data(), kChunkMagic, sizeof kChunkMagic);
  putU32(chunk.data() + 4, static_cast<uint32_t>(packed));
  putU32(chunk.data() + 8, static_cast<uint32_t>(raw));
  putU32(chunk.data() + 12, headerCheck(chunk.data()));
  pending_.clear();
  pendingMessages_ = 0;
  write(chunk.data(), kChunkHeaderBytes + packed);
}

void RecordWriter::write(const void* data, size_t size) {
  try {
    file_->write(data, size);
  } catch (const std::runtime_error& e) {
    throw RecordFileError(e.what());
  }
  written_ += size;
}

// ---- reading ----

RecordReader::RecordReader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordFileError(path + ": cannot open the recording: " + errnoText());
  std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (in.bad()) throw RecordFileError(path + ": cannot read the recording: " + errnoText());
  fileBytes_ = file.size();
  if (file.empty() ||
      std::memcmp(file.data(), kFileMagic, std::min(file.size(), sizeof kFileMagic)) != 0) {
    throw RecordFileError(path + ": not an mqd-proxy recording (it does not start with " +
                          "\"MQD-REC\")");
  }
  if (file.size() < kFileHeaderBytes) {
    throw RecordFileError(path + ": cut short inside its file header (" +
                          std::to_string(file.size()) + " bytes): nothing was recorded");
  }
  uint32_t version = getU32(file.data() + 8);
  if (version != record::FORMAT_VERSION) {
    throw RecordFileError(path + ": recorded in format version " + std::to_string(version) +
                          "; this mqd-proxy reads version " +
                          std::to_string(record::FORMAT_VERSION));
  }

  capnp::ReaderOptions options;
  options.traversalLimitInWords = kTraversalLimitWords;
  size_t offset = kFileHeaderBytes;
  while (offset < file.size()) {
    size_t index = chunks_ + 1;
    std::string where = path + ": chunk " + std::to_string(index) + " at byte " +
                        std::to_string(offset);
    size_t left = file.size() - offset;
    const unsigned char* h = file.data() + offset;
    if (left < kChunkHeaderBytes) {
      if (std::memcmp(h, kChunkMagic, std::min(left, sizeof kChunkMagic)) != 0) {
        throw RecordFileError(where + ": damaged chunk header");
      }
      warnings_.push_back(where + " is cut short (" + std::to_string(left) +
                          " bytes of its header) and was ignored: the recording ends before it");
      break;
    }
    if (std::memcmp(h, kChunkMagic, sizeof kChunkMagic) != 0 ||
        getU32(h + 12) != headerCheck(h)) {
      throw RecordFileError(where + ": damaged chunk header");
    }
    uint32_t packed = getU32(h + 4);
    uint32_t raw = getU32(h + 8);
    if (raw > kMaxChunkBytes || raw % sizeof(capnp::word) != 0) {
      throw RecordFileError(where + ": damaged chunk header (raw size " + std::to_string(raw) +
                            ")");
    }
    if (packed > left - kChunkHeaderBytes) {
      warnings_.push_back(where + " is cut short (" +
                          std::to_string(left - kChunkHeaderBytes) + " of " +
                          std::to_string(packed) +
                          " bytes) and was ignored: the recording ends before it (the "
                          "debugger probably died while writing it)");
      break;
    }
    auto words = kj::heapArray<capnp::word>(raw / sizeof(capnp::word));
    size_t n = ZSTD_decompress(words.begin(), raw, h + kChunkHeaderBytes, packed);
    if (ZSTD_isError(n)) {
      throw RecordFileError(where + " is corrupt: " + ZSTD_getErrorName(n));
    }
    if (n != raw) {
      throw RecordFileError(where + " is corrupt: it holds " + std::to_string(n) +
                            " bytes, its header says " + std::to_string(raw));
    }
    kj::ArrayPtr<const capnp::word> rest = words.asPtr();
    size_t message = 0;
    try {
      while (rest.size() > 0) {
        auto reader = kj::heap<capnp::FlatArrayMessageReader>(rest, options);
        rest = kj::arrayPtr(reader->getEnd(), rest.end());
        // totalSize() walks every pointer: a malformed message fails here, not in use.
        if (messages_.empty()) {
          header_ = reader->getRoot<record::Header>();
          header_.totalSize();
        } else {
          auto entry = reader->getRoot<record::Entry>();
          entry.totalSize();
          entries_.push_back(entry);
        }
        messages_.push_back(kj::mv(reader));
        ++message;
      }
    } catch (const kj::Exception& e) {
      throw RecordFileError(where + ": message " + std::to_string(message + 1) +
                            " is malformed: " + e.getDescription().cStr());
    }
    chunkWords_.push_back(kj::mv(words));
    rawBytes_ += raw;
    ++chunks_;
    offset += kChunkHeaderBytes + packed;
  }
  if (messages_.empty()) {
    throw RecordFileError(path + ": holds no complete chunk: nothing was recorded" +
                          (warnings_.empty() ? std::string() : " (" + warnings_.front() + ")"));
  }
  if (header_.getFormatVersion() != record::FORMAT_VERSION) {
    throw RecordFileError(path + ": its header says format version " +
                          std::to_string(header_.getFormatVersion()) +
                          "; this mqd-proxy reads version " +
                          std::to_string(record::FORMAT_VERSION));
  }
}

}  // namespace mqd::client
