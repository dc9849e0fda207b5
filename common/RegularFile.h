// RegularFile: opening and reading a file someone named (a configuration, token, TLS or state
// file, a recording) without trusting what is at that path.
//
// The open never blocks: O_NONBLOCK, so a FIFO without a writer, or a device, cannot hold the
// caller (a debugger loading the shim, a server starting) at open(). Anything but a regular
// file is then refused with a sentence that says what it is: a FIFO, a directory, a character
// device (/dev/zero), a socket. With LastLink::Refuse a symbolic link as the last component is
// refused too (the server's own state files: nobody should link them elsewhere); the others
// follow links, since users keep configuration files behind them. readRegularFile() also
// bounds the size: a larger file is refused before and while it is read (it may grow).
#pragma once

#include <kj/io.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace mqd {

// Why a file was refused; what() is "PATH: why" (e.g. "/x/fifo: a FIFO, not a regular file").
class FileRefused : public std::runtime_error {
 public:
  FileRefused(const std::string& what, int error) : std::runtime_error(what), error_(error) {}
  // The errno of a failed open() or read() (ENOENT: there is no such file), else 0.
  int error() const { return error_; }
  bool missing() const { return error_ == ENOENT; }

 private:
  int error_;
};

enum class LastLink { Follow, Refuse };

// The largest PEM file (a TLS certificate chain, key or CA bundle) either side reads.
constexpr size_t kMaxPemBytes = 1 << 20;

// An open regular file and what fstat() said about it; the descriptor is blocking again.
struct RegularFile {
  kj::AutoCloseFd fd;
  struct stat status;
};

// Opens `path` read-only (close-on-exec); throws FileRefused.
RegularFile openRegularFile(const std::string& path, LastLink links = LastLink::Follow);

// The whole content of `file` (opened from `path`, named in errors), at most `maxBytes`;
// throws FileRefused for a larger file.
std::string readRegularFile(RegularFile& file, const std::string& path, size_t maxBytes);

// openRegularFile() and readRegularFile() together.
std::string readRegularFile(const std::string& path, size_t maxBytes,
                            LastLink links = LastLink::Follow);

// What kind of file `mode` is, for people: "a FIFO", "a directory", "a character device"...
const char* fileKind(mode_t mode);

// A user for people: "nobody (uid 65534)", or "uid 4242" for a uid without a name.
std::string describeUser(uid_t uid);

}  // namespace mqd
