#include "RegularFile.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mqd {

const char* fileKind(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a file";
  }
}

std::string describeUser(uid_t uid) {
  struct passwd entry;
  struct passwd* found = nullptr;
  char buffer[4096];
  std::string number = "uid " + std::to_string(uid);
  if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) {
    return number;
  }
  return std::string(found->pw_name) + " (" + number + ")";
}

RegularFile openRegularFile(const std::string& path, LastLink links) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  if (links == LastLink::Refuse) flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    int error = errno;
    if (error == ELOOP && links == LastLink::Refuse) {
      throw FileRefused(path + ": a symbolic link, not a regular file (name the file itself)",
                        error);
    }
    if (error == ENXIO) {  // a unix socket cannot be opened at all
      throw FileRefused(path + ": a socket, not a regular file", error);
    }
    throw FileRefused(path + ": " + std::strerror(error), error);
  }
  RegularFile file{kj::AutoCloseFd(fd), {}};
  if (::fstat(fd, &file.status) != 0) {
    int error = errno;
    throw FileRefused(path + ": " + std::strerror(error), error);
  }
  if (!S_ISREG(file.status.st_mode)) {
    throw FileRefused(path + ": " + fileKind(file.status.st_mode) + ", not a regular file", 0);
  }
  // O_NONBLOCK only kept open() from waiting; reads of a regular file never wait anyway.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

std::string readRegularFile(RegularFile& file, const std::string& path, size_t maxBytes) {
  auto tooLarge = [&]() {
    return FileRefused(path + ": larger than " + std::to_string(maxBytes) +
                           " bytes, more than such a file ever holds",
                       0);
  };
  if (static_cast<uint64_t>(file.status.st_size) > maxBytes) throw tooLarge();
  std::string text;
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(file.fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      throw FileRefused(path + ": " + std::strerror(error), error);
    }
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > maxBytes) throw tooLarge();
    text.append(buffer, static_cast<size_t>(n));
  }
}

std::string readRegularFile(const std::string& path, size_t maxBytes, LastLink links) {
  RegularFile file = openRegularFile(path, links);
  return readRegularFile(file, path, maxBytes);
}

}  // namespace mqd
