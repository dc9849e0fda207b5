#include "StateFile.h"

#include <capnp/serialize.h>
#include <kj/debug.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "Log.h"
#include "RegularFile.h"
#include "ReplacementFile.h"

namespace mqd {

bool readStateFile(const std::string& path, uint64_t maxWords,
                   const std::function<void(capnp::MessageReader&)>& use) {
  try {
    // The whole file first (more than maxWords cannot be a valid state file), then a reader
    // over memory. A stream reader would skip what a short file lacks in its destructor, where
    // kj can only print the failure to stderr, which in a worker is the DLL's output: the
    // debugger would see it.
    std::string bytes = readRegularFile(path, maxWords * sizeof(capnp::word), LastLink::Refuse);
    if (bytes.size() % sizeof(capnp::word) != 0) {
      KJ_FAIL_REQUIRE("not a whole number of words", bytes.size());
    }
    auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes.data(), bytes.size());
    capnp::ReaderOptions options;
    options.traversalLimitInWords = maxWords;
    capnp::FlatArrayMessageReader reader(words, options);
    use(reader);
    return true;
  } catch (const FileRefused& e) {
    if (!e.missing()) MQD_LOG(Warn, "ignoring unreadable state file %s", e.what());
    return false;
  } catch (const kj::Exception& e) {
    MQD_LOG(Warn, "ignoring unreadable %s: %s", path.c_str(), e.getDescription().cStr());
    return false;
  }
}

bool writeStateFile(const std::string& path, capnp::MessageBuilder& message) {
  try {
    ReplacementFile file(path, 0600);
    capnp::writeMessageToFd(file.fd(), message);
    file.commit();
    return true;
  } catch (const std::runtime_error& e) {
    MQD_LOG(Warn, "cannot write state file %s", e.what());
    return false;
  } catch (const kj::Exception& e) {
    MQD_LOG(Warn, "cannot write %s: %s", path.c_str(), e.getDescription().cStr());
    return false;
  }
}

bool makeStateDir(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string partial = dir.substr(0, i);
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      MQD_LOG(Warn, "cannot create state directory %s: %s", dir.c_str(), std::strerror(errno));
      return false;
    }
  }
  return !dir.empty();
}

}  // namespace mqd
