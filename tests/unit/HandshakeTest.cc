#include <doctest/doctest.h>

#include <kj/async-io.h>

#include <string>

#include "Handshake.h"
#include "ProxyErrors.h"

using namespace mqd;

TEST_CASE("Handshake: the hello's bytes") {
  std::string hello = encodeHello("abc");
  REQUIRE(hello.size() == kHelloHeaderBytes + 3);
  CHECK(hello.compare(0, 4, "MQDP") == 0);
  CHECK(static_cast<uint8_t>(hello[4]) == kHandshakeVersion);
  CHECK(hello[5] == 0);
  CHECK(hello[6] == 0);
  CHECK(hello[7] == 3);
  CHECK(hello.substr(8) == "abc");
  CHECK(encodeHello("").size() == kHelloHeaderBytes);
}

TEST_CASE("Handshake: reply lines round-trip; anything else is a protocol error") {
  CHECK(parseReply(acceptLine()).ok);
  HandshakeReply r = parseReply(refusalLine(MQD_PROXY_ERR_AUTH_FAILED, "wrong\ntoken"));
  CHECK_FALSE(r.ok);
  CHECK(r.code == MQD_PROXY_ERR_AUTH_FAILED);
  CHECK(r.reason == "wrong token");  // flattened to one line
  CHECK(refusalLine(MQD_PROXY_ERR_TLS, std::string(2000, 'x')).size() == kMaxReplyBytes);
  HandshakeReply junk = parseReply("HTTP/1.1 400 Bad Request");
  CHECK_FALSE(junk.ok);
  CHECK(junk.code == MQD_PROXY_ERR_PROTOCOL);
  CHECK(junk.reason.find("HTTP/1.1 400") != std::string::npos);
  CHECK(isRefusalStart("REFU"));
  CHECK(isRefusalStart("REFUSED MQD_PROXY_ERR_TLS: x"));
  CHECK_FALSE(isRefusalStart("\x16\x03\x01"));
  CHECK_FALSE(isRefusalStart(""));
}

namespace {

// Runs readHello on `bytes` written into one end of a pipe.
Hello helloFrom(const std::string& bytes) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  pipe.ends[0]->write(bytes.data(), bytes.size()).wait(io.waitScope);
  return readHello(*pipe.ends[1]).wait(io.waitScope);
}

}  // namespace

TEST_CASE("Handshake: readHello takes a token, names what else arrived") {
  Hello good = helloFrom(encodeHello("s3cret"));
  CHECK(good.valid);
  CHECK(good.token == "s3cret");
  Hello tls = helloFrom(std::string("\x16\x03\x01\x02\x00\x01\x00\x01", 8));
  CHECK_FALSE(tls.valid);
  CHECK(tls.code == MQD_PROXY_ERR_TLS);
  CHECK(tls.problem.find("TLS") != std::string::npos);
  Hello http = helloFrom("GET / HTTP/1.1\r\n");
  CHECK_FALSE(http.valid);
  CHECK(http.code == MQD_PROXY_ERR_PROTOCOL);
  std::string future = encodeHello("t");
  future[4] = 9;
  Hello version = helloFrom(future);
  CHECK_FALSE(version.valid);
  CHECK(version.problem.find("version 9") != std::string::npos);
  std::string huge = encodeHello("");
  huge[6] = static_cast<char>(0xff);
  Hello tooLong = helloFrom(huge);
  CHECK_FALSE(tooLong.valid);
  CHECK(tooLong.problem.find("65280 bytes") != std::string::npos);
}

TEST_CASE("Handshake: the client sends its hello and reads one line, no further") {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  std::string reply = acceptLine() + "RPC";
  pipe.ends[1]->write(reply.data(), reply.size()).wait(io.waitScope);
  HandshakeReply r = clientHandshake(*pipe.ends[0], "tok").wait(io.waitScope);
  CHECK(r.ok);
  Hello seen = readHello(*pipe.ends[1]).wait(io.waitScope);
  CHECK(seen.token == "tok");
  char rest[3];
  pipe.ends[0]->read(rest, 3).wait(io.waitScope);  // what follows the line is left unread
  CHECK(std::string(rest, 3) == "RPC");
  // A server that closes without a line.
  auto closed = io.provider->newTwoWayPipe();
  closed.ends[1]->shutdownWrite();
  HandshakeReply none = clientHandshake(*closed.ends[0], "").wait(io.waitScope);
  CHECK_FALSE(none.ok);
  CHECK(none.code == MQD_PROXY_ERR_SESSION_REFUSED);
  CHECK(none.reason.find("closed the connection during the handshake") != std::string::npos);
}
