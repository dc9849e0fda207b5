#include <doctest/doctest.h>

#include <stdexcept>

#include "DllAllowList.h"
#include "TestPaths.h"

using mqd::server::DllAllowList;

TEST_CASE("DllAllowList: exact path, canonical path, unique base name, default") {
  DllAllowList list({mqd::test::kTestDll3, mqd::test::kTestDll2});
  CHECK(list.select("") == mqd::test::kTestDll3);
  CHECK(list.select(mqd::test::kTestDll2) == mqd::test::kTestDll2);
  CHECK(list.select("libmqd_testdll_l2.so") == mqd::test::kTestDll2);
  CHECK(list.select("/elsewhere/on/the/target/libmqd_testdll_l2.so") == mqd::test::kTestDll2);
  std::string dotted = std::string(mqd::test::kTestDll2);
  dotted.insert(dotted.rfind('/'), "/.");
  CHECK(list.select(dotted) == mqd::test::kTestDll2);  // a non-canonical spelling of it
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
