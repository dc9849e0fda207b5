#include "CommandLine.h"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

namespace mqd::cmdline {
namespace {

constexpr size_t kCommandColumn = 12;

// `text` wrapped to `width`: `first` is what the first line starts with, the later lines
// start with `indent` spaces (all of them: help2man reads a change of indentation as the end
// of an option's text). Each line of `text` is a paragraph; a word longer than a line stays
// whole.
std::string wrap(const std::string& text, const std::string& first, size_t indent,
                 size_t width) {
  std::string out = first;
  size_t column = first.size();
  std::istringstream paragraphs(text);
  std::string paragraph;
  bool firstParagraph = true;
  while (std::getline(paragraphs, paragraph)) {
    if (!firstParagraph) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    }
    firstParagraph = false;
    std::istringstream words(paragraph);
    std::string word;
    bool lineEmpty = true;
    while (words >> word) {
      if (!lineEmpty && column + 1 + word.size() > width) {
        out += "\n" + std::string(indent, ' ');
        column = indent;
        lineEmpty = true;
      }
      if (!lineEmpty) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      lineEmpty = false;
    }
  }
  return out + "\n";
}

// "  NAME" padded to `column`, followed by `text` wrapped from `column`. A name too long for
// its column (with two spaces to spare) is followed by two spaces and the text when it is an
// option, and has lines of its own when it is a command with its operands (wrapped, later
// lines indented by 8).
std::string entry(const std::string& name, const std::string& text, size_t column,
                  size_t width) {
  std::string head = "  " + name;
  if (text.empty()) return head + "\n";
  if (head.size() + 2 <= column) {
    return wrap(text, head + std::string(column - head.size(), ' '), column, width);
  }
  if (name.rfind("-", 0) == 0) return wrap(text, head + "  ", column, width);
  // A bracketed optional operand ("[--dot FILE]") is never split across lines.
  std::string glued = name;
  int depth = 0;
  for (char& ch : glued) {
    depth += ch == '[' ? 1 : ch == ']' ? -1 : 0;
    if (ch == ' ' && depth > 0) ch = '\x01';
  }
  std::string lines = wrap(glued, "  ", 8, width);
  for (char& ch : lines) {
    if (ch == '\x01') ch = ' ';
  }
  return lines + wrap(text, std::string(column, ' '), column, width);
}

std::string optionName(const CLI::Option* opt) {
  std::string name;
  for (const std::string& s : opt->get_snames()) name += (name.empty() ? "-" : ", -") + s;
  for (const std::string& l : opt->get_lnames()) name += (name.empty() ? "--" : ", --") + l;
  if (opt->get_type_size() != 0 && !opt->get_type_name().empty()) {
    name += " " + opt->get_type_name();
  }
  return name;
}

std::string optionText(const CLI::Option* opt) {
  std::string text = opt->get_description();
  const std::string& value = opt->get_default_str();
  if (value.empty()) return text;
  return text + (text.empty() ? "" : " ") + "Default: " + value + ".";
}

}  // namespace

std::string HelpLayout::make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const {
  std::string out = app->get_description();
  auto named = [](const CLI::App* sub) { return !sub->get_name().empty(); };
  std::vector<const CLI::App*> commands = app->get_subcommands(named);
  if (!commands.empty()) {
    out += "\nCommands:\n";
    for (const CLI::App* command : commands) {
      std::string description = command->get_description();
      size_t newline = description.find('\n');
      std::string operands = newline == std::string::npos ? "" : description.substr(0, newline);
      std::string text = newline == std::string::npos ? description : description.substr(newline + 1);
      std::string name = command->get_name() + (operands.empty() ? "" : " " + operands);
      out += entry(name, text, kCommandColumn, width_);
    }
  }
  for (const std::string& group : app->get_groups()) {
    std::vector<const CLI::Option*> options = app->get_options(
        [&](const CLI::Option* opt) { return opt->get_group() == group && opt->nonpositional(); });
    if (group.empty() || options.empty()) continue;
    out += "\n" + group + ":\n";
    for (const CLI::Option* opt : options) {
      out += entry(optionName(opt), optionText(opt), optionColumn_, width_);
    }
  }
  if (!app->get_footer().empty()) out += "\n" + app->get_footer();
  return out;
}

void prepare(CLI::App& app, size_t optionColumn) {
  app.formatter(std::make_shared<HelpLayout>(optionColumn, 96));
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag();
  app.allow_extras();
}

CLI::Validator numberBetween(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
          return "needs a number between " + std::to_string(min) + " and " +
                 std::to_string(max) + ", got \"" + value + "\"";
        }
        return "";
      },
      "");
}

CLI::Validator nonEmpty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& value) -> std::string { return value.empty() ? "needs " + what : ""; },
      "");
}

}  // namespace mqd::cmdline
