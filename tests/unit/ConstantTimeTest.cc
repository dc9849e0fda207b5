#include <doctest/doctest.h>

#include <string>

#include "ConstantTime.h"

using mqd::constantTimeEqual;

TEST_CASE("constantTimeEqual: equal only for the same bytes and the same length") {
  CHECK(constantTimeEqual("", ""));
  CHECK(constantTimeEqual("secret-token", "secret-token"));
  CHECK_FALSE(constantTimeEqual("secret-token", "secret-tokeN"));  // last byte
  CHECK_FALSE(constantTimeEqual("secret-token", "Secret-token"));  // first byte
  CHECK_FALSE(constantTimeEqual("secret", "secret-token"));        // a prefix
  CHECK_FALSE(constantTimeEqual("secret-token", "secret"));
  CHECK_FALSE(constantTimeEqual("", "x"));
  CHECK_FALSE(constantTimeEqual("x", ""));
  // Embedded NULs are bytes like any other (a shorter string padded with NULs is not equal).
  CHECK(constantTimeEqual(std::string("a\0b", 3), std::string("a\0b", 3)));
  CHECK_FALSE(constantTimeEqual(std::string("ab\0", 3), "ab"));
  CHECK_FALSE(constantTimeEqual(std::string("a\0b", 3), std::string("a\0c", 3)));
}
