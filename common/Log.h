// Log: one line per event, to stderr or a file, filtered by level. Thread-safe.
//
// Both the server and the shim use it. The shim defaults to warnings only (it lives inside the
// debugger and must stay quiet); the server defaults to info. Lines look like
//   mqd-proxy-server[1234] warn: worker 1236 killed by SIGSEGV during mqs_next_operation
#pragma once

#include <cstdarg>
#include <cstdint>
#include <string>

namespace mqd {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3, Trace = 4 };

// Parses "error|warn|info|debug|trace"; throws std::invalid_argument otherwise.
LogLevel parseLogLevel(const std::string& text);
const char* logLevelName(LogLevel level);

// Process-wide configuration. `component` names the program in each line.
void logSetComponent(const std::string& component);
void logSetLevel(LogLevel level);
LogLevel logLevel();
// Appends to `path` instead of stderr, creating it (mode 0600) if need be; throws
// std::runtime_error if it cannot be opened, or if it is a symbolic link, a FIFO, a socket or
// a directory, or a file that belongs to another user (who could read what is logged, or have
// made it for us to fill). A character device (a terminal, /dev/null) is taken.
void logSetFile(const std::string& path);
// Writes to an already open fd instead of stderr (the fd is not closed).
void logSetFd(int fd);
// If the log currently goes to stderr, sends it to `fd` instead (used when stderr itself is
// about to be redirected); a log file stays where it is.
void logMoveOffStderr(int fd);

bool logEnabled(LogLevel level);
// One line per call: control characters in the formatted text (a newline in a DLL name a client
// sent, an escape sequence in a file name) are written as \n, \t, \r or \xNN, so that nothing
// logged can forge a line or reach the terminal as a control sequence.
void logf(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

// `text` with its control characters written as \n, \t, \r or \xNN (what logf() logs).
std::string withoutControlCharacters(const char* text);

// A byte count for people: "812 B", "45.3 KiB", "12.0 MiB" (session summaries, the CLI).
std::string formatBytes(uint64_t n);
void vlogf(LogLevel level, const char* format, va_list args);

}  // namespace mqd

#define MQD_LOG(level, ...)                                      \
  do {                                                           \
    if (::mqd::logEnabled(::mqd::LogLevel::level)) {             \
      ::mqd::logf(::mqd::LogLevel::level, __VA_ARGS__);          \
    }                                                            \
  } while (0)
