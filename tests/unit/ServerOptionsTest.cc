#include <doctest/doctest.h>

#include <vector>

#include "Endpoint.h"
#include "ServerOptions.h"
#include "Worker.h"
#include "mqd.capnp.h"

using namespace mqd::server;

namespace {
ServerOptions parse(std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("mqd-proxy-server")};
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  return parseServerOptions(static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST_CASE("ServerOptions: defaults and repeatable --dll") {
  ServerOptions o = parse({"--dll", "/a.so", "--dll=/b.so"});
  CHECK(o.dlls == std::vector<std::string>{"/a.so", "/b.so"});
  CHECK(o.listen == "unix:" + mqd::defaultSocketPath());
  CHECK(o.logLevel == mqd::LogLevel::Info);
  o = parse({"--listen", "tcp:127.0.0.1:0", "--log-level", "trace", "--shutdown-grace-ms", "5"});
  CHECK(o.listen == "tcp:127.0.0.1:0");
  CHECK(o.logLevel == mqd::LogLevel::Trace);
  CHECK(o.shutdownGraceMs == 5);
}

TEST_CASE("ServerOptions: usage errors name the problem") {
  CHECK_THROWS_WITH_AS(parse({"--frobnicate"}), doctest::Contains("--frobnicate"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"--dll"}), doctest::Contains("--dll: 1 required PATH missing"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--dll", ""}), doctest::Contains("--dll: needs a path"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"stray"}), doctest::Contains("unknown option \"stray\""),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--block-size", "5000"}), doctest::Contains("power of two"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--listen", "tcp:x"}), doctest::Contains("--listen"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"--log-level", "loud"}), doctest::Contains("loud"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"--shutdown-grace-ms", "-1"}), doctest::Contains("between"),
                       UsageError);
}

TEST_CASE("ServerOptions: --read-around is measured or a fixed number of bytes") {
  CHECK_FALSE(parse({}).readAround.has_value());
  CHECK(parse({"--read-around", "0"}).readAround == uint64_t{0});
  CHECK(parse({"--read-around=1048576"}).readAround == uint64_t{1048576});
  CHECK_FALSE(parse({"--read-around", "4096", "--read-around", "measured"}).readAround);
  CHECK_THROWS_WITH_AS(parse({"--read-around", "4194305"}), doctest::Contains("between"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--read-around", "lots"}), doctest::Contains("--read-around"),
                       UsageError);
}

TEST_CASE("ServerOptions: --help documents every option") {
  std::string help = serverHelp();
  for (const char* option : {"--dll", "--listen", "--log-level", "--log-file", "--ready-file",
                             "--shutdown-grace-ms", "--version", "--help", "SIGTERM", "0600",
                             "--token-file", "--tls-cert", "--tls-key", "--max-sessions",
                             "--max-message-mib", "--idle-timeout", "--handshake-timeout-ms",
                             "--worker-user", "--read-around", "tls:HOST:PORT", "tcp:PORT", "loopback"}) {
    INFO(option);
    CHECK(help.find(option) != std::string::npos);
  }
}

TEST_CASE("ServerOptions: security options, and TLS only with a tls: listener") {
  ServerOptions d = parse({});
  CHECK(d.maxSessions == 64);
  CHECK(d.maxMessageMiB == 128);
  CHECK(d.idleTimeoutS == 0);
  CHECK(d.handshakeTimeoutMs == 5000);
  CHECK(d.tokenFile.empty());
  CHECK(d.workerUser.empty());
  ServerOptions o = parse({"--listen", "tls:0", "--tls-cert", "/c.pem", "--tls-key", "/k.pem",
                           "--token-file", "/t", "--max-sessions", "3", "--max-message-mib", "2",
                           "--idle-timeout", "60", "--handshake-timeout-ms", "250",
                           "--worker-user", "nobody"});
  CHECK(o.tlsCert == "/c.pem");
  CHECK(o.tlsKey == "/k.pem");
  CHECK(o.tokenFile == "/t");
  CHECK(o.maxSessions == 3);
  CHECK(o.maxMessageMiB == 2);
  CHECK(o.idleTimeoutS == 60);
  CHECK(o.handshakeTimeoutMs == 250);
  CHECK(o.workerUser == "nobody");
  CHECK_THROWS_WITH_AS(parse({"--listen", "tls:0"}), doctest::Contains("--tls-cert"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--listen", "tcp:0", "--tls-cert", "/c", "--tls-key", "/k"}),
                       doctest::Contains("tls:HOST:PORT"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"--max-sessions", "0"}), doctest::Contains("between"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"--max-message-mib", "0"}), doctest::Contains("between"),
                       UsageError);
}

TEST_CASE("ServerOptions: --listen systemd takes systemd's socket, with TLS as tls:systemd") {
  CHECK(parse({"--listen", "systemd"}).listen == "systemd");
  CHECK(parse({"--listen=tls:systemd", "--tls-cert", "/c", "--tls-key", "/k"}).listen ==
        "tls:systemd");
  CHECK_THROWS_WITH_AS(parse({"--listen", "tls:systemd"}), doctest::Contains("--tls-cert"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--listen", "systemd", "--tls-cert", "/c", "--tls-key", "/k"}),
                       doctest::Contains("tls:"), UsageError);
  CHECK_THROWS_WITH_AS(parse({"--listen", "systemd", "--stdio"}), doctest::Contains("--stdio"),
                       UsageError);
  CHECK_THROWS_AS(parse({"--listen", "systemd:"}), UsageError);
  CHECK(serverHelp().find("tls:systemd") != std::string::npos);
}

TEST_CASE("ServerOptions: --max-message-mib bounds what a session takes to refresh ahead") {
  auto offered = [](uint64_t mib) {
    ServerOptions o = parse({"--dll", "/a.so", "--max-message-mib", std::to_string(mib)});
    return refreshAheadBytesFor(uint64_t(o.maxMessageMiB) << 17);
  };
  // The default leaves room for the ceiling beside the process's own blocks.
  CHECK(offered(128) == mqd::wire::REFRESH_AHEAD_BYTES_CEILING);
  // A smaller message: what it holds beside them (64 MiB less 16 MiB of the process's own
  // blocks and 8 MiB for the rest of the request).
  CHECK(offered(64) == 40u << 20);
  // Never less than a server that does not say takes.
  CHECK(offered(1) == mqd::wire::MAX_REFRESH_AHEAD_BYTES);
  CHECK(offered(4096) == mqd::wire::REFRESH_AHEAD_BYTES_CEILING);
}
