// mqd-relay: a user-space network path with latency and faults, for tests and benchmarks.
//
// This machine's kernel has no netem, so a WAN is simulated here: every byte from either side
// is held for --delay-ms before it is passed on (one way; a round trip gains twice that), and
// each direction can be capped to --bandwidth bytes per second (a chunk is passed on once it
// has "arrived" at that rate, after the one before it). Order is preserved.
//
//   mqd-relay --listen ENDPOINT --connect ENDPOINT [--delay-ms N [--delay-after-signal]]
//             [--bandwidth BYTES] [--ready-file PATH] [--fault KIND:DIR:N | --random-faults P]
//             [--fault-log PATH] [--exchanges-file PATH]
//
// With --delay-after-signal the delay starts at the first SIGUSR1: a benchmark sets a target
// up over a fast link and measures over the slow one.
//
// With --exchanges-file it counts the exchanges it relays, whatever the protocol: an exchange
// starts when a client sends after its server last answered (or first), so a request and its
// answer count once however they are split; a benchmark reads the count between its phases.
//
// It can also break the connections it relays, at chosen Cap'n Proto messages (FaultPlan.h).
//
// ENDPOINT is unix:PATH or tcp:HOST:PORT; with tcp:HOST:0 the bound port is written to the
// ready file. Connections are relayed independently; the relay runs until killed.
//
// Plain threads and absolute-deadline sleeps, not an event loop: the event loops at hand (kj,
// libuv) time in whole milliseconds, which would turn an injected 1 ms round trip into 3.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <kj/io.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "Endpoint.h"
#include "FaultPlan.h"

namespace {

struct Settings {
  std::string listen;
  std::string connect;
  int64_t delayNs = 0;
  uint64_t bandwidth = 0;  // bytes per second per direction, 0 = unlimited
  std::string readyFile;
  mqd::relay::FaultPlan faults;
};

// The exchanges of every connection, for --exchanges-file: its text is the count, rewritten
// in place at each new exchange (fixed width, so a reader never sees a shorter number's tail).
class ExchangeCounter {
 public:
  void open(const std::string& path) {
    fd_ = kj::AutoCloseFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd_.get() < 0) throw std::runtime_error("--exchanges-file " + path + ": " +
                                                std::strerror(errno));
    write(0);
  }
  void count() {
    if (fd_.get() < 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    write(++count_);
  }

 private:
  void write(uint64_t n) {
    char text[32];
    int length = std::snprintf(text, sizeof text, "%20llu\n", static_cast<unsigned long long>(n));
    if (::pwrite(fd_.get(), text, static_cast<size_t>(length), 0) != length) {
      std::fprintf(stderr, "mqd-relay: cannot write the exchanges file: %s\n",
                   std::strerror(errno));
    }
  }
  kj::AutoCloseFd fd_;
  std::mutex mutex_;
  uint64_t count_ = 0;
};
ExchangeCounter exchanges;

// What the two directions of one relayed connection share.
struct Link {
  uint64_t connection;          // 1 for the first connection accepted
  std::atomic<bool> stalled{false};
  int client = -1;
  int server = -1;
  // The client has sent since the server last did: its next bytes continue that exchange.
  std::atomic<bool> asking{false};
  // Closes both sides: each peer sees the connection end.
  void kill() {
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(server, SHUT_RDWR);
  }
};

// Whether --delay-ms applies yet: from the start, or from SIGUSR1 with --delay-after-signal.
std::atomic<bool> delaying{true};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void startDelaying(int) { delaying.store(true); }

int64_t nowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

void sleepUntil(int64_t ns) {
  timespec t{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void noDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on unix
}

// Resolves `e` to socket addresses (one for unix).
struct Address {
  sockaddr_storage storage;
  socklen_t length;
  int family;
};

std::vector<Address> resolve(const mqd::Endpoint& e) {
  std::vector<Address> out;
  if (e.kind == mqd::Endpoint::Kind::Unix) {
    Address a{};
    auto* un = reinterpret_cast<sockaddr_un*>(&a.storage);
    un->sun_family = AF_UNIX;
    if (e.path.size() >= sizeof un->sun_path) throw std::runtime_error("socket path too long");
    std::strcpy(un->sun_path, e.path.c_str());
    a.length = sizeof(sockaddr_un);
    a.family = AF_UNIX;
    out.push_back(a);
    return out;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  std::string port = std::to_string(e.port);
  int rc = ::getaddrinfo(e.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) throw std::runtime_error(e.host + ": " + gai_strerror(rc));
  for (addrinfo* i = list; i != nullptr; i = i->ai_next) {
    Address a{};
    std::memcpy(&a.storage, i->ai_addr, i->ai_addrlen);
    a.length = i->ai_addrlen;
    a.family = i->ai_family;
    out.push_back(a);
  }
  ::freeaddrinfo(list);
  return out;
}

int connectTo(const mqd::Endpoint& e) {
  for (const Address& a : resolve(e)) {
    int fd = ::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a.storage), a.length) == 0) return fd;
    ::close(fd);
  }
  return -1;
}

