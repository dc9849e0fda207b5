#include <doctest/doctest.h>

#include <cstring>

#include "StringPool.h"

TEST_CASE("StringPool: one stable copy per distinct string, bounded") {
  mqd::StringPool pool(3);
  char* a = pool.intern("alpha");
  char* b = pool.intern("beta");
  CHECK(pool.intern("alpha") == a);
  for (int i = 0; i < 100; ++i) pool.intern("filler");  // rehashing never moves strings
  CHECK(std::strcmp(a, "alpha") == 0);
  CHECK(std::strcmp(b, "beta") == 0);
  char* over = pool.intern("delta");
  CHECK(std::string(over).find("too many distinct strings") != std::string::npos);
}
