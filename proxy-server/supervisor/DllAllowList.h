// DllAllowList: the vendor DLLs this server may load, and how a client's choice maps to one.
//
// Built once at start-up from --dll options. Each path is canonicalised (realpath: a name
// without a slash is a file in the working directory, never one the loader would search for
// on the library path) and the file opened there and then: the descriptor is what a worker
// loads (VendorDll, through /proc/self/fd), so the DLL that runs is the very file checked at
// start-up, whatever later happens to the path (a link pointed elsewhere, a file replaced).
// The descriptors are close-on-exec; workers are forked, not exec'd, and inherit them.
//
// A client names a DLL by the exact path given on the command line, by its canonical path, or
// by anything with the same base name when exactly one allowed DLL has it (so a target's
// MPIR_dll_name selects the server's copy of that DLL); an empty name selects the first
// (default) DLL. Client input never reaches the file system: it is only compared against this
// list, and a name with a control character is refused outright.
//
// The one exception is a server started for one user over ssh (--stdio) without any --dll: ssh
// authenticated that user and the server runs with their rights, so it loads the DLL they
// name by absolute path (an "open" list), as they could themselves.
#pragma once

#include <kj/io.h>

#include <string>
#include <vector>

namespace mqd::server {

// What select() chose: the path to show (as given on the command line, or as the client named
// it for an open list) and the file to load (-1: open `path` when loading, open list only).
struct DllChoice {
  std::string path;
  int fd = -1;
};

class DllAllowList {
 public:
  // Canonicalises and opens every path; throws std::runtime_error naming a path that does not
  // exist or is not a regular file. An empty list is allowed (the server then refuses every
  // session, saying why). With `open`, an empty list admits any existing absolute path a
  // client names.
  explicit DllAllowList(const std::vector<std::string>& paths, bool open = false);

  // The DLL to load for a client's request; throws std::runtime_error explaining the refusal.
  DllChoice select(const std::string& requested) const;

  bool open() const { return open_; }

  // The paths as given on the command line, default first.
  std::vector<std::string> paths() const;

 private:
  struct Entry {
    std::string given;
    std::string canonical;
    std::string baseName;
    kj::AutoCloseFd file;  // opened at start-up: what is loaded
  };
  std::vector<Entry> entries_;
  bool open_ = false;
};

}  // namespace mqd::server
