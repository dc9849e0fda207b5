#include "ReplacementFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "RegularFile.h"

namespace mqd {
namespace {

// A regular file or a link may be replaced; a device, FIFO, socket or directory someone named
// (MQD_PROXY_RECORD=/dev/null) is not ours to replace. Throws std::runtime_error.
void checkReplaceable(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    throw std::runtime_error(path + ": cannot replace it: it is " + fileKind(st.st_mode) +
                             ", and only a regular file or a link is replaced");
  }
}

}  // namespace

ReplacementFile::ReplacementFile(std::string path, mode_t mode) : path_(std::move(path)) {
  auto fail = [&](const std::string& why) {
    return std::runtime_error(path_ + ": cannot create it: " + why);
  };
  size_t slash = path_.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") throw fail("it names a directory");
  checkReplaceable(path_);
  std::string pattern = (slash == std::string::npos ? "" : dir) + "." + name + ".XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  // mkostemp adds O_RDWR|O_CREAT|O_EXCL and mode 0600; the name is new and random.
  int fd = ::mkostemp(buffer.data(), O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw fail(std::strerror(errno));
  fd_ = kj::AutoCloseFd(fd);
  temporary_ = buffer.data();
  if (::fchmod(fd, mode) != 0) {
    int error = errno;
    ::unlink(temporary_.c_str());
    throw fail(std::string("fchmod: ") + std::strerror(error));
  }
}

ReplacementFile::~ReplacementFile() {
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

void ReplacementFile::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_.get(), p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      throw std::runtime_error(path_ + ": cannot write it: " + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void ReplacementFile::commit() {
  if (temporary_.empty()) return;
  auto giveUp = [&]() {
    ::unlink(temporary_.c_str());
    temporary_.clear();
  };
  try {
    checkReplaceable(path_);  // again: what was there may have changed since
  } catch (...) {
    giveUp();
    throw;
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    int error = errno;
    giveUp();
    std::string hint = error == EPERM || error == EACCES
                           ? " (in a directory like /tmp only its owner may replace a file: it "
                             "is someone else's; choose another name)"
                           : "";
    throw std::runtime_error(path_ + ": cannot replace it: " + std::strerror(error) + hint);
  }
  temporary_.clear();
}

}  // namespace mqd
