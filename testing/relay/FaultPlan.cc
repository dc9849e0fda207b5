#include "FaultPlan.h"

#include <cstdio>
#include <stdexcept>

namespace mqd::relay {

const char* faultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::None: return "none";
    case FaultKind::Drop: return "drop";
    case FaultKind::Stall: return "stall";
    case FaultKind::Truncate: return "truncate";
    case FaultKind::Corrupt: return "corrupt";
  }
  return "?";
}

namespace {

uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

std::vector<size_t> MessageFraming::feed(const char* bytes, size_t n) {
  std::vector<size_t> starts;
  size_t at = 0;
  while (at < n) {
    if (state_ == State::Hello) {
      // "MQDP", version, flags, token length (2 bytes, big-endian).
      header_.push_back(static_cast<unsigned char>(bytes[at++]));
      if (header_.size() == 8) {
        bodyLeft_ = static_cast<uint64_t>(header_[6]) << 8 | header_[7];
        header_.clear();
        state_ = bodyLeft_ > 0 ? State::Token : State::Header;
      }
      continue;
    }
    if (state_ == State::ReplyLine) {
      if (bytes[at++] == '\n') state_ = State::Header;
      continue;
    }
    if (state_ == State::Body || state_ == State::Token) {
      uint64_t take = bodyLeft_ < n - at ? bodyLeft_ : n - at;
      bodyLeft_ -= take;
      at += take;
      if (bodyLeft_ == 0) state_ = State::Header;
      continue;
    }
    if (header_.empty()) {
      starts.push_back(at);
      ++started_;
    }
    header_.push_back(static_cast<unsigned char>(bytes[at++]));
    if (header_.size() == 4) {
      // (segment count - 1), then one size per segment, padded to a whole word.
      uint64_t segments = static_cast<uint64_t>(le32(header_.data())) + 1;
      headerNeeded_ = static_cast<size_t>(((4 + 4 * segments) + 7) / 8 * 8);
    }
    if (header_.size() >= 4 && header_.size() == headerNeeded_) {
      uint64_t segments = static_cast<uint64_t>(le32(header_.data())) + 1;
      uint64_t words = 0;
      for (uint64_t s = 0; s < segments; ++s) words += le32(header_.data() + 4 + 4 * s);
      bodyLeft_ = words * 8;
      header_.clear();
      headerNeeded_ = 4;
      state_ = bodyLeft_ > 0 ? State::Body : State::Header;
    }
  }
  return starts;
}

void FaultPlan::planOne(const std::string& spec, uint64_t connection) {
  size_t a = spec.find(':');
  size_t b = a == std::string::npos ? a : spec.find(':', a + 1);
  if (b == std::string::npos) throw std::invalid_argument("--fault wants KIND:DIR:N");
  std::string kind = spec.substr(0, a), dir = spec.substr(a + 1, b - a - 1);
  if (kind == "drop") {
    planned_.kind = FaultKind::Drop;
  } else if (kind == "stall") {
    planned_.kind = FaultKind::Stall;
  } else if (kind == "truncate") {
    planned_.kind = FaultKind::Truncate;
  } else if (kind == "corrupt") {
    planned_.kind = FaultKind::Corrupt;
  } else {
    throw std::invalid_argument("--fault: unknown kind " + kind +
                                " (drop, stall, truncate, corrupt)");
  }
  if (dir == "up") {
    planned_.direction = Direction::Up;
  } else if (dir == "down") {
    planned_.direction = Direction::Down;
  } else {
    throw std::invalid_argument("--fault: direction must be up or down, not " + dir);
  }
  char* end = nullptr;
  unsigned long long n = std::strtoull(spec.c_str() + b + 1, &end, 10);
  if (n == 0 || *end != '\0') throw std::invalid_argument("--fault: N must be 1 or more");
  planned_.index = n;
  planned_.connection = connection;
}

void FaultPlan::planRandom(double probability, uint64_t seed) {
  if (probability < 0 || probability > 1) {
    throw std::invalid_argument("--random-faults wants a probability in [0, 1]");
  }
  probability_ = probability;
  random_.seed(seed);
}

FaultKind FaultPlan::faultFor(uint64_t connection, Direction direction, uint64_t index) {
  if (planned_.kind != FaultKind::None) {
    bool hit = connection == planned_.connection && direction == planned_.direction &&
               index == planned_.index;
    return hit ? planned_.kind : FaultKind::None;
  }
  if (probability_ <= 0) return FaultKind::None;
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::uniform_real_distribution<double>(0, 1)(random_) >= probability_) {
    return FaultKind::None;
  }
  static const FaultKind kinds[] = {FaultKind::Drop, FaultKind::Stall, FaultKind::Truncate,
                                    FaultKind::Corrupt};
  return kinds[std::uniform_int_distribution<int>(0, 3)(random_)];
}

void FaultPlan::record(uint64_t connection, Direction direction, uint64_t index,
                       FaultKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++injected_;
  if (log_.empty()) return;
  if (FILE* f = std::fopen(log_.c_str(), "a")) {
    std::fprintf(f, "connection %llu %s message %llu: %s\n",
                 static_cast<unsigned long long>(connection),
                 direction == Direction::Up ? "up" : "down",
                 static_cast<unsigned long long>(index), faultName(kind));
    std::fclose(f);
  }
}

}  // namespace mqd::relay
