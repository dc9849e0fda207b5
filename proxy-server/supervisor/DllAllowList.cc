#include "DllAllowList.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "Log.h"
#include "RegularFile.h"

namespace mqd::server {
namespace {

std::string baseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

DllAllowList::DllAllowList(const std::vector<std::string>& paths, bool open)
    : open_(open && paths.empty()) {
  for (const std::string& given : paths) {
    char resolved[PATH_MAX];
    if (::realpath(given.c_str(), resolved) == nullptr) {
      throw std::runtime_error("--dll " + given + ": " + std::strerror(errno));
    }
    // Opened once, here: the file checked is the file loaded.
    RegularFile file;
    try {
      file = openRegularFile(resolved);
    } catch (const FileRefused& e) {
      throw std::runtime_error(std::string("--dll ") + given + ": " + e.what());
    }
    entries_.push_back({given, resolved, baseName(resolved), kj::mv(file.fd)});
  }
}

DllChoice DllAllowList::select(const std::string& requested) const {
  for (unsigned char c : requested) {
    if (c < 0x20 || c == 0x7f) {
      throw std::runtime_error("vendor DLL \"" + withoutControlCharacters(requested.c_str()) +
                               "\": a DLL's name holds no control characters");
    }
  }
  if (open_) {
    if (requested.empty() || requested[0] != '/') {
      throw std::runtime_error(
          "this server (started with --stdio and no --dll) loads the vendor DLL the debugger "
          "names by its absolute path on the server's host; set MQD_PROXY_DLL to it" +
          (requested.empty() ? std::string() : " (got \"" + requested + "\")"));
    }
    char resolved[PATH_MAX];
    if (::realpath(requested.c_str(), resolved) == nullptr) {
      throw std::runtime_error("vendor DLL \"" + requested + "\": " + std::strerror(errno));
    }
    return {requested, -1};
  }
  if (entries_.empty()) {
    throw std::runtime_error("this server allows no vendor DLL (start it with --dll PATH)");
  }
  auto chosen = [](const Entry& e) { return DllChoice{e.given, e.file.get()}; };
  if (requested.empty()) return chosen(entries_.front());
  for (const Entry& e : entries_) {
    if (requested == e.given || requested == e.canonical) return chosen(e);
  }
  const Entry* match = nullptr;
  int matches = 0;
  for (const Entry& e : entries_) {
    if (baseName(requested) == e.baseName) {
      match = &e;
      ++matches;
    }
  }
  if (matches == 1) return chosen(*match);
  std::string allowed;
  for (const Entry& e : entries_) allowed += (allowed.empty() ? "" : ", ") + e.given;
  if (matches > 1) {
    throw std::runtime_error("vendor DLL \"" + requested +
                             "\" is ambiguous on this server; name one of: " + allowed);
  }
  throw std::runtime_error("vendor DLL \"" + requested +
                           "\" is not on this server's allow-list (allowed: " + allowed + ")");
}

std::vector<std::string> DllAllowList::paths() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.given);
  return out;
}

}  // namespace mqd::server
