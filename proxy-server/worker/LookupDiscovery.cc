#include "LookupDiscovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <kj/io.h>

#include "Log.h"

namespace mqd::server {
namespace {

// A record: kind (1 byte), lang (4 bytes), the name's length (2 bytes) and bytes, the field's
// length (2 bytes) and bytes; host byte order (parent and child are one program).
constexpr size_t kMaxText = 0xffff;

void put(std::vector<unsigned char>& out, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  out.insert(out.end(), b, b + n);
}

void putText(std::vector<unsigned char>& out, const std::string& text) {
  uint16_t n = static_cast<uint16_t>(std::min(text.size(), kMaxText));
  put(out, &n, sizeof n);
  put(out, text.data(), n);
}

// Writes all of `bytes`, retrying interrupted and partial writes; false on failure.
bool writeAll(int fd, const std::vector<unsigned char>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// In the child: stdout and stderr to /dev/null, the pipe at 3, every other descriptor closed,
// so that nothing it does reaches the parent's connection or output capture.
int isolateChild(int pipeWrite) {
  int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 1);
    ::dup2(null, 2);
  }
  if (pipeWrite != 3 && ::dup2(pipeWrite, 3) < 0) ::_exit(1);
  ::close_range(4, ~0u, 0);
  return 3;
}

}  // namespace

void LookupDiscovery::writeKey(int fd, const LookupKey& key) {
  std::vector<unsigned char> record;
  unsigned char kind = static_cast<unsigned char>(key.kind);
  int32_t lang = key.lang;
  put(record, &kind, 1);
  put(record, &lang, sizeof lang);
  putText(record, key.name);
  putText(record, key.field);
  writeAll(fd, record);
}

std::vector<LookupKey> LookupDiscovery::parse(const std::vector<unsigned char>& bytes) {
  std::vector<LookupKey> keys;
  std::set<LookupKey> seen;
  size_t at = 0;
  auto take = [&](void* out, size_t n) {
    if (bytes.size() - at < n) return false;
    std::memcpy(out, bytes.data() + at, n);
    at += n;
    return true;
  };
  auto takeText = [&](std::string* out) {
    uint16_t n = 0;
    if (!take(&n, sizeof n) || bytes.size() - at < n) return false;
    out->assign(reinterpret_cast<const char*>(bytes.data() + at), n);
    at += n;
    return true;
  };
  while (at < bytes.size() && keys.size() < kMaxNames) {
    unsigned char kind = 0;
    int32_t lang = 0;
    LookupKey key{LookupKey::Symbol, {}, 0, {}};
    if (!take(&kind, 1) || !take(&lang, sizeof lang) || !takeText(&key.name) ||
        !takeText(&key.field) || kind > LookupKey::SizeOf) {
      break;
    }
    key.kind = static_cast<LookupKey::Kind>(kind);
    key.lang = lang;
    if (seen.insert(key).second) keys.push_back(std::move(key));
  }
  return keys;
}

std::vector<LookupKey> LookupDiscovery::discover(const std::function<void(int fd)>& setUp,
                                                 std::chrono::milliseconds deadline) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  kj::AutoCloseFd readEnd(fds[0]);
  kj::AutoCloseFd writeEnd(fds[1]);
  pid_t child = ::fork();
  if (child < 0) {
    MQD_LOG(Info, "no look-ups discovered: fork: %s", std::strerror(errno));
    return {};
  }
  if (child == 0) {
    int fd = isolateChild(writeEnd.get());
    setUp(fd);
    ::_exit(0);
  }
  writeEnd = kj::AutoCloseFd();  // the child's end alone keeps the pipe open
  std::vector<unsigned char> bytes;
  auto until = std::chrono::steady_clock::now() + deadline;
  bool ended = false;
  while (!ended) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{readEnd.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    unsigned char buf[8192];
    ssize_t n = ::read(readEnd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ended = true;
    } else {
      bytes.insert(bytes.end(), buf, buf + n);
    }
  }
  if (!ended) {
    MQD_LOG(Info, "look-up discovery stopped after %lld ms",
            static_cast<long long>(deadline.count()));
  }
  ::kill(child, SIGKILL);  // ended or not: nothing of it outlives this call
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return parse(bytes);
}

}  // namespace mqd::server
