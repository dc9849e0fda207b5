// mqd-proxy ping: how long it takes to reach the server, and its round-trip time (Cli.h).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "Cli.h"
#include "Json.h"

namespace mqd::client::cli {

int pingCommand(Context& c) {
  auto io = kj::setupAsyncIo();
  auto start = std::chrono::steady_clock::now();
  auto connection = Connection::connectNow(io, c.config);
  double connectMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto description = connection->proxy().describeRequest().send().wait(io.waitScope);
  auto server = description.getServer();  // valid while `description` lives
  std::vector<double> rtt = measureRoundTrips(*connection, io.waitScope, c.count);
  std::vector<double> sorted = rtt;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  if (c.json) {
    // Milliseconds to the microsecond, as the text output shows them at most.
    auto ms = [](double value) { return std::round(value * 1000) / 1000; };
    Json times = Json::array();
    for (double t : rtt) times.push(ms(t));
    std::fputs(Json::object()
                   .set("server", connection->endpoint())
                   .set("version", server.getVersion().cStr())
                   .set("connect_ms", ms(connectMs))
                   .set("rtt_ms", std::move(times))
                   .set("min_ms", ms(sorted.front()))
                   .set("median_ms", ms(median))
                   .set("max_ms", ms(sorted.back()))
                   .encode()
                   .c_str(),
               stdout);
    return 0;
  }
  std::printf("mqd-proxy-server %s (%s) at %s: connected and admitted in %s\n",
              server.getVersion().cStr(), server.getArch().cStr(),
              connection->endpoint().c_str(), formatMs(connectMs).c_str());
  for (size_t i = 0; i < rtt.size(); ++i) {
    std::printf("round trip %zu: %s\n", i + 1, formatMs(rtt[i]).c_str());
  }
  std::printf("%zu round trips: min %s, median %s, max %s\n", rtt.size(),
              formatMs(sorted.front()).c_str(), formatMs(median).c_str(),
              formatMs(sorted.back()).c_str());
  return 0;
}

}  // namespace mqd::client::cli
