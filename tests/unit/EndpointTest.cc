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
      CHECK(std::string(e.what()).find("unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, ssh://") !=
            std::string::npos);
    }
  }
}

TEST_CASE("Endpoint: what toString() writes parses back to the same endpoint") {
  for (const char* text : {"unix:/tmp/x.sock", "unix:rel", "tcp:host:1", "tcp:10.0.0.1:80",
                           "tcp:[::1]:4000", "tcp:[fe80::1%eth0]:0", "tcp:[name]:7",
                           "ssh://node7", "ssh://me@node7:2222/opt/bin/mqd-proxy-server",
                           "ssh://[::1]:22", "ssh://[::1]", "ssh://node7/~/bin/mqd-proxy-server",
                           "slurm:1234", "slurm:1234_7@node-03", "slurm:9+1/opt/mqd/server"}) {
    INFO(text);
    Endpoint e = Endpoint::parse(text);
    Endpoint again = Endpoint::parse(e.toString());
    CHECK(static_cast<int>(again.kind) == static_cast<int>(e.kind));
    CHECK(again.path == e.path);
    CHECK(again.host == e.host);
    CHECK(again.port == e.port);
    CHECK(again.user == e.user);
    CHECK(again.job == e.job);
  }
}

TEST_CASE("Endpoint: ssh:// names a user, host, port and server program") {
  Endpoint e = Endpoint::parse("ssh://me@node7.example:2222/opt/mqd/bin/mqd-proxy-server");
  CHECK(e.kind == Endpoint::Kind::Ssh);
  CHECK(e.user == "me");
  CHECK(e.host == "node7.example");
  CHECK(e.port == 2222);
  CHECK(e.path == "/opt/mqd/bin/mqd-proxy-server");
  CHECK_THROWS_AS(e.toKjAddress(), std::invalid_argument);

  Endpoint plain = Endpoint::parse("ssh://node7");
  CHECK(plain.user.empty());
  CHECK(plain.port == 0);
  CHECK(plain.path.empty());
  CHECK(Endpoint::parse("ssh://node7/").path.empty());
  CHECK(Endpoint::parse("ssh://node7/~/bin/s").path == "~/bin/s");
  CHECK(Endpoint::parse("ssh://[fe80::1]:22").host == "fe80::1");
  CHECK(Endpoint::parse("ssh://[fe80::1]").port == 0);
}

TEST_CASE("Endpoint: slurm: names a job, maybe one of its nodes, and the server program") {
  Endpoint every = Endpoint::parse("slurm:1234");
  CHECK(every.kind == Endpoint::Kind::Slurm);
  CHECK(every.job == "1234");
  CHECK(every.host.empty());  // every node of the job
  CHECK(every.path.empty());
  CHECK(every.isLaunched());
  CHECK_FALSE(every.isLoopback());
  CHECK_THROWS_AS(every.toKjAddress(), std::invalid_argument);
  Endpoint one = Endpoint::parse("slurm:1234_7@node07/opt/mqd/bin/mqd-proxy-server");
  CHECK(one.job == "1234_7");
  CHECK(one.host == "node07");
  CHECK(one.path == "/opt/mqd/bin/mqd-proxy-server");
  CHECK(one.toString() == "slurm:1234_7@node07/opt/mqd/bin/mqd-proxy-server");
  for (const char* bad : {"slurm:", "slurm:abc", "slurm:-1", "slurm:12a", "slurm:1@",
                          "slurm:1@-n", "slurm:1@a,b", "slurm:1@n[1-2]", "slurm:1/",
                          "slurm:1/bin/s;rm", "slurm:1/~/s", "slurm:1@n/x y"}) {
    INFO(bad);
    CHECK_THROWS_AS(Endpoint::parse(bad), std::invalid_argument);
  }
}

TEST_CASE("Endpoint: ssh:// refuses what ssh or a remote shell would misread") {
  for (const char* bad : {"ssh://", "ssh://-oProxyCommand=x", "ssh://me@", "ssh://h:0",
                          "ssh://h:99999", "ssh://h:", "ssh://h:2x", "ssh://h/bin/s;rm",
                          "ssh://h/a b", "ssh://h/$(x)", "ssh://-l@h", "ssh://a@b@c:1/x'",
                          "ssh://[::1", "ssh://[::1]x", "ssh://h`x`", "ssh://h\x01",
                          "ssh://u\x7f@h", "ssh://h/bin/\x1bx"}) {
    INFO(bad);
    CHECK_THROWS_AS(Endpoint::parse(bad), std::invalid_argument);
  }
  CHECK_THROWS_AS(Endpoint::parse(std::string("ssh://no\0de", 12)), std::invalid_argument);
}
