// SPDX-License-Identifier: Apache-2.0
#include "dispatch.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backoff/spelling.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "seed_flags.hpp"

namespace backoff::cli {
namespace {

// The retry commands (try, forany, forall, script) report their own errors as 125, so that a usage
// mistake is never taken for the command's status (docs/EXIT_CODES.md).
bool is_retry_command(std::string_view n) {
  return n == "try" || n == "forany" || n == "forall" || n == "script";
}

// For the first word of argv (after the subcommand) that looks like a flag the subcommand does
// not have, the closest flag it has ("--time" -> "--times"), or "".
std::string likely_flag(const CLI::App& sub, int argc, char** argv) {
  std::vector<std::string> flags;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& n : o->get_lnames()) flags.push_back("--" + n);
  }
  std::vector<std::string_view> names(flags.begin(), flags.end());
  for (int i = 2; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word == "--") break;
    if (word.size() < 3 || word.substr(0, 2) != "--") continue;
    word = word.substr(0, word.find('='));
    if (std::find(names.begin(), names.end(), word) != names.end()) continue;
    return std::string(closest_name(word, names));
  }
  return {};
}

// The width --help wraps to: the terminal's when stdout is one, else $COLUMNS when it is a
// sensible number, else 80 (a pipe, a file: what man and most tools assume).
std::size_t help_width() {
  winsize size{};
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    return std::clamp<std::size_t>(size.ws_col, 40, 1000);
  }
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    std::size_t n = 0;
    const std::string_view text(columns);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc{} && end == text.data() + text.size() && n >= 40 && n <= 1000) return n;
  }
  return 80;
}

// `text` in lines of at most `width` characters (a word longer than that stands alone), each
// after the first indented by `indent` spaces; its own line breaks are kept.
std::string wrap_text(std::string_view text, std::size_t indent, std::size_t width) {
  const std::size_t room = width > indent + 20 ? width - indent : 20;
  std::string out, line;
  const auto flush = [&](bool more) {
    out += line;
    line.clear();
    if (more) out += "\n" + std::string(indent, ' ');
  };
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] == '\n') {
      flush(true);
      ++at;
      continue;
    }
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    const std::size_t end = text.find_first_of(" \n", at);
    const std::string_view word = text.substr(at, end == std::string_view::npos ? end : end - at);
    if (!line.empty() && line.size() + 1 + word.size() > room) flush(true);
    if (!line.empty()) line += ' ';
    line += word;
    at += word.size();
  }
  flush(false);
  return out;
}

// Help without CLI11's internals: "N" for whole numbers, "VALUE" for text, the choices for a
// set ("{table,json}"), instead of "TEXT:UINT" and "TEXT:{table,json}"; the program's name
// without its path; and the command after "--" in the retry commands' usage line.
// Lines wrap to the terminal's width (help_width), descriptions in their column.
class help_formatter : public CLI::Formatter {
 public:
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return two_columns(make_option_name(opt, is_positional) + make_option_opts(opt),
                       make_option_desc(opt));
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    return two_columns(sub->get_display_name(true), sub->get_description());
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string description = CLI::Formatter::make_description(app);
    return description.empty() ? description : wrap_text(description, 0, width_) + "\n";
  }
  std::string make_footer(const CLI::App* app) const override {
    const std::string footer = CLI::Formatter::make_footer(app);
    return footer.empty() ? footer : wrap_text(footer, 0, width_) + "\n";
  }
  // Without a negated flag's "{false}".
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (std::size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      const std::size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string type = opt->get_type_name();
    if (opt->get_type_size() == 0 || type.empty()) return {};  // a flag
    if (const auto brace = type.find('{'); brace != std::string::npos) {
      type = type.substr(brace, type.find('}', brace) - brace + 1);
    } else if (type.find("INT") != std::string::npos) {
      type = "N";
    } else if (type.find("FLOAT") != std::string::npos) {
      type = "NUMBER";
    } else if (type.find("TEXT") != std::string::npos) {
      type = "VALUE";
    }
    std::string out = " " + type;
    if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
    // " ..." only where one occurrence takes several values; a repeatable flag says so in its
    // own text.
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size &&
        opt->get_allow_extra_args()) {
      out += " ...";
    }
    return out;
  }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    const std::size_t space = name.find(' ');
    const std::string program = name.substr(0, space);
    name = program.substr(program.rfind('/') + 1) +
           (space == std::string::npos ? std::string() : name.substr(space));
    std::string usage = CLI::Formatter::make_usage(app, name);
    if (!usage.empty() && usage.back() == '\n') usage.pop_back();
    const std::string& command = app->get_name();
    if (command == "try" || command == "forany" || command == "forall") {
      usage += " -- COMMAND [ARGS...]";
    }
    return wrap_text(usage, 2, width_) + "\n";
  }

 private:
  // "  NAME" padded to the column, then the description wrapped in the column beside it (on the
  // next line when the name fills the column).
  std::string two_columns(const std::string& name, const std::string& description) const {
    const std::size_t column = get_column_width();
    std::string out = "  " + name;
    if (!description.empty()) {
      if (out.size() >= column) {
        out += "\n" + std::string(column, ' ');
      } else {
        out.append(column - out.size(), ' ');
      }
      out += wrap_text(description, column, width_);
    }
    return out + "\n";
  }

  std::size_t width_ = help_width();
};

