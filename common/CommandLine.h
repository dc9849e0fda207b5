// Command lines: what mqd-proxy and mqd-proxy-server share on top of CLI11, which parses both.
// Each option is declared once, with its help text and the variable its default comes from;
// the --help both programs print (and help2man turns into their man pages) is laid out here
// from those declarations.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace mqd::cmdline {

// The --help layout. In order:
//  - the program's description, verbatim (it starts with the usage lines);
//  - its commands (subcommands) under "Commands:", each as "  NAME OPERANDS" and what it
//    does from column 12, where the subcommand's description is "OPERANDS\nWHAT IT DOES"
//    (OPERANDS may be empty);
//  - each group of options, in the order the groups were first used, an option as
//    "  -S, --NAME VALUE" (VALUE: its type name) and its description from the option column;
//    an option with a default string (capture_default_str, default_str) ends with
//    "Default: X.";
//  - the footer, verbatim.
// Descriptions are wrapped to the page, each line of one a paragraph of its own.
class HelpLayout final : public CLI::FormatterBase {
 public:
  HelpLayout(size_t optionColumn, size_t width) : optionColumn_(optionColumn), width_(width) {}
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;

 private:
  size_t optionColumn_;  // where options' descriptions start
  size_t width_;         // the page width descriptions are wrapped to
};

// Readies `app` for our programs, before any option is declared: help laid out by a
// HelpLayout (options' descriptions from `optionColumn`); a repeated single-valued option
// takes its last value, as a later setting overrides an earlier one; no help flag of CLI11's
// (the program declares -h/--help last, as a flag it answers itself, printing the help where
// it chooses); arguments nobody claims are left in app.remaining() (the program names them in
// its own words) rather than failing the parse.
void prepare(CLI::App& app, size_t optionColumn);

// A check for a whole number in [min, max]; it fails with
// "needs a number between MIN and MAX, got "VALUE"".
CLI::Validator numberBetween(long long min, long long max);

// A check for a value that must not be empty; it fails with "needs WHAT".
CLI::Validator nonEmpty(const std::string& what);

}  // namespace mqd::cmdline
