#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "ServerProcess.h"
#include "TokenFile.h"

using mqd::readTokenFile;

namespace {

std::string write(const mqd::harness::TempDir& dir, const std::string& name,
                  const std::string& text, mode_t mode) {
  std::string path = dir / name;
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

}  // namespace

TEST_CASE("TokenFile: the first line, trimmed, from a private file") {
  mqd::harness::TempDir dir;
  CHECK(readTokenFile(write(dir, "a", "  0123abcd \nsecond line\n", 0600)) == "0123abcd");
  CHECK(readTokenFile(write(dir, "b", "tok", 0400)) == "tok");
}

TEST_CASE("TokenFile: unsafe, missing, empty or oversized files are refused by name") {
  mqd::harness::TempDir dir;
  for (mode_t mode : {0640, 0604, 0660, 0620}) {
    INFO(mode);
    std::string path = write(dir, "open" + std::to_string(mode), "tok\n", mode);
    CHECK_THROWS_WITH_AS(readTokenFile(path), doctest::Contains(("chmod 600 " + path).c_str()),
                         std::runtime_error);
  }
  CHECK_THROWS_WITH_AS(readTokenFile(dir / "missing"), doctest::Contains("missing"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(readTokenFile(write(dir, "empty", " \n", 0600)),
                       doctest::Contains("empty"), std::runtime_error);
  CHECK_THROWS_WITH_AS(readTokenFile(write(dir, "long", std::string(2000, 'x'), 0600)),
                       doctest::Contains("longer than"), std::runtime_error);
  CHECK_THROWS_WITH_AS(readTokenFile(dir.path()), doctest::Contains("not a regular file"),
                       std::runtime_error);
}
