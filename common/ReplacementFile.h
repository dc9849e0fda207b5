// ReplacementFile: a new file that takes the place of PATH, made so that nobody else chooses
// where its bytes go, reads them, or keeps a hold on the file afterwards.
//
// The constructor creates a temporary file in PATH's directory (".NAME.XXXXXX": O_CREAT|O_EXCL|
// O_NOFOLLOW under a random name, so nothing planted in advance is opened instead) and sets its
// mode on the descriptor (fchmod: exactly `mode`, whatever the umask). commit() renames it over
// PATH: whatever file was there (with another owner or mode) or symbolic link is replaced,
// never opened or written through, and a reader sees either the old file or the new one. A
// device, FIFO, socket or directory at PATH is refused (MQD_PROXY_RECORD=/dev/null must not
// replace /dev/null). The descriptor stays usable after commit() (a recording goes on growing
// in place). Destroyed uncommitted, the temporary file is removed.
//
// Every file the product creates goes through here: recordings (RecordFile.h), --ready-file,
// learned state (StateFile.h). Logs, which are appended to, open through logSetFile (Log.h).
#pragma once

#include <kj/common.h>
#include <kj/io.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace mqd {

class ReplacementFile {
 public:
  // Throws std::runtime_error "PATH: cannot create it: why".
  ReplacementFile(std::string path, mode_t mode);
  ~ReplacementFile();
  KJ_DISALLOW_COPY(ReplacementFile);

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

  // Writes all of `data` (after EINTR, again); throws std::runtime_error naming PATH.
  void write(const void* data, size_t size);

  // Puts the file in PATH's place; throws std::runtime_error naming PATH when it cannot (PATH
  // is not a regular file or a link; in a sticky directory such as /tmp, PATH belongs to
  // another user).
  void commit();

 private:
  std::string path_;
  std::string temporary_;  // empty once committed
  kj::AutoCloseFd fd_;
};

}  // namespace mqd
