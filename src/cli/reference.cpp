// SPDX-License-Identifier: Apache-2.0
#include "reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "backoff/presets.hpp"
#include "sweep_jobs.hpp"  // shell_single_quote

namespace backoff::cli {
namespace {

std::vector<const CLI::App*> subcommands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

std::vector<const CLI::Option*> flags_of(const CLI::App& sub) {
  return sub.get_options([](const CLI::Option* o) { return o->nonpositional(); });
}

// Every spelling of an option: "-o", "--out".
std::vector<std::string> spellings(const CLI::Option* o) {
  std::vector<std::string> out;
  for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
  return out;
}

bool takes_value(const CLI::Option* o) {
  return o->get_type_size() != 0 && !o->get_type_name().empty();
}

// What an option takes, as its --help shows it for the typed options (typed_options.hpp);
// VALUE for the others.
std::string value_name(const CLI::Option* o) {
  const std::string type = o->get_type_name();
  for (const char* typed : {"DURATION", "SIZE", "PERCENT", "SEED", "N"}) {
    if (type == typed) return type;
  }
  return "VALUE";
}

// roff text: backslashes doubled as \e, a line never starting with a control character, hyphens
// of options as \- (so that they copy as ASCII minus signs).
std::string roff(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

// A zsh _arguments/_describe description: no brackets, colons or quotes left to interpret.
std::string zsh_text(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '[' || c == ']') {
      out += c == '[' ? '(' : ')';
    } else if (c == ':') {
      out += "\\:";
    } else if (c == '\'') {
      out += "'\\''";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

bool has_scenarios(const CLI::App* sub) {
  return sub->get_name() == "sim" || sub->get_name() == "sweep";
}

}  // namespace

std::string man_page(const CLI::App& app, const std::string& version) {
  std::string m;
  m += fmt::format(".TH BACKOFF 1 \"\" \"{}\" \"User Commands\"\n", roff(version));
  m += ".SH NAME\nbackoff \\- when a call fails, when and whether to try again\n";
  m += ".SH SYNOPSIS\n.B backoff\n.I COMMAND\n[\\fIOPTIONS\\fR]\n.br\n"
       ".B backoff\n\\-\\-help | \\-\\-version | \\-\\-man | \\-\\-completion bash|zsh\n.br\n"
       ".B backoff\\-try\n[\\fIOPTIONS\\fR] \\-\\- \\fICOMMAND\\fR [\\fIARGS\\fR...]\n";
  m += ".SH DESCRIPTION\nA retry library's toolkit: a simulator of retry strategies (sim, "
       "sweep), a load harness (serve, load), and a retry tool (try, forany, forall, script). "
       "Each command below has the options of its \\-\\-help. \\fBbackoff\\-try\\fR is "
       "\\fBbackoff try\\fR as an executable of its own.\n";
  m += ".SH COMMANDS\n";
  for (const CLI::App* sub : subcommands_of(app)) {
    m += ".SS " + roff(sub->get_name()) + "\n";
    m += roff(sub->get_description()) + "\n";
    for (const CLI::Option* o : flags_of(*sub)) {
      std::string names;
      for (const std::string& s : spellings(o)) {
        names += (names.empty() ? "" : ", ") + std::string("\\fB") + roff(s) + "\\fR";
      }
      if (takes_value(o)) names += " \\fI" + value_name(o) + "\\fR";
      m += ".TP\n" + names + "\n" + roff(o->get_description());
      if (!o->get_default_str().empty()) m += " (default: " + roff(o->get_default_str()) + ")";
      m += "\n";
    }
  }
  m += ".SH EXIT STATUS\n0 success; 1 the work failed (an output not writable); 2 a usage "
       "mistake (bad flag, spec, duration or scenario). The retry commands pass the command's "
       "status through, with 124 for a timeout, 125 for their own errors, 126 and 127 for a "
       "command that cannot run, and 128+N for signal N.\n";
  m += ".SH SEE ALSO\n\\fBretry\\fR(1), \\fBtimeout\\fR(1), \\fBwrk\\fR(1); docs/ in the source "
       "tree.\n";
  return m;
}

namespace {

// The option whose value is a policy: its completion offers the presets' names.
constexpr std::string_view policy_option = "--policy";

// The presets' names, separated by spaces.
std::string preset_words() {
  std::string words;
  for (const preset& p : presets()) words += (words.empty() ? "" : " ") + std::string(p.name);
  return words;
}

bool takes_policy(const CLI::Option* o) {
  const std::vector<std::string> names = spellings(o);
  return std::find(names.begin(), names.end(), policy_option) != names.end();
}

}  // namespace

std::string bash_completion(const CLI::App& app, const std::vector<std::string>& scenarios) {
  std::string commands;
  for (const CLI::App* sub : subcommands_of(app)) commands += " " + sub->get_name();
  std::string cases;
  for (const CLI::App* sub : subcommands_of(app)) {
    std::string words, valued, policy;
    for (const CLI::Option* o : flags_of(*sub)) {
      for (const std::string& s : spellings(o)) {
        words += " " + s;
        if (takes_policy(o)) {
          policy += "|" + s;
        } else if (takes_value(o)) {
          valued += "|" + s;
        }
      }
    }
    cases += "    " + sub->get_name() + ")\n";
    if (!policy.empty()) {
      // A policy is a spec or a preset: the presets' names (a spec is typed out).
      cases += "      case \"$prev\" in " + policy.substr(1) + ") COMPREPLY=($(compgen -W " +
               shell_single_quote(preset_words()) + " -- \"$cur\")); return ;; esac\n";
    }
    if (!valued.empty()) {
      // After an option that takes a value: files, since most values are free text or paths.
      cases += "      case \"$prev\" in " + valued.substr(1) +
               ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;; esac\n";
    }
    std::string extra;
    if (has_scenarios(sub)) {
      for (const std::string& s : scenarios) extra += " " + s;
    }
    cases += "      COMPREPLY=($(compgen -W " + shell_single_quote(words.substr(1) + extra) +
             " -- \"$cur\"))\n";
    if (has_scenarios(sub)) cases += "      COMPREPLY+=($(compgen -f -X '!*.toml' -- \"$cur\"))\n";
    cases += "      ;;\n";
  }
  return "# bash completion for backoff and backoff-try, generated by `backoff --completion bash`\n"
         "_backoff() {\n"
         "  local cur prev command\n"
         "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
         "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  if [[ ${COMP_WORDS[0]##*/} == backoff-try ]]; then\n"
         "    command=try\n"
         "  elif (( COMP_CWORD == 1 )); then\n"
         "    COMPREPLY=($(compgen -W " +
         shell_single_quote(commands.substr(1) + " --help --version --man --completion") +
         " -- \"$cur\"))\n"
         "    return\n"
         "  else\n"
         "    command=\"${COMP_WORDS[1]}\"\n"
         "  fi\n"
         "  # After \"--\", the command being retried completes as a command.\n"
         "  local i\n"
         "  for (( i = 1; i < COMP_CWORD; i++ )); do\n"
         "    if [[ ${COMP_WORDS[i]} == -- ]]; then\n"
         "      COMPREPLY=($(compgen -c -- \"$cur\"))\n"
         "      return\n"
         "    fi\n"
         "  done\n"
         "  case \"$command\" in\n" +
         cases +
         "  esac\n"
         "}\n"
         "complete -F _backoff backoff backoff-try\n";
}

std::string zsh_completion(const CLI::App& app, const std::vector<std::string>& scenarios) {
  std::string z =
      "#compdef backoff backoff-try\n"
      "# zsh completion for backoff, generated by `backoff --completion zsh`\n";
  for (const CLI::App* sub : subcommands_of(app)) {
    z += "_backoff_" + sub->get_name() + "() {\n  _arguments -s \\\n";
    for (const CLI::Option* o : flags_of(*sub)) {
      const std::vector<std::string> names = spellings(o);
      std::string spec;
      if (names.size() > 1) {
        std::string group;
        for (const std::string& n : names) group += (group.empty() ? "" : " ") + n;
        spec = "(" + group + ")'{";
        for (std::size_t i = 0; i < names.size(); ++i) spec += (i ? "," : "") + names[i];
        spec += "}'";
      } else {
        spec = names.front();
      }
      spec += "[" + zsh_text(o->get_description()) + "]";
      if (takes_policy(o)) {
        spec += ":policy:(" + preset_words() + ")";
      } else if (takes_value(o)) {
        spec += ":value:_files";
      }
      z += "    '" + spec + "' \\\n";
    }
    if (has_scenarios(sub)) {
      std::string names;
      for (const std::string& s : scenarios) names += (names.empty() ? "" : " ") + s;
      z += "    '*:scenario:(" + names + ")'\n";
    } else if (sub->get_name() == "try" || sub->get_name() == "forany" ||
               sub->get_name() == "forall") {
      z += "    '*::command:_normal'\n";
    } else {
      z += "    '*:file:_files'\n";
    }
    z += "}\n";
  }
  z += "_backoff() {\n"
       "  if [[ $service == backoff-try ]]; then\n"
       "    _backoff_try\n"
       "    return\n"
       "  fi\n"
       "  local -a commands\n"
       "  commands=(\n";
  for (const CLI::App* sub : subcommands_of(app)) {
    z += "    '" + sub->get_name() + ":" + zsh_text(sub->get_description()) + "'\n";
  }
  z += "  )\n"
       "  if (( CURRENT == 2 )); then\n"
       "    _describe 'command' commands\n"
       "    return\n"
       "  fi\n"
       "  local command=$words[2]\n"
       "  shift words\n"
       "  (( CURRENT-- ))\n"
       "  (( $+functions[_backoff_$command] )) && _backoff_$command\n"
       "}\n"
       "_backoff \"$@\"\n";
  return z;
}

}  // namespace backoff::cli