// CLI11's own parse errors in our words: an unknown option named as such, a flag without its
// value, a missing argument; what our typed options say (already in our words) unchanged.
std::string in_our_words(const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::size_t colon = what.find(": ");
    // CLI11 lists the extra words last first: put them back in the order they were given.
    std::istringstream words(colon == std::string::npos ? what : what.substr(colon + 2));
    std::vector<std::string> given;
    for (std::string word; words >> word;) given.insert(given.begin(), word);
    std::string extras;
    for (const std::string& word : given) extras += (extras.empty() ? "" : " ") + word;
    const bool option = !extras.empty() && extras.front() == '-';
    const bool several = given.size() > 1;
    return std::string(option ? (several ? "unknown options " : "unknown option ")
                              : (several ? "unexpected arguments " : "unexpected argument ")) +
           "'" + extras + "'";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // "--threads: 1 required N missing"
    const std::size_t colon = what.find(": ");
    const std::size_t missing = what.rfind(" missing");
    const std::size_t required = what.find(" required ");
    // "--policy: At Most 1 required but received 2"
    const std::size_t at_most = what.find(": At Most ");
    const std::size_t received = what.find(" required but received ");
    if (at_most != std::string::npos && received != std::string::npos && at_most < received) {
      const std::string most = what.substr(at_most + 10, received - at_most - 10);
      return what.substr(0, at_most) + ": given " + what.substr(received + 23) + " times" +
             (most == "1" ? "; give it once" : "; at most " + most);
    }
    if (colon != std::string::npos && missing != std::string::npos &&
        required != std::string::npos && required < missing) {
      std::string type = what.substr(required + 10, missing - required - 10);
      if (type.find("INT") != std::string::npos) type = "N";
      if (type.find("FLOAT") != std::string::npos) type = "NUMBER";
      if (type.find("TEXT") != std::string::npos) type = "VALUE";
      return what.substr(0, colon) + ": needs a value (" + type + ")";
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    // "items is required"
    const std::size_t is = what.rfind(" is required");
    if (is != std::string::npos && is + 12 == what.size()) {
      return "missing " + what.substr(0, is) + " (required)";
    }
  }
  return what;
}

// A repeatable flag takes one value each time it is given (`--set a=1 --set b=2`). CLI11's
// default for a list lets one occurrence take every word up to the next flag, so
// `sim --set k=v SCENARIO` swallowed the scenario as a second assignment. Only --merge takes a
// list of folders by design, and positionals are lists of their own.
void one_value_per_occurrence(CLI::App& command) {
  for (CLI::Option* opt : command.get_options()) {
    if (opt->nonpositional() && opt->get_expected_max() == CLI::detail::expected_max_vector_size &&
        opt->get_name() != "--merge") {
      opt->allow_extra_args(false);
    }
  }
}

}  // namespace

