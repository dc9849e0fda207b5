#include "RecordFile.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "RegularFile.h"

namespace mqd::client {
namespace {

constexpr char kFileMagic[8] = {'M', 'Q', 'D', '-', 'R', 'E', 'C', '\n'};
constexpr char kChunkMagic[4] = {'M', 'Q', 'D', 'C'};
constexpr size_t kFileHeaderBytes = 16;
constexpr size_t kChunkHeaderBytes = 16;

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

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

// ---- writing ----

RecordWriter::RecordWriter(const std::string& path, const RecordLimits& limits)
    : path_(path), limits_(limits) {
  std::vector<unsigned char> header = recordFileHeader();
  try {
    // Created private beside `path` and put in its place once it has its header: what was
    // there before (a file, a link) is replaced, and the recording grows in the new file,
    // which is ours alone.
    file_ = kj::heap<ReplacementFile>(path, 0600);
    write(header.data(), header.size());
    file_->commit();
  } catch (const std::runtime_error& e) {
    throw RecordFileError(e.what());
  }
}

void RecordWriter::add(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  uint64_t messages = messagesFlushed_ + pendingMessages_ + 1;
  uint64_t raw = rawFlushed_ + pending_.size() + bytes.size();
  if (messages > limits_.messages || raw > limits_.totalBytes) {
    flush();
    throw RecordFileError(path_ + ": the recording reached the most a replay reads (" +
                          std::to_string(limits_.messages) + " messages, " +
                          mib(limits_.totalBytes) + " decompressed) and ends here");
  }
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  ++pendingMessages_;
  if (pendingMessages_ >= limits_.chunkMessages) flush();
}

std::vector<unsigned char> recordFileHeader() {
  std::vector<unsigned char> header(kFileHeaderBytes, 0);
  std::memcpy(header.data(), kFileMagic, sizeof kFileMagic);
  putU32(header.data() + 8, record::FORMAT_VERSION);
  return header;
}

std::vector<unsigned char> recordChunk(kj::ArrayPtr<const kj::byte> raw, int level) {
  struct ContextDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  std::unique_ptr<ZSTD_CCtx, ContextDeleter> context(ZSTD_createCCtx());
  if (!context) throw RecordFileError("out of memory for compression");
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_checksumFlag, 1);
  std::vector<unsigned char> chunk(kChunkHeaderBytes + ZSTD_compressBound(raw.size()));
  size_t packed = ZSTD_compress2(context.get(), chunk.data() + kChunkHeaderBytes,
                                 chunk.size() - kChunkHeaderBytes, raw.begin(), raw.size());
  if (ZSTD_isError(packed)) {
    throw RecordFileError(std::string("cannot compress a chunk: ") + ZSTD_getErrorName(packed));
  }
  std::memcpy(chunk.data(), kChunkMagic, sizeof kChunkMagic);
  putU32(chunk.data() + 4, static_cast<uint32_t>(packed));
  putU32(chunk.data() + 8, static_cast<uint32_t>(raw.size()));
  putU32(chunk.data() + 12, headerCheck(chunk.data()));
  chunk.resize(kChunkHeaderBytes + packed);
  return chunk;
}

void RecordWriter::flush() {
  if (pending_.empty()) return;
  size_t raw = pending_.size();
  if (raw > limits_.chunkBytes) {
    throw RecordFileError(path_ + ": a chunk of " + std::to_string(raw) +
                          " bytes exceeds the format's limit");
  }
  std::vector<unsigned char> chunk;
  try {
    chunk = recordChunk(kj::arrayPtr(pending_.data(), raw));
  } catch (const RecordFileError& e) {
    throw RecordFileError(path_ + ": " + e.what());
  }
  rawFlushed_ += raw;
  messagesFlushed_ += pendingMessages_;
  pending_.clear();
  pendingMessages_ = 0;
  write(chunk.data(), chunk.size());
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

namespace {

// Reads up to `size` bytes; fewer only at the end of the file.
size_t readUpTo(int fd, void* data, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, static_cast<char*>(data) + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RecordFileError(path + ": cannot read the recording: " + errnoText());
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

RecordReader::RecordReader(const std::string& path, const RecordLimits& limits) {
  try {
    read(path, limits);
  } catch (const std::bad_alloc&) {
    throw RecordFileError(path + ": ran out of memory after " + mib(rawBytes_) +
                          " of it (chunk " + std::to_string(chunks_ + 1) +
                          "): it needs more memory than this process may have");
  }
}

void RecordReader::read(const std::string& path, const RecordLimits& limits) {
  RegularFile file;
  try {
    file = openRegularFile(path);
  } catch (const FileRefused& e) {
    throw RecordFileError(std::string("cannot open the recording ") + e.what());
  }
  int fd = file.fd.get();

  // The file header, before anything else.
  unsigned char head[kFileHeaderBytes];
  size_t got = readUpTo(fd, head, sizeof head, path);
  fileBytes_ = got;
  if (got == 0 || std::memcmp(head, kFileMagic, std::min(got, sizeof kFileMagic)) != 0) {
    throw RecordFileError(path + ": not an mqd-proxy recording (it does not start with " +
                          "\"MQD-REC\")");
  }
  if (got < kFileHeaderBytes) {
    throw RecordFileError(path + ": cut short inside its file header (" + std::to_string(got) +
                          " bytes): nothing was recorded");
  }
  uint32_t version = getU32(head + 8);
  if (version != record::FORMAT_VERSION) {
    throw RecordFileError(path + ": recorded in format version " + std::to_string(version) +
                          "; this mqd-proxy reads version " +
                          std::to_string(record::FORMAT_VERSION));
  }

  // Then one chunk at a time: its header, its limits, its frame, its messages.
  std::vector<unsigned char> packedBuffer;
  for (;;) {
    uint64_t offset = fileBytes_;
    std::string where = path + ": chunk " + std::to_string(chunks_ + 1) + " at byte " +
                        std::to_string(offset);
    unsigned char h[kChunkHeaderBytes];
    size_t left = readUpTo(fd, h, sizeof h, path);
    fileBytes_ += left;
    if (left == 0) break;
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
    if (raw % sizeof(capnp::word) != 0 || packed > ZSTD_compressBound(raw)) {
      throw RecordFileError(where + ": damaged chunk header (raw size " + std::to_string(raw) +
                            ", compressed " + std::to_string(packed) + ")");
    }
    if (raw > limits.chunkBytes) {
      throw RecordFileError(where + " holds " + std::to_string(raw) +
                            " bytes decompressed, more than a chunk may (" +
                            mib(limits.chunkBytes) + ")");
    }
    if (rawBytes_ + raw > limits.totalBytes) {
      throw RecordFileError(where + " takes the recording past " + mib(limits.totalBytes) +
                            " decompressed, more than mqd-proxy replay reads");
    }
    packedBuffer.resize(packed);
    size_t n = readUpTo(fd, packedBuffer.data(), packed, path);
    fileBytes_ += n;
    if (n < packed) {
      warnings_.push_back(where + " is cut short (" + std::to_string(n) + " of " +
                          std::to_string(packed) +
                          " bytes) and was ignored: the recording ends before it (the "
                          "debugger probably died while writing it)");
      break;
    }
    // The frame must announce the size the chunk header gave, before room is made for it.
    unsigned long long announced = ZSTD_getFrameContentSize(packedBuffer.data(), packed);
    if (announced != raw) {
      throw RecordFileError(where + " is corrupt: its zstd frame " +
                            (announced == ZSTD_CONTENTSIZE_UNKNOWN ||
                                     announced == ZSTD_CONTENTSIZE_ERROR
                                 ? std::string("does not say its size")
                                 : "holds " + std::to_string(announced) + " bytes") +
                            ", its header says " + std::to_string(raw));
    }
    auto words = kj::heapArray<capnp::word>(raw / sizeof(capnp::word));
    size_t out = ZSTD_decompress(words.begin(), raw, packedBuffer.data(), packed);
    if (ZSTD_isError(out)) {
      throw RecordFileError(where + " is corrupt: " + ZSTD_getErrorName(out));
    }
    if (out != raw) {
      throw RecordFileError(where + " is corrupt: it holds " + std::to_string(out) +
                            " bytes, its header says " + std::to_string(raw));
    }
    readMessages(words.asPtr(), path, where, limits);
    chunkWords_.push_back(kj::mv(words));
    rawBytes_ += raw;
    ++chunks_;
  }
  if (messages_.empty()) {
    throw RecordFileError(path + ": holds no complete chunk: nothing was recorded" +
                          (warnings_.empty() ? std::string() : " (" + warnings_.front() + ")"));
  }
}

void RecordReader::readMessages(kj::ArrayPtr<const capnp::word> words, const std::string& path,
                                const std::string& where, const RecordLimits& limits) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversalWords;
  kj::ArrayPtr<const capnp::word> rest = words;
  size_t message = 0;
  try {
    while (rest.size() > 0) {
      if (message >= limits.chunkMessages) {
        throw RecordFileError(where + " holds more than " +
                              std::to_string(limits.chunkMessages) +
                              " messages, more than a chunk may");
      }
      if (messages_.size() >= limits.messages) {
        throw RecordFileError(where + ": message " + std::to_string(message + 1) +
                              " takes the recording past " + std::to_string(limits.messages) +
                              " messages, more than mqd-proxy replay reads");
      }
      auto reader = kj::heap<capnp::FlatArrayMessageReader>(rest, options);
      kj::ArrayPtr<const capnp::word> own(rest.begin(), reader->getEnd());
      rest = kj::arrayPtr(reader->getEnd(), rest.end());
      // Walked once, within twice its own size: every pointer is checked here, not in use,
      // and a message whose pointers share their targets (an amplification) is refused.
      capnp::ReaderOptions walk;
      walk.traversalLimitInWords = 2 * own.size() + 8;
      capnp::FlatArrayMessageReader check(own, walk);
      if (messages_.empty()) {
        check.getRoot<record::Header>().totalSize();
        header_ = reader->getRoot<record::Header>();
        // The recording's own header, now: not after the rest has been read.
        if (header_.getFormatVersion() != record::FORMAT_VERSION) {
          throw RecordFileError(path + ": its header says format version " +
                                std::to_string(header_.getFormatVersion()) +
                                "; this mqd-proxy reads version " +
                                std::to_string(record::FORMAT_VERSION));
        }
      } else {
        check.getRoot<record::Entry>().totalSize();
        entries_.push_back(reader->getRoot<record::Entry>());
      }
      messages_.push_back(kj::mv(reader));
      ++message;
    }
  } catch (const kj::Exception& e) {
    throw RecordFileError(where + ": message " + std::to_string(message + 1) +
                          " is malformed: " + e.getDescription().cStr());
  }
}

}  // namespace mqd::client
