#include <doctest/doctest.h>

#include "Endpoint.h"

using mqd::Endpoint;

TEST_CASE("Endpoint: unix sockets") {
  Endpoint e = Endpoint::parse("unix:/run/x.sock");
  CHECK(e.kind == Endpoint::Kind::Unix);
  CHECK(e.path == "/run/x.sock");
  CHECK(e.toString() == "unix:/run/x.sock");
  CHECK(e.toKjAddress() == "unix:/run/x.sock");
  CHECK(e.isLoopback());
}

TEST_CASE("Endpoint: tcp with names, IPv4 and bracketed IPv6") {
  Endpoint a = Endpoint::parse("tcp:localhost:4000");
  CHECK(a.kind == Endpoint::Kind::Tcp);
  CHECK(a.host == "localhost");
  CHECK(a.port == 4000);
  CHECK(a.isLoopback());
  Endpoint b = Endpoint::parse("tcp:10.1.2.3:0");
  CHECK(b.port == 0);
  CHECK_FALSE(b.isLoopback());
  Endpoint c = Endpoint::parse("tcp:[::1]:65535");
  CHECK(c.host == "::1");
  CHECK(c.port == 65535);
  CHECK(c.toString() == "tcp:[::1]:65535");
  CHECK(c.toKjAddress() == "[::1]:65535");
  CHECK(c.isLoopback());
}

TEST_CASE("Endpoint: tcp without a host is loopback, never a wildcard; tls: is TCP with TLS") {
  for (const char* text : {"tcp:0", "tcp::0", "tcp:4000", "tcp::4000"}) {
    INFO(text);
    Endpoint e = Endpoint::parse(text);
    CHECK(e.kind == Endpoint::Kind::Tcp);
    CHECK(e.host == "127.0.0.1");
    CHECK(e.isLoopback());
    CHECK_FALSE(e.tls);
  }
  CHECK(Endpoint::parse("tcp::4000").port == 4000);
  CHECK(Endpoint::parse("tcp:4000").toString() == "tcp:127.0.0.1:4000");
  Endpoint t = Endpoint::parse("tls:example.org:4443");
  CHECK(t.kind == Endpoint::Kind::Tcp);
  CHECK(t.tls);
  CHECK(t.host == "example.org");
  CHECK(t.toString() == "tls:example.org:4443");
  CHECK(t.toKjAddress() == "example.org:4443");
  CHECK_FALSE(t.isLoopback());
  CHECK(Endpoint::parse("tls::0").toString() == "tls:127.0.0.1:0");
  CHECK(Endpoint::parse("tls:[::1]:1").toString() == "tls:[::1]:1");
  CHECK_FALSE(Endpoint::parse("tcp:0.0.0.0:1").isLoopback());
}

TEST_CASE("Endpoint: malformed input is refused with a message that quotes it") {
  for (const char* bad : {"", "unix:", "tcp:", "tcp:host", "tcp::", "tcp:h:99999", "tcp:h:8x",
                          "tcp:::1:80", "tcp:[::1]80", "tcp:[::1", "udp:h:1", "/tmp/x.sock",
                          "tls:", "tls:host", "tcp:99999", "tcp::8x", "tcp:[[]:1", "tcp:a]:1",
                          "tcp:[a[]:1"}) {
    INFO(bad);
    try {
      Endpoint::parse(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(std::string("\"") + bad + "\"") != std::string::npos);
      CHECK(std::string(e.what()).find("unix:PATH, tcp:HOST:PORT or tls:HOST:PORT") !=
            std::string::npos);
    }
  }
}

TEST_CASE("Endpoint: what toString() writes parses back to the same endpoint") {
  for (const char* text : {"unix:/tmp/x.sock", "unix:rel", "tcp:host:1", "tcp:10.0.0.1:80",
                           "tcp:[::1]:4000", "tcp:[fe80::1%eth0]:0", "tcp:[name]:7"}) {
    INFO(text);
    Endpoint e = Endpoint::parse(text);
    Endpoint again = Endpoint::parse(e.toString());
    CHECK(static_cast<int>(again.kind) == static_cast<int>(e.kind));
    CHECK(again.path == e.path);
    CHECK(again.host == e.host);
    CHECK(again.port == e.port);
  }
}
