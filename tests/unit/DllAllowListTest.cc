#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

#include "DllAllowList.h"
#include "ServerProcess.h"
#include "TestPaths.h"

using mqd::server::DllAllowList;

TEST_CASE("DllAllowList: exact path, canonical path, unique base name, default") {
  DllAllowList list({mqd::test::kTestDll3, mqd::test::kTestDll2});
  CHECK(list.select("").path == mqd::test::kTestDll3);
  CHECK(list.select(mqd::test::kTestDll2).path == mqd::test::kTestDll2);
  CHECK(list.select("libmqd_testdll_l2.so").path == mqd::test::kTestDll2);
  CHECK(list.select("/elsewhere/on/the/target/libmqd_testdll_l2.so").path ==
        mqd::test::kTestDll2);
  std::string dotted = std::string(mqd::test::kTestDll2);
  dotted.insert(dotted.rfind('/'), "/.");
  CHECK(list.select(dotted).path == mqd::test::kTestDll2);  // a non-canonical spelling of it
}

TEST_CASE("DllAllowList: everything else is refused, saying what is allowed") {
  DllAllowList list({mqd::test::kTestDll3});
  try {
    list.select("/usr/lib/libc.so.6");
    FAIL("accepted");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    CHECK(what.find("not on this server's allow-list") != std::string::npos);
    CHECK(what.find(mqd::test::kTestDll3) != std::string::npos);
  }
  DllAllowList none({});
  CHECK_THROWS_WITH_AS(none.select(""), doctest::Contains("allows no vendor DLL"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(DllAllowList({"/no/such/lib.so"}), doctest::Contains("/no/such/lib.so"),
                       std::runtime_error);
}

TEST_CASE("DllAllowList: client input never names a file: ../ paths, symlinks, unlisted paths") {
  DllAllowList list({mqd::test::kTestDll3});
  std::string dir = std::string(mqd::test::kTestDll3).substr(0, std::string(mqd::test::kTestDll3).rfind('/'));
  // A path that climbs out and back in resolves to nothing new: it selects by base name, and
  // what is selected is always the path on the list, never the client's spelling.
  CHECK(list.select("../../../../" + dir + "/libmqd_testdll_l3.so").path ==
        mqd::test::kTestDll3);
  CHECK(list.select("/tmp/../attacker/libmqd_testdll_l3.so").path == mqd::test::kTestDll3);
  CHECK_THROWS_WITH_AS(list.select("../libmqd_testdll_l2.so"),
                       doctest::Contains("not on this server's allow-list"), std::runtime_error);
  CHECK_THROWS_WITH_AS(list.select(dir + "/../../etc/passwd"),
                       doctest::Contains("not on this server's allow-list"), std::runtime_error);
  CHECK_THROWS_WITH_AS(list.select(mqd::test::kTestDll2),
                       doctest::Contains("not on this server's allow-list"), std::runtime_error);
  // A symlink the client names is not followed: its own name is not on the list...
  mqd::harness::TempDir tmp;
  std::string link = tmp / "innocent.so";
  REQUIRE(::symlink(mqd::test::kTestDll3, link.c_str()) == 0);
  CHECK_THROWS_WITH_AS(list.select(link), doctest::Contains("not on this server's allow-list"),
                       std::runtime_error);
  // ...and a symlink with an allowed DLL's base name still selects the listed file, not the
  // link's target.
  std::string decoy = tmp / "libmqd_testdll_l3.so";
  REQUIRE(::symlink(mqd::test::kTestDll2, decoy.c_str()) == 0);
  CHECK(list.select(decoy).path == mqd::test::kTestDll3);
  // A symlink given to the server is resolved once, at start-up: its target is allowed.
  std::string given = tmp / "given.so";
  REQUIRE(::symlink(mqd::test::kTestDll2, given.c_str()) == 0);
  DllAllowList viaLink({given});
  char resolved[4096];
  REQUIRE(::realpath(mqd::test::kTestDll2, resolved) != nullptr);
  CHECK(viaLink.select(resolved).path == given);
  CHECK(viaLink.select("").path == given);
}

TEST_CASE("DllAllowList: the file opened at start-up is the one chosen, wherever its path "
          "points later") {
  mqd::harness::TempDir tmp;
  std::string link = tmp / "current.so";
  REQUIRE(::symlink(mqd::test::kTestDll3, link.c_str()) == 0);
  DllAllowList list({link});
  REQUIRE(::unlink(link.c_str()) == 0);
  REQUIRE(::symlink(mqd::test::kTestDll2, link.c_str()) == 0);
  mqd::server::DllChoice chosen = list.select("");
  CHECK(chosen.path == link);
  struct stat loaded, checked;
  REQUIRE(::fstat(chosen.fd, &loaded) == 0);
  REQUIRE(::stat(mqd::test::kTestDll3, &checked) == 0);
  CHECK(loaded.st_ino == checked.st_ino);
  CHECK(loaded.st_dev == checked.st_dev);
  // Not a regular file: refused at start-up.
  CHECK_THROWS_WITH_AS(DllAllowList({tmp.path()}), doctest::Contains("a directory"),
                       std::runtime_error);
  // A name with a control character is refused, and said without it.
  CHECK_THROWS_WITH_AS(list.select("x.so\nforged"),
                       doctest::Contains("\"x.so\\nforged\": a DLL's name holds no control"),
                       std::runtime_error);
}
