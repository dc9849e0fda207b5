// mqd-proxy config: the effective configuration and where each value came from (Cli.h).
#include <cstdio>

#include "Cli.h"

namespace mqd::client::cli {

int configCommand(Context& c) {
  const ClientConfig& config = c.config;
  if (c.json) {
    std::printf("{\"file\": %s, \"file_read\": %s, \"settings\": [",
                jsonString(config.file).c_str(), config.fileRead ? "true" : "false");
    bool first = true;
    for (const Setting& s : settings()) {
      auto source = config.sources.find(s.key);
      std::printf("%s\n {\"key\": %s, \"variable\": %s, \"value\": %s, \"source\": %s}",
                  first ? "" : ",", jsonString(s.key).c_str(), jsonString(s.variable).c_str(),
                  jsonString(s.show(config)).c_str(),
                  jsonString(source != config.sources.end() ? source->second : "default")
                      .c_str());
      first = false;
    }
    std::printf("\n], \"problems\": [");
    for (size_t i = 0; i < c.problems.size(); ++i) {
      std::printf("%s%s", i ? ", " : "", jsonString(c.problems[i]).c_str());
    }
    std::printf("]}\n");
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