// One direction of one connection: a reader stamps each chunk with the time it may leave, a
// writer sends it then.
class Direction {
 public:
  Direction(int from, int to, Settings& s, Link& link, mqd::relay::Direction dir)
      : from_(from), to_(to), settings_(s), link_(link), dir_(dir), framing_(dir) {}

  void run() {
    std::thread writer([this] { writeLoop(); });
    readLoop();
    writer.join();
  }

 private:
  struct Chunk {
    int64_t due;
    std::vector<char> bytes;  // empty: end of stream
    bool kill = false;        // after these bytes, close both sides
  };

  void push(const char* bytes, size_t n, bool end, bool kill) {
    int64_t due = nowNs() + (delaying.load() ? settings_.delayNs : 0);
    std::lock_guard<std::mutex> lock(mutex_);
    if (n > 0) queue_.push_back({due, std::vector<char>(bytes, bytes + n), false});
    if (end || kill) queue_.push_back({due, std::vector<char>(), kill});
    wake_.notify_one();
  }

  void readLoop() {
    char buffer[65536];
    for (;;) {
      ssize_t n = ::read(from_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // A side gave up on a stalled connection: end the other side too.
        push(nullptr, 0, true, link_.stalled.load());
        return;
      }
      if (link_.stalled.load()) continue;  // swallowed
      if (dir_ == mqd::relay::Direction::Down) link_.asking = false;
      else if (!link_.asking.exchange(true)) exchanges.count();
      if (!settings_.faults.active()) {
        push(buffer, static_cast<size_t>(n), false, false);
        continue;
      }
      if (!injectFaults(buffer, static_cast<size_t>(n))) return;
    }
  }

  // Forwards one chunk, injecting the planned faults at the messages that start in it.
  // Returns false when the connection is being closed (no more reading).
  bool injectFaults(char* buffer, size_t n) {
    using mqd::relay::FaultKind;
    std::vector<size_t> starts = framing_.feed(buffer, n);
    uint64_t first = framing_.started() - starts.size() + 1;
    for (size_t k = 0; k < starts.size(); ++k) {
      size_t at = starts[k];
      FaultKind kind = settings_.faults.faultFor(link_.connection, dir_, first + k);
      if (kind == FaultKind::None) continue;
      settings_.faults.record(link_.connection, dir_, first + k, kind);
      switch (kind) {
        case FaultKind::Drop:
          push(buffer, at, false, true);
          return false;
        case FaultKind::Truncate: {
          size_t half = (n - at) / 2;
          push(buffer, at + (half == 0 ? 1 : half), false, true);
          return false;
        }
        case FaultKind::Stall:
          push(buffer, at, false, false);
          link_.stalled = true;
          return true;  // read on, swallowing, until a side gives up
        case FaultKind::Corrupt:
          // A segment count of about 2^31: no reader may accept it.
          if (at + 3 < n) buffer[at + 3] = 0x7f;
          else buffer[at] = static_cast<char>(0xff);
          break;
        case FaultKind::None:
          break;
      }
    }
    push(buffer, n, false, false);
    return true;
  }

