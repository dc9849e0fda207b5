// mqd-relay: a user-space network path with latency, for tests and benchmarks.
//
// This machine's kernel has no netem, so a WAN is simulated here: every byte from either side
// is held for --delay-ms before it is passed on (one way; a round trip gains twice that), and
// each direction can be capped to --bandwidth bytes per second. Order is preserved.
//
//   mqd-relay --listen ENDPOINT --connect ENDPOINT [--delay-ms N] [--bandwidth BYTES]
//             [--ready-file PATH]
//
// ENDPOINT is unix:PATH or tcp:HOST:PORT; with tcp:HOST:0 the bound port is written to the
// ready file. Connections are relayed independently; the relay runs until killed.
#include <kj/async-io.h>
#include <kj/debug.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

#include "Endpoint.h"

namespace {

struct Settings {
  std::string listen;
  std::string connect;
  kj::Duration delay = 0 * kj::MILLISECONDS;
  uint64_t bandwidth = 0;  // bytes per second per direction, 0 = unlimited
  std::string readyFile;
};

void noDelay(kj::AsyncIoStream& stream) {
  int one = 1;
  try {
    stream.setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  } catch (...) {
    // a unix socket
  }
}

// One direction: reads as bytes arrive, passes each chunk on once it is due.
class Direction {
 public:
  Direction(kj::AsyncIoStream& from, kj::AsyncIoStream& to, kj::Timer& timer,
            const Settings& settings)
      : from_(from), to_(to), timer_(timer), settings_(settings) {}

  kj::Promise<void> run() { return readLoop().exclusiveJoin(writeLoop()); }

 private:
  struct Chunk {
    kj::TimePoint due;
    kj::Array<kj::byte> bytes;  // empty: end of stream
  };

  kj::Promise<void> readLoop() {
    return from_.tryRead(buffer_, 1, sizeof buffer_).then([this](size_t n) -> kj::Promise<void> {
      queue_.push_back({timer_.now() + settings_.delay, kj::heapArray<kj::byte>(buffer_, n)});
      wake();
      if (n == 0) return kj::NEVER_DONE;
      return readLoop();
    });
  }

  void wake() {
    KJ_IF_MAYBE(f, waiting_) {
      (*f)->fulfill();
      waiting_ = nullptr;
    }
  }

  kj::Promise<void> writeLoop() {
    if (queue_.empty()) {
      auto paf = kj::newPromiseAndFulfiller<void>();
      waiting_ = kj::mv(paf.fulfiller);
      return paf.promise.then([this]() { return writeLoop(); });
    }
    return timer_.atTime(queue_.front().due).then([this]() -> kj::Promise<void> {
      Chunk chunk = kj::mv(queue_.front());
      queue_.pop_front();
      if (chunk.bytes.size() == 0) {
        to_.shutdownWrite();
        return kj::READY_NOW;
      }
      size_t n = chunk.bytes.size();
      auto written = to_.write(chunk.bytes.begin(), n).attach(kj::mv(chunk.bytes));
      if (settings_.bandwidth == 0) return written.then([this]() { return writeLoop(); });
      kj::Duration pause = static_cast<int64_t>(n * 1000000 / settings_.bandwidth) * kj::MICROSECONDS;
      return written.then([this, pause]() { return timer_.afterDelay(pause); })
          .then([this]() { return writeLoop(); });
    });
  }

  kj::AsyncIoStream& from_;
  kj::AsyncIoStream& to_;
  kj::Timer& timer_;
  const Settings& settings_;
  kj::byte buffer_[65536];
  std::deque<Chunk> queue_;
  kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> waiting_;
};

class Relay final : public kj::TaskSet::ErrorHandler {
 public:
  Relay(kj::AsyncIoContext& io, const Settings& settings) : io_(io), settings_(settings) {}

  kj::Promise<void> serve(kj::ConnectionReceiver& listener) {
    return listener.accept().then([this, &listener](kj::Own<kj::AsyncIoStream> client) {
      tasks_.add(relay(kj::mv(client)));
      return serve(listener);
    });
  }

  void taskFailed(kj::Exception&&) override {}

 private:
  kj::Promise<void> relay(kj::Own<kj::AsyncIoStream> client) {
    mqd::Endpoint upstream = mqd::Endpoint::parse(settings_.connect);
    return io_.provider->getNetwork()
        .parseAddress(upstream.toKjAddress())
        .then([](kj::Own<kj::NetworkAddress> a) { return a->connect().attach(kj::mv(a)); })
        .then([this, client = kj::mv(client)](kj::Own<kj::AsyncIoStream> server) mutable {
          noDelay(*client);
          noDelay(*server);
          auto up = kj::heap<Direction>(*client, *server, io_.provider->getTimer(), settings_);
          auto down = kj::heap<Direction>(*server, *client, io_.provider->getTimer(), settings_);
          auto both = up->run().exclusiveJoin(down->run());
          return both.attach(kj::mv(up), kj::mv(down), kj::mv(client), kj::mv(server));
        });
  }

  kj::AsyncIoContext& io_;
  const Settings& settings_;
  kj::TaskSet tasks_{*this};
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "mqd-relay: %s\nusage: mqd-relay --listen ENDPOINT --connect ENDPOINT "
               "[--delay-ms N] [--bandwidth BYTES_PER_SECOND] [--ready-file PATH]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
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
      s.delay = static_cast<int64_t>(std::atof(value().c_str()) * 1000) * kj::MICROSECONDS;
    } else if (a == "--bandwidth") {
      s.bandwidth = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--ready-file") {
      s.readyFile = value();
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (s.listen.empty() || s.connect.empty()) usage("--listen and --connect are required");
  try {
    mqd::Endpoint listen = mqd::Endpoint::parse(s.listen);
    mqd::Endpoint::parse(s.connect);
    if (listen.kind == mqd::Endpoint::Kind::Unix) ::unlink(listen.path.c_str());
    auto io = kj::setupAsyncIo();
    auto address = io.provider->getNetwork().parseAddress(listen.toKjAddress()).wait(io.waitScope);
    auto listener = address->listen();
    if (listen.kind == mqd::Endpoint::Kind::Tcp) listen.port = static_cast<uint16_t>(listener->getPort());
    if (!s.readyFile.empty()) {
      std::ofstream(s.readyFile + ".tmp") << listen.toString() << "\n";
      std::rename((s.readyFile + ".tmp").c_str(), s.readyFile.c_str());
    }
    Relay relay(io, s);
    relay.serve(*listener).wait(io.waitScope);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mqd-relay: %s\n", e.what());
    return 1;
  } catch (const kj::Exception& e) {
    std::fprintf(stderr, "mqd-relay: %s\n", e.getDescription().cStr());
    return 1;
  }
  return 0;
}
