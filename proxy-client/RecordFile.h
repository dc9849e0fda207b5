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

// A recording that cannot be written or read; what() names the file and what is wrong.
class RecordFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RecordWriter {
 public:
  // Creates `path` (ReplacementFile: a new private file, mode 0600 since a recording holds
  // target memory, in the place of whatever was there, never written through) and writes
  // the file header. Throws RecordFileError.
  explicit RecordWriter(const std::string& path);

  // Appends a message to the chunk being built (nothing is written before flush()).
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
  kj::Own<ReplacementFile> file_;
  std::vector<kj::byte> pending_;  // whole messages, in the stream framing
  size_t pendingMessages_ = 0;
  uint64_t written_ = 0;
};

// A whole recording, read into memory and checked.
class RecordReader {
 public:
  // Throws RecordFileError when `path` cannot be read, is not a recording, has another format
  // version, holds a damaged chunk or message, or has no header.
  explicit RecordReader(const std::string& path);

  record::Header::Reader header() const { return header_; }
  const std::vector<record::Entry::Reader>& entries() const { return entries_; }
  // What was wrong but tolerated (a last chunk cut short), as sentences naming the file.
  const std::vector<std::string>& warnings() const { return warnings_; }

  uint64_t fileBytes() const { return fileBytes_; }
  uint64_t rawBytes() const { return rawBytes_; }
  size_t chunks() const { return chunks_; }

 private:
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
