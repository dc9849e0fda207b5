// The --help layout both programs share (common/CommandLine.h), and its checks.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "CommandLine.h"

using namespace mqd::cmdline;

namespace {

// Every line of `text` is at most `width` columns wide.
bool fits(const std::string& text, size_t width) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > width) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("HelpLayout: description, commands, groups of options, footer, in that order") {
  CLI::App app;
  prepare(app, 22);
  app.description("Usage: prog [OPTIONS] COMMAND\n");
  app.footer("The end.\n");
  app.add_subcommand("go", "\nGoes.");
  app.add_subcommand("replay", "FILE [--dll PATH] [--stats]\nPlays it.");
  int count = 5;
  bool json = false;
  std::string server;
  app.add_option("--count", count, "Round trips.")->type_name("N")->capture_default_str();
  app.add_option("--server", server, "Where.")->type_name("ENDPOINT")->group("Remote");
  app.add_flag("--json", json, "As JSON.");
  std::string help = app.help();
  CHECK(help ==
        "Usage: prog [OPTIONS] COMMAND\n"
        "\n"
        "Commands:\n"
        "  go        Goes.\n"
        "  replay FILE [--dll PATH] [--stats]\n"
        "            Plays it.\n"
        "\n"
        "Options:\n"
        "  --count N           Round trips. Default: 5.\n"
        "  --json              As JSON.\n"
        "\n"
        "Remote:\n"
        "  --server ENDPOINT   Where.\n"
        "\n"
        "The end.\n");
}

TEST_CASE("HelpLayout: long texts wrap at 96 columns in one column; long names keep their text") {
  CLI::App app;
  prepare(app, 26);
  std::string words;
  for (int i = 0; i < 60; ++i) words += "word" + std::to_string(i) + " ";
  std::string value;
  app.add_option("--listen", value, "One of:\n* " + words + "\nDefault: none.")
      ->type_name("ENDPOINT");
  app.add_option("--handshake-timeout-ms", value, "How long.")->type_name("N");
  std::string help = app.help();
  CHECK(fits(help, 96));
  CHECK(help.find("  --listen ENDPOINT       One of:\n                          * word0 word1") !=
        std::string::npos);
  CHECK(help.find("\n                          word") != std::string::npos);  // no hanging indent
  CHECK(help.find("\n                          Default: none.\n") != std::string::npos);
  CHECK(help.find("  --handshake-timeout-ms N  How long.\n") != std::string::npos);
}

TEST_CASE("numberBetween and nonEmpty: the value, or one sentence naming the bounds") {
  CLI::App app;
  prepare(app, 22);
  int n = 0;
  std::string path;
  app.add_option("--n", n)->check(numberBetween(1, 10));
  app.add_option("--path", path)->check(nonEmpty("a path"));
  app.parse(std::string("--n 10"));
  CHECK(n == 10);
  for (const char* bad : {"0", "11", "-1", "5x", "", "99999999999999999999"}) {
    INFO(bad);
    CLI::App again;
    prepare(again, 22);
    again.add_option("--n", n)->check(numberBetween(1, 10));
    std::vector<std::string> args = {bad, "--n"};  // parse(vector) takes them reversed
    std::string said = std::string("--n: needs a number between 1 and 10, got \"") + bad + "\"";
    CHECK_THROWS_WITH_AS(again.parse(args), doctest::Contains(said.c_str()),
                         CLI::ValidationError);
  }
  std::vector<std::string> empty = {"", "--path"};
  CHECK_THROWS_WITH_AS(app.parse(empty), doctest::Contains("--path: needs a path"),
                       CLI::ValidationError);
}

TEST_CASE("prepare: a repeated option takes its last value; unknown arguments are left over") {
  CLI::App app;
  prepare(app, 22);
  std::string level;
  app.add_option("--level", level);
  app.parse(std::string("--level a stray --level=b --unknown"));
  CHECK(level == "b");
  CHECK(app.remaining() == std::vector<std::string>{"stray", "--unknown"});
}
