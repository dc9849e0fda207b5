#include "StateFile.h"

#include <capnp/serialize.h>
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
  bool ok = true;
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = maxWords;
    capnp::StreamFdMessageReader reader(fd, options);
    use(reader);
  } catch (const kj::Exception& e) {
    MQD_LOG(Warn, "ignoring unreadable %s: %s", path.c_str(), e.getDescription().cStr());
    ok = false;
  }
  ::close(fd);
  return ok;
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