int run_subcommands(int argc, char** argv, std::span<const subcommand> all,
                    reference_printer reference) {
  const command_tail tail = split_command_tail(argc, argv);
  CLI::App app{"backoff: when a call fails, when and whether to try again"};
  app.formatter(std::make_shared<help_formatter>());  // before the subcommands, which copy it
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("backoff ") + BACKOFF_VERSION);
  int status = exit_ok;
  const std::string_view first = argc > 1 ? std::string_view(argv[1]) : std::string_view();
  const auto chosen =
      std::find_if(all.begin(), all.end(), [&](const subcommand& c) { return c.name == first; });
  // Only the chosen subcommand's options are built (they are most of the start-up time); without
  // one, all of them, for --help and the messages below.
  const std::string version = std::string("backoff ") + BACKOFF_VERSION;
  for (const subcommand& c : all) {
    if (chosen == all.end() || &c == &*chosen) c.setup(app, status, tail);
  }
  // `backoff sim --version` as well as `backoff --version`.
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    sub->set_version_flag("--version", version);
    one_value_per_occurrence(*sub);
  }

  std::vector<std::string> args =
      with_seed_flags(argc, argv, [&app](std::string_view command, const std::string& flag) {
        const CLI::App* sub = app.get_subcommand(std::string(command));
        return sub->get_option_no_throw(flag) != nullptr;
      });
  std::vector<char*> arg_pointers;
  for (std::string& a : args) arg_pointers.push_back(a.data());
  argv = arg_pointers.data();

  std::vector<std::string_view> names;
  std::string known;
  for (const subcommand& c : all) {
    names.push_back(c.name);
    known += (known.empty() ? "" : ", ") + std::string(c.name);
  }
  // CLI11 reports an unknown command as a missing one; name it instead, with the likely one.
  if (argc > 1 && argv[1][0] != '-' && chosen == all.end()) {
    const std::string_view guess = closest_name(argv[1], names);
    std::cerr << "backoff: unknown command '" << argv[1] << "'"
              << (guess.empty() ? std::string() : " (did you mean '" + std::string(guess) + "'?)")
              << " (commands: " << known << "; see 'backoff --help')\n";
    return exit_usage;
  }
  // Before the command only --help, --version, --man and --completion mean anything; CLI11
  // would call any other flag a missing command.
  if (argc > 1 && argv[1][0] == '-') {
    const std::string_view flag = argv[1];
    if (reference != nullptr && (flag == "--man" || flag == "--completion")) {
      return reference(app, argc, argv);
    }
    if (flag != "-h" && flag != "--help" && flag != "--help-all" && flag != "--version") {
      std::cerr << "backoff: unknown option '" << flag
                << "' (before the command: --help, --version, --man, --completion SHELL; "
                   "commands: "
                << known << ")\n";
      return exit_usage;
    }
  }

  const bool retry = argc > 1 && is_retry_command(argv[1]);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line: what is wrong, the likely flag for a mistyped one, then where to look.
    std::string where = "backoff";
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::string guess;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && chosen != all.end()) {
      guess = likely_flag(*app.get_subcommand(std::string(chosen->name)), argc, argv);
    }
    std::cerr << where << ": " << in_our_words(e)
              << (guess.empty() ? std::string() : " (did you mean '" + guess + "'?)") << " (see '"
              << where << " --help')\n";
    return retry ? exit_tool_error : exit_usage;
  }
  // Whatever a command printed last must reach stdout: a write error there is never status 0.
  // The retry commands keep the command's status in the message and exit 125 (their own
  // failure); the others exit 1.
  if (!flush_stdout(
          std::string("backoff ") + argv[1],
          retry ? "(the command's status was " + std::to_string(status) + ")" : std::string())) {
    if (retry) return exit_tool_error;
    return status == exit_ok ? exit_failure : status;
  }
  return status;
}

}  // namespace backoff::cli