  void writeLoop() {
    int64_t busyUntil = 0;  // when the link finishes "transmitting" the previous chunk
    for (;;) {
      Chunk chunk;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        chunk = std::move(queue_.front());
        queue_.pop_front();
      }
      int64_t at = chunk.due;
      if (settings_.bandwidth > 0 && !chunk.bytes.empty()) {
        int64_t start = at > busyUntil ? at : busyUntil;
        busyUntil = start + static_cast<int64_t>(chunk.bytes.size() * 1000000000ull /
                                                 settings_.bandwidth);
        at = busyUntil;
      }
      sleepUntil(at);
      if (chunk.kill) {
        link_.kill();  // the reader has stopped queueing
        return;
      }
      if (chunk.bytes.empty()) {
        ::shutdown(to_, SHUT_WR);
        return;
      }
      size_t done = 0;
      while (done < chunk.bytes.size()) {
        ssize_t n = ::send(to_, chunk.bytes.data() + done, chunk.bytes.size() - done,
                           MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          // The receiver is gone: stop reading from the sender too.
          ::shutdown(from_, SHUT_RD);
          ::shutdown(to_, SHUT_WR);
          drain();
          return;
        }
        done += static_cast<size_t>(n);
      }
    }
  }

  // Discards what the reader still queues, until it ends.
  void drain() {
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return !queue_.empty(); });
      bool end = queue_.back().bytes.empty();
      queue_.clear();
      if (end) return;
    }
  }

  int from_;
  int to_;
  Settings& settings_;
  Link& link_;
  mqd::relay::Direction dir_;
  mqd::relay::MessageFraming framing_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Chunk> queue_;
};

