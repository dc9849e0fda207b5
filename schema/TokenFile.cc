#include "TokenFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "Handshake.h"

namespace mqd {
namespace {

// Closes the descriptor on every path out of readTokenFile.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string readTokenFile(const std::string& path) {
  auto fail = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error("token file " + path + ": " + why);
  };
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY)};
  if (file.fd < 0) throw fail(std::strerror(errno));
  struct stat st;
  if (::fstat(file.fd, &st) != 0) throw fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw fail("not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw fail(std::string("mode ") + mode +
               " lets group or others read or change it; a token must be private to its "
               "owner (chmod 600 " + path + ")");
  }
  std::string text;
  char buf[1024];
  for (;;) {
    ssize_t n = ::read(file.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > 4 * kMaxTokenBytes) throw fail("too long for a token");
  }
  size_t newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  const char* space = " \t\r\n";
  size_t first = text.find_first_not_of(space);
  if (first == std::string::npos) throw fail("empty (no token on its first line)");
  text = text.substr(first, text.find_last_not_of(space) - first + 1);
  if (text.size() > kMaxTokenBytes) {
    throw fail("token longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  }
  return text;
}

}  // namespace mqd
