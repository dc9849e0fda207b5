#include "TokenFile.h"

#include <sys/stat.h>

#include <cstdio>
#include <stdexcept>

#include "Handshake.h"
#include "RegularFile.h"

namespace mqd {

std::string readTokenFile(const std::string& path) {
  auto fail = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error("token file " + why);
  };
  RegularFile file;
  try {
    file = openRegularFile(path);
  } catch (const FileRefused& e) {
    throw fail(e.what());
  }
  const struct stat& st = file.status;
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw fail(path + ": mode " + mode +
               " lets group or others read or change it; a token must be private to its "
               "owner (chmod 600 " + path + ")");
  }
  std::string text;
  try {
    text = readRegularFile(file, path, 4 * kMaxTokenBytes);
  } catch (const FileRefused& e) {
    throw fail(std::string(e.what()) + " (too long for a token)");
  }
  size_t newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  const char* space = " \t\r\n";
  size_t first = text.find_first_not_of(space);
  if (first == std::string::npos) throw fail(path + ": empty (no token on its first line)");
  text = text.substr(first, text.find_last_not_of(space) - first + 1);
  if (text.size() > kMaxTokenBytes) {
    throw fail(path + ": token longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  }
  return text;
}

}  // namespace mqd