void relay(int client, Settings& settings, const mqd::Endpoint& upstream, uint64_t connection) {
  kj::AutoCloseFd a(client);
  kj::AutoCloseFd b(connectTo(upstream));
  if (b.get() < 0) {
    std::fprintf(stderr, "mqd-relay: cannot connect to %s: %s\n", upstream.toString().c_str(),
                 std::strerror(errno));
    return;
  }
  noDelay(a.get());
  noDelay(b.get());
  Link link;
  link.connection = connection;
  link.client = a.get();
  link.server = b.get();
  Direction up(a.get(), b.get(), settings, link, mqd::relay::Direction::Up);
  Direction down(b.get(), a.get(), settings, link, mqd::relay::Direction::Down);
  std::thread t([&] { down.run(); });
  up.run();
  t.join();
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "mqd-relay: %s\nusage: mqd-relay --listen ENDPOINT --connect ENDPOINT "
               "[--delay-ms N] [--bandwidth BYTES_PER_SECOND] [--ready-file PATH]\n"
               "                 [--fault KIND:DIR:N [--fault-connection C] | "
               "--random-faults P [--seed N]] [--fault-log PATH] [--exchanges-file PATH]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  std::string faultSpec;
  uint64_t faultConnection = 1;
  double randomFaults = 0;
  uint64_t seed = 1;
  std::string exchangesFile;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--listen") {
      s.listen = value();
    } else if (a == "--connect") {
      s.connect = value();
    } else if (a == "--delay-ms") {
      double ms = std::atof(value().c_str());
      if (ms < 0) usage("--delay-ms cannot be negative");
      s.delayNs = static_cast<int64_t>(ms * 1e6);
    } else if (a == "--delay-after-signal") {
      delaying.store(false);
      ::signal(SIGUSR1, startDelaying);
    } else if (a == "--bandwidth") {
      s.bandwidth = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--ready-file") {
      s.readyFile = value();
    } else if (a == "--fault") {
      faultSpec = value();
    } else if (a == "--fault-connection") {
      faultConnection = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--random-faults") {
      randomFaults = std::atof(value().c_str());
    } else if (a == "--seed") {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--fault-log") {
      s.faults.setLog(value());
    } else if (a == "--exchanges-file") {
      exchangesFile = value();
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: mqd-relay --listen ENDPOINT --connect ENDPOINT [--delay-ms N "
          "[--delay-after-signal]] [--bandwidth BYTES_PER_SECOND] [--ready-file PATH]\n\n"
          "Relays every connection to --listen to --connect, holding each byte for --delay-ms\n"
          "(fractions allowed) in each direction, at most --bandwidth bytes per second per\n"
          "direction. ENDPOINT: unix:PATH or tcp:HOST:PORT (port 0: any; the bound endpoint\n"
          "is written to --ready-file). --delay-after-signal: no delay until the first\n"
          "SIGUSR1.\n\n"
          "Faults, at Cap'n Proto message boundaries (DIR: up = client to server, down =\n"
          "server to client; N counts that direction's messages from 1):\n"
          "  --fault KIND:DIR:N        one fault on connection --fault-connection (default 1)\n"
          "      drop      close both sides instead of forwarding message N\n"
          "      stall     forward nothing more, either way, keeping the connection open\n"
          "      truncate  forward half of message N, then close both sides\n"
          "      corrupt   garble message N's segment table, forward it and go on\n"
          "  --random-faults P         every message of every connection: a fault of a random\n"
          "                            kind with probability P (repeatable with --seed N)\n"
          "  --fault-log PATH          append a line per injected fault\n\n"
          "  --exchanges-file PATH     keep there the number of exchanges relayed so far (a\n"
          "                            client's sending after its server answered starts one)\n");
      return 0;
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (s.listen.empty() || s.connect.empty()) usage("--listen and --connect are required");
  try {
    if (!faultSpec.empty() && randomFaults > 0) {
      usage("--fault and --random-faults exclude each other");
    }
    if (!faultSpec.empty()) s.faults.planOne(faultSpec, faultConnection);
    if (randomFaults > 0) s.faults.planRandom(randomFaults, seed);
    if (!exchangesFile.empty()) exchanges.open(exchangesFile);
    mqd::Endpoint listen = mqd::Endpoint::parse(s.listen);
    mqd::Endpoint upstream = mqd::Endpoint::parse(s.connect);
    ::signal(SIGPIPE, SIG_IGN);
    if (listen.kind == mqd::Endpoint::Kind::Unix) ::unlink(listen.path.c_str());
    std::vector<Address> addresses = resolve(listen);
    if (addresses.empty()) throw std::runtime_error("no address for " + s.listen);
    const Address& at = addresses.front();
    kj::AutoCloseFd listener(::socket(at.family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (listener.get() < 0) fail("socket");
    int one = 1;
    ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&at.storage), at.length) != 0) {
      fail("bind " + s.listen);
    }
    if (::listen(listener.get(), 64) != 0) fail("listen");
    if (listen.kind == mqd::Endpoint::Kind::Tcp) {
      sockaddr_storage bound{};
      socklen_t length = sizeof bound;
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &length);
      listen.port = ntohs(bound.ss_family == AF_INET6
                              ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    if (!s.readyFile.empty()) {
      std::ofstream(s.readyFile + ".tmp") << listen.toString() << "\n";
      std::rename((s.readyFile + ".tmp").c_str(), s.readyFile.c_str());
    }
    uint64_t connections = 0;
    for (;;) {
      int client = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        fail("accept");
      }
      ++connections;
      std::thread([client, &s, upstream, connections] {
        relay(client, s, upstream, connections);
      }).detach();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mqd-relay: %s\n", e.what());
    return 1;
  }
}
