// StateFile: the files the shim and the server keep in their state directories (LearnedLookups,
// LearnedMemory): one Cap'n Proto message each, read with a traversal limit and replaced
// atomically (ReplacementFile: a private temporary file renamed over the old one), so a reader
// never sees half a file and a link planted in the directory is never followed.
// Failures are logged as warnings and never fatal: learned state only saves round trips.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <functional>
#include <string>

namespace mqd {

// Calls `use` with the message in `path`, read whole (a file over `maxWords` words, or anything
// but a regular file, a symbolic link included, is unreadable) and traversed within
// `maxWords`. False when there is no such file, or when reading it (or `use`) threw: then a
// warning names the file; nothing else is printed.
bool readStateFile(const std::string& path, uint64_t maxWords,
                   const std::function<void(capnp::MessageReader&)>& use);

// Replaces `path` with `message`; false (with a warning) if it could not.
bool writeStateFile(const std::string& path, capnp::MessageBuilder& message);

// Creates `dir` and its missing parents (mode 0700); false (with a warning) if it could not.
bool makeStateDir(const std::string& dir);

}  // namespace mqd
