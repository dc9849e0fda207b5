#include "StateFile.h"

#include <capnp/serialize.h>
#include <kj/debug.h>
#include <kj/io.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "Log.h"

namespace mqd::server {

bool readStateFile(const std::string& path, uint64_t maxWords,
                   const std::function<void(capnp::MessageReader&)>& use) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  try {
    // The whole file first (more than maxWords cannot be a valid state file), then a reader
    // over memory. A stream reader would skip what a short file lacks in its destructor, where
    // kj can only print the failure to stderr, which in a worker is the DLL's output: the
    // debugger would see it.
    kj::FdInputStream in{kj::AutoCloseFd(fd)};
    kj::Array<kj::byte> bytes = in.readAllBytes(maxWords * sizeof(capnp::word) + 1);
    if (bytes.size() % sizeof(capnp::word) != 0) {
      KJ_FAIL_REQUIRE("not a whole number of words", bytes.size());
    }
    auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes.begin(), bytes.size());
    capnp::ReaderOptions options;
    options.traversalLimitInWords = maxWords;
    capnp::FlatArrayMessageReader reader(words, options);
    use(reader);
    return true;
  } catch (const kj::Exception& e) {
    MQD_LOG(Warn, "ignoring unreadable %s: %s", path.c_str(), e.getDescription().cStr());
    return false;
  }
}

bool writeStateFile(const std::string& path, capnp::MessageBuilder& message) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    MQD_LOG(Warn, "cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    return false;
  }
  try {
    capnp::writeMessageToFd(fd, message);
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
    return true;
  } catch (const kj::Exception& e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    MQD_LOG(Warn, "cannot write %s: %s", path.c_str(), e.getDescription().cStr());
    return false;
  }
}

}  // namespace mqd::server
