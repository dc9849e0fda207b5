// FaultPlan: the faults mqd-relay injects into the Cap'n Proto streams it relays.
//
// Faults are placed at message boundaries, counted per connection and per direction ("up" is
// client to server, "down" server to client; messages are numbered from 1). MessageFraming
// finds those boundaries in the byte stream from Cap'n Proto's stream framing (segment count,
// segment sizes, padding, segments), without parsing the messages, after the connection's
// handshake (common/Handshake.h: the client's hello up, the server's reply line down), which
// is passed on as it is and not counted.
//
//   drop      the message is not forwarded: both sides of the connection are closed
//   stall     nothing more is forwarded in either direction, but the connection stays open
//             (a stopped peer, or a half-open TCP connection); it is closed once a side gives up
//   truncate  the first half of the message is forwarded, then both sides are closed
//   corrupt   the message's framing (its segment table) is garbled, then forwarded; the relay
//             goes on forwarding
//
// Either one planned fault (`--fault KIND:DIR:N`, on connection `--fault-connection`, default
// 1), or random faults (`--random-faults P`: each message, on every connection, suffers a
// fault of a random kind with probability P; `--seed` makes it repeatable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace mqd::relay {

enum class FaultKind { None, Drop, Stall, Truncate, Corrupt };
enum class Direction { Up, Down };

const char* faultName(FaultKind kind);

// Message boundaries of one direction of a Cap'n Proto stream.
class MessageFraming {
 public:
  explicit MessageFraming(Direction direction)
      : state_(direction == Direction::Up ? State::Hello : State::ReplyLine) {}

  // Consumes `n` bytes; returns the offsets (within them) at which a new message starts.
  std::vector<size_t> feed(const char* bytes, size_t n);
  // Messages started so far.
  uint64_t started() const { return started_; }

 private:
  enum class State { Hello, Token, ReplyLine, Header, Body };
  State state_;
  std::vector<unsigned char> header_;  // segment table bytes read so far
  size_t headerNeeded_ = 4;            // how many header bytes make the table complete
  uint64_t bodyLeft_ = 0;          // Body: segment bytes; Token: token bytes still to come
  uint64_t started_ = 0;
};

class FaultPlan {
 public:
  // Parses "KIND:DIR:N" (e.g. "drop:down:5"); throws std::invalid_argument.
  void planOne(const std::string& spec, uint64_t connection);
  void planRandom(double probability, uint64_t seed);
  bool active() const { return planned_.kind != FaultKind::None || probability_ > 0; }

  // The fault for message `index` of `direction` on `connection` (None for most).
  FaultKind faultFor(uint64_t connection, Direction direction, uint64_t index);

  // Every fault injected so far, appended to `path` (one line each) if set.
  void setLog(const std::string& path) { log_ = path; }
  void record(uint64_t connection, Direction direction, uint64_t index, FaultKind kind);
  uint64_t injected() const { return injected_; }

 private:
  struct Planned {
    FaultKind kind = FaultKind::None;
    Direction direction = Direction::Up;
    uint64_t index = 0;
    uint64_t connection = 1;
  } planned_;
  double probability_ = 0;
  std::mt19937_64 random_;
  std::mutex mutex_;
  std::string log_;
  uint64_t injected_ = 0;
};

}  // namespace mqd::relay
