// mqd-bench-bulk: what a Bulk costs per block of target memory, compressed and back.
//
//   mqd-bench-bulk [--file PATH] [--rounds N]
//
// The shim sends what it reads ahead as one Bulk per block (common/Bulk.h), and a job never
// seen sends thousands of blocks of a few KiB each. For each block size this cuts the data
// into blocks, writes every block into a message as setBulk does for the wire (compressed),
// reads each back with readBulk, and prints a line per size: the time per block each way,
// the throughput and the compression ratio (best of N rounds). The data is PATH (a heap read
// from /proc/PID/mem, say), else 4 MiB laid out like a heap: 64-byte objects, most of them
// zero, each of the others holding two pointers into the heap and a small count.
#include <capnp/message.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "Bulk.h"
#include "mqd.capnp.h"

namespace {

std::vector<kj::byte> heapLike(size_t bytes) {
  std::vector<kj::byte> data(bytes, 0);
  const uint64_t base = 0x55d4c8a3e000;
  uint64_t state = 88172645463325252ull;  // xorshift: the same bytes every run
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (size_t at = 0; at + 64 <= bytes; at += 64) {
    if (next() % 4 != 0) continue;  // a quarter of the objects are in use
    uint64_t words[3] = {base + next() % bytes / 8 * 8, base + next() % bytes / 8 * 8,
                         next() % 512};
    std::memcpy(&data[at], words, sizeof words);
  }
  return data;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--file" && i + 1 < argc) {
      file = argv[++i];
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: mqd-bench-bulk [--file PATH] [--rounds N]\n");
      return 2;
    }
  }
  std::vector<kj::byte> data;
  if (file.empty()) {
    data = heapLike(4u << 20);
  } else {
    std::ifstream in(file, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
    if (data.empty()) {
      std::fprintf(stderr, "mqd-bench-bulk: nothing to read in %s\n", file.c_str());
      return 1;
    }
  }
  std::printf("%zu bytes of %s, best of %d rounds\n", data.size(),
              file.empty() ? "heap-like data" : file.c_str(), rounds);
  std::printf("| block | blocks | compress, per block | decompress, per block | compress "
              "| ratio |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t block : {1024u, 4096u, 8192u, 16384u, 65536u}) {
    size_t blocks = data.size() / block;
    if (blocks == 0) continue;
    double bestIn = 1e9, bestOut = 1e9;
    size_t wire = 0;
    for (int round = 0; round < rounds; ++round) {
      capnp::MallocMessageBuilder message;
      auto list = message.initRoot<mqd::wire::RefreshAhead>().initBlocks(
          static_cast<capnp::uint>(blocks));
      auto start = std::chrono::steady_clock::now();
      wire = 0;
      for (size_t i = 0; i < blocks; ++i) {
        wire += mqd::setBulk(list[static_cast<capnp::uint>(i)].initData(),
                             kj::arrayPtr(&data[i * block], block), true)
                    .wire;
      }
      bestIn = std::min(bestIn, seconds(start));
      auto reader = list.asReader();
      start = std::chrono::steady_clock::now();
      for (size_t i = 0; i < blocks; ++i) {
        auto back = mqd::readBulk(reader[static_cast<capnp::uint>(i)].getData());
        if (back.size() != block ||
            std::memcmp(back.begin(), &data[i * block], block) != 0) {
          std::fprintf(stderr, "mqd-bench-bulk: block %zu of %zu bytes came back wrong\n", i,
                       block);
          return 1;
        }
      }
      bestOut = std::min(bestOut, seconds(start));
    }
    std::printf("| %zu B | %zu | %.1f us | %.1f us | %.0f MB/s | %.2f |\n", block, blocks,
                bestIn / blocks * 1e6, bestOut / blocks * 1e6,
                static_cast<double>(blocks * block) / bestIn / 1e6,
                static_cast<double>(blocks * block) / static_cast<double>(wire));
  }
  return 0;
}
