// RecordFile: the file a recorded session lives in (MQD_PROXY_RECORD; schema/record.capnp),
// written by the shim's SessionRecorder and read by `mqd-proxy replay`.
//
// Layout, all integers little-endian:
//   file header  8 bytes "MQD-REC\n", UInt32 format version (record::FORMAT_VERSION), UInt32 0
//   chunk        16-byte chunk header: "MQDC", UInt32 compressed size, UInt32 raw size, UInt32
//                check (FNV-1a of the 12 bytes before it); then one zstd frame carrying its own
//                content checksum. Raw, a chunk is whole Cap'n Proto messages in the standard
//                stream framing: the file's first message is a record::Header, every later one
//                a record::Entry.
// A chunk is written with one write loop once it is complete, so a debugger that dies leaves a
// file whose last chunk at most is cut short; the reader drops such a chunk with a warning.
// Anything else wrong is an error that names the file, the chunk and its offset.
//
// A recording may come from anyone (a bug report), so the reader trusts none of it: it reads
// the file chunk by chunk, checks the file header before anything else and the recording's
// Header message as soon as it is there, and refuses a recording that would take it past
// RecordLimits before spending the memory. The writer stops at the same limits, so whatever
// the shim records can be replayed.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/io.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ReplacementFile.h"
#include "record.capnp.h"

namespace mqd::client {

// What a recording may hold (docs/record-replay.md, "Bounds"). A reader refuses a file past
// any of them with a sentence naming the file, the chunk and the limit; a replay needs about the
// decompressed size in memory, plus some 340 bytes per message (its reader). Tests and the
// fuzzer use smaller ones.
struct RecordLimits {
  // Decompressed bytes of one chunk: the format's limit. A writer's chunk is a few MiB (the
  // recorder flushes every 1,024 entries or 4 MiB), but one entry may carry a 64 MiB fetch.
  uint64_t chunkBytes = 256ull << 20;
  // Messages in one chunk (the recorder flushes a chunk every 1,024 entries).
  uint64_t chunkMessages = 64ull << 10;
  // Decompressed bytes of the whole recording (a 4-rank Open MPI dump in the `call` cache
  // policy records 750 MiB).
  uint64_t totalBytes = 2ull << 30;
  // Messages in the whole recording, the header included.
  uint64_t messages = 2ull << 20;
  // Words all reads of one message may traverse together: the replay may answer from one
  // recorded block many times (an entry holds at most a 64 MiB fetch, 8 Mi words). When it is
  // read, a message is also walked once within twice its own size: one whose pointers share
  // their targets (an amplification) is refused there.
  uint64_t traversalWords = 256ull << 20;
};

// A recording that cannot be written or read; what() names the file and what is wrong.
class RecordFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Fast, and a recording of target memory and walks still shrinks several times.
constexpr int kRecordZstdLevel = 3;

// The file header, and one chunk holding `raw` (whole messages in the stream framing), as a
// RecordWriter writes them: for the writer, and for tests and the fuzzer that make recordings
// by hand. recordChunk() throws RecordFileError.
std::vector<unsigned char> recordFileHeader();
std::vector<unsigned char> recordChunk(kj::ArrayPtr<const kj::byte> raw,
                                       int level = kRecordZstdLevel);

class RecordWriter {
 public:
  // Creates `path` (ReplacementFile: a new private file, mode 0600 since a recording holds
  // target memory, in the place of whatever was there, never written through) and writes
  // the file header. Throws RecordFileError.
  explicit RecordWriter(const std::string& path, const RecordLimits& limits = RecordLimits());

  // Appends a message to the chunk being built (nothing is written before flush(), or before
  // the chunk holds limits.chunkMessages). Throws RecordFileError, after writing what is
  // pending, when the message would take the recording past `limits` (the reader's): the
  // recording ends there, and can still be replayed.
  void add(capnp::MessageBuilder& message);
  size_t pendingMessages() const { return pendingMessages_; }
  size_t pendingBytes() const { return pending_.size(); }

  // Compresses the pending messages into one chunk and writes it; nothing when none are
  // pending. Throws RecordFileError (disk full, I/O error); the file then ends with a chunk
  // cut short at worst.
  void flush();

  const std::string& path() const { return path_; }
  uint64_t bytesWritten() const { return written_; }

 private:
  void write(const void* data, size_t size);

  std::string path_;
  RecordLimits limits_;
  kj::Own<ReplacementFile> file_;
  std::vector<kj::byte> pending_;  // whole messages, in the stream framing
  size_t pendingMessages_ = 0;
  uint64_t written_ = 0;
  uint64_t rawFlushed_ = 0;        // decompressed bytes of the chunks written
  uint64_t messagesFlushed_ = 0;
};

// A whole recording, read into memory and checked.
class RecordReader {
 public:
  // Throws RecordFileError when `path` cannot be read or is not a regular file, is not a
  // recording, has another format version, holds a damaged chunk or message, has no header,
  // or goes past `limits`; also when the memory for it runs out.
  explicit RecordReader(const std::string& path, const RecordLimits& limits = RecordLimits());

  record::Header::Reader header() const { return header_; }
  const std::vector<record::Entry::Reader>& entries() const { return entries_; }
  // What was wrong but tolerated (a last chunk cut short), as sentences naming the file.
  const std::vector<std::string>& warnings() const { return warnings_; }

  uint64_t fileBytes() const { return fileBytes_; }
  uint64_t rawBytes() const { return rawBytes_; }
  size_t chunks() const { return chunks_; }

 private:
  void read(const std::string& path, const RecordLimits& limits);
  // Reads the messages of one decompressed chunk; `where` names it in errors.
  void readMessages(kj::ArrayPtr<const capnp::word> words, const std::string& path,
                    const std::string& where, const RecordLimits& limits);

  std::vector<kj::Array<capnp::word>> chunkWords_;
  std::vector<kj::Own<capnp::FlatArrayMessageReader>> messages_;
  record::Header::Reader header_;
  std::vector<record::Entry::Reader> entries_;
  std::vector<std::string> warnings_;
  uint64_t fileBytes_ = 0;
  uint64_t rawBytes_ = 0;
  size_t chunks_ = 0;
};

}  // namespace mqd::client
