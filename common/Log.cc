#include "Log.h"

#include <fcntl.h>
#include <kj/io.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "RegularFile.h"

namespace mqd {
namespace {

std::mutex gMutex;
std::string gComponent = "mqd-proxy";
std::atomic<int> gLevel{static_cast<int>(LogLevel::Warn)};
int gFd = STDERR_FILENO;
bool gOwnFd = false;

constexpr const char* kNames[] = {"error", "warn", "info", "debug", "trace"};

// Closes the log file this copy of the code opened when it goes away: at exit, or when a
// debugger dlclose()s the shim, which would otherwise leave one descriptor open per load.
// Later lines (none are expected) go to stderr. Constructed after the state above, so it is
// destroyed before it; a function-local static (the shim's MqsClient) is destroyed before it.
struct LogFileCloser {
  ~LogFileCloser() {
    std::lock_guard<std::mutex> lock(gMutex);
    if (gOwnFd) ::close(gFd);
    gFd = STDERR_FILENO;
    gOwnFd = false;
  }
} gLogFileCloser;

}  // namespace

LogLevel parseLogLevel(const std::string& text) {
  for (int i = 0; i <= static_cast<int>(LogLevel::Trace); ++i) {
    if (text == kNames[i]) return static_cast<LogLevel>(i);
  }
  throw std::invalid_argument("unknown log level \"" + text +
                              "\" (expected error, warn, info, debug or trace)");
}

const char* logLevelName(LogLevel level) { return kNames[static_cast<int>(level)]; }

void logSetComponent(const std::string& component) {
  std::lock_guard<std::mutex> lock(gMutex);
  gComponent = component;
}

void logSetLevel(LogLevel level) { gLevel.store(static_cast<int>(level)); }

LogLevel logLevel() { return static_cast<LogLevel>(gLevel.load()); }

void logSetFile(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return std::runtime_error("cannot open log file " + path + ": " + why);
  };
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK,
                  0600);
  if (fd < 0) {
    if (errno == ELOOP) throw refuse("it is a symbolic link (name the file itself)");
    throw refuse(std::strerror(errno));
  }
  kj::AutoCloseFd file(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) throw refuse(std::strerror(errno));
  if (S_ISREG(st.st_mode)) {
    if (st.st_uid != ::geteuid()) {
      throw refuse("it belongs to " + describeUser(st.st_uid) +
                   ", who could read what is logged; a log file must be your own");
    }
  } else if (!S_ISCHR(st.st_mode)) {  // a terminal or /dev/null will do
    throw refuse(std::string("it is ") + fileKind(st.st_mode) + ", not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::lock_guard<std::mutex> lock(gMutex);
  if (gOwnFd) ::close(gFd);
  gFd = file.release();
  gOwnFd = true;
}

void logSetFd(int fd) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gOwnFd) ::close(gFd);
  gFd = fd;
  gOwnFd = false;
}

void logMoveOffStderr(int fd) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gOwnFd && gFd == STDERR_FILENO) gFd = fd;
}

bool logEnabled(LogLevel level) { return static_cast<int>(level) <= gLevel.load(); }

std::string withoutControlCharacters(const char* text) {
  std::string out;
  for (const char* p = text; *p != '\0'; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != 0x7f) {
      out += *p;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

void vlogf(LogLevel level, const char* format, va_list args) {
  char formatted[2048];
  std::vsnprintf(formatted, sizeof formatted, format, args);
  // One event, one line: names a client or a file supplied (a DLL, a path, a remote server's
  // words) must not start lines of their own or move the terminal.
  std::string body = withoutControlCharacters(formatted);
  std::lock_guard<std::mutex> lock(gMutex);
  char line[2300];
  int n = std::snprintf(line, sizeof line, "%s[%d] %s: %s\n", gComponent.c_str(),
                        static_cast<int>(::getpid()), logLevelName(level), body.c_str());
  if (n < 0) return;
  size_t len = static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1;
  line[len - 1] = '\n';  // keep one event per line even when truncated
  const char* p = line;
  while (len > 0) {
    ssize_t w = ::write(gFd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // nowhere left to report a logging failure
    p += w;
    len -= static_cast<size_t>(w);
  }
}

void logf(LogLevel level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vlogf(level, format, args);
  va_end(args);
}

std::string formatBytes(uint64_t n) {
  char buf[32];
  if (n < 10 * 1024) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  } else if (n < 10ull * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", n / (1024.0 * 1024.0));
  }
  return buf;
}

}  // namespace mqd
