// LookupDiscovery: the names a child process writes reach the parent, in order and once each;
// a child that crashes or loops gives what it wrote before, and never outlives the call.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "LookupDiscovery.h"

using mqd::LookupKey;
using mqd::server::LookupDiscovery;

namespace {

const std::vector<LookupKey> kNamed{{LookupKey::Type, "mca_pml_base_request_t", 1, ""},
                                    {LookupKey::Field, "mca_pml_base_request_t", 1, "req_addr"},
                                    {LookupKey::Symbol, "ompi_mpi_communicators", 0, ""},
                                    {LookupKey::SizeOf, "opal_list_t", 1, ""},
                                    {LookupKey::Function, "MPIR_Breakpoint", 2, ""}};

// The child names itself (its pid, as a symbol) first: gone once discover() returned, reaped.
void nameSelf(int fd) {
  LookupDiscovery::writeKey(fd, {LookupKey::Symbol, std::to_string(::getpid()), 0, ""});
}
bool gone(const LookupKey& self) {
  return ::kill(static_cast<pid_t>(std::stol(self.name)), 0) != 0 && errno == ESRCH;
}

}  // namespace

TEST_CASE("look-up discovery: the child's names, in order, each once") {
  auto found = LookupDiscovery::discover([](int fd) {
    nameSelf(fd);
    for (const LookupKey& key : kNamed) LookupDiscovery::writeKey(fd, key);
    LookupDiscovery::writeKey(fd, kNamed[0]);  // asked again
  });
  REQUIRE(found.size() == kNamed.size() + 1);
  CHECK(gone(found[0]));
  CHECK(std::vector<LookupKey>(found.begin() + 1, found.end()) == kNamed);
}

TEST_CASE("look-up discovery: a child that crashes or loops names what it named before") {
  auto crashed = LookupDiscovery::discover([](int fd) {
    LookupDiscovery::writeKey(fd, kNamed[0]);
    LookupDiscovery::writeKey(fd, kNamed[1]);
    ::signal(SIGABRT, SIG_DFL);
    std::abort();
  });
  CHECK(crashed == std::vector<LookupKey>(kNamed.begin(), kNamed.begin() + 2));
  auto started = std::chrono::steady_clock::now();
  auto looped = LookupDiscovery::discover(
      [](int fd) {
        nameSelf(fd);
        LookupDiscovery::writeKey(fd, kNamed[2]);
        for (;;) ::pause();
      },
      std::chrono::milliseconds(200));
  REQUIRE(looped.size() == 2);
  CHECK(gone(looped[0]));
  CHECK(looped[1] == kNamed[2]);
  // Killed at the deadline: well before a loaded machine's scheduling could make it look hung.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
}

TEST_CASE("look-up discovery: records cut short or of an unknown kind end the names") {
  // What parse() reads is the child's: a child the DLL's bug left writing half a record, or
  // garbage, gives the names before it.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  LookupDiscovery::writeKey(fds[1], kNamed[0]);
  LookupDiscovery::writeKey(fds[1], kNamed[1]);
  ::close(fds[1]);
  std::vector<unsigned char> bytes(4096);
  ssize_t n = ::read(fds[0], bytes.data(), bytes.size());
  ::close(fds[0]);
  REQUIRE(n > 0);
  bytes.resize(static_cast<size_t>(n));
  CHECK(LookupDiscovery::parse(bytes).size() == 2);
  std::vector<unsigned char> cut(bytes.begin(), bytes.end() - 3);
  CHECK(LookupDiscovery::parse(cut) == std::vector<LookupKey>{kNamed[0]});
  std::vector<unsigned char> unknown = bytes;
  unknown[0] = 99;  // no such kind
  CHECK(LookupDiscovery::parse(unknown).empty());
  CHECK(LookupDiscovery::parse({}).empty());
}
