// mqd-proxy config: the effective configuration and where each value came from (Cli.h).
#include <cstdio>

#include "Cli.h"
#include "Json.h"

namespace mqd::client::cli {

int configCommand(Context& c) {
  const ClientConfig& config = c.config;
  if (c.json) {
    Json list = Json::array();
    for (const Setting& s : settings()) {
      auto source = config.sources.find(s.key);
      list.push(Json::object()
                    .set("key", s.key)
                    .set("variable", s.variable)
                    .set("value", s.show(config))
                    .set("source", source != config.sources.end() ? source->second : "default"));
    }
    Json problems = Json::array();
    for (const std::string& p : c.problems) problems.push(p);
    std::fputs(Json::object()
                   .set("file", config.file)
                   .set("file_read", config.fileRead)
                   .set("settings", std::move(list))
                   .set("problems", std::move(problems))
                   .encode()
                   .c_str(),
               stdout);
    return c.problems.empty() ? 0 : 1;
  }
  std::printf("configuration file: %s\n",
              config.file.empty() ? "none (MQD_PROXY_CONFIG is empty)"
              : config.fileRead   ? config.file.c_str()
                                  : (config.file + " (not present)").c_str());
  std::printf("\n%-12s %-40s %s\n", "setting", "value", "from");
  for (const Setting& s : settings()) {
    auto source = config.sources.find(s.key);
    std::string value = s.show(config);
    std::printf("%-12s %-40s %s\n", s.key, value.empty() ? "(none)" : value.c_str(),
                source != config.sources.end() ? source->second.c_str() : "default");
  }
  if (!c.problems.empty()) {
    std::printf("\nproblems:\n");
    for (const std::string& p : c.problems) std::printf("  %s\n", p.c_str());
    return 1;
  }
  return 0;
}

}  // namespace mqd::client::cli
