// SPDX-License-Identifier: Apache-2.0
// Fuzzes the Fault Tolerant Shell parser, backoff::tool::script::parse
// (src/tool/script/parser.cpp), with the input as a script's text.
// Asserts: parse returns or throws backoff::parse_error (nothing else) whose message is one line
// "fuzz.ftsh:LINE: ..." with LINE between 1 and the script's line count; parsing is
// deterministic; a parsed script keeps the AST's invariants: every command has a word, every try
// and loop body and catch block is non-empty, try counts are >= 1 and time limits > 0, loop
// variables and assignment names are variable names, loops have items, descriptors are 0-255,
// and statement lines are within the script.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "backoff/error.hpp"
#include "fuzz_check.hpp"
#include "tool/script/parser.hpp"

namespace {

using backoff::fuzz::check;
namespace ftsh = backoff::tool::script;

constexpr std::string_view file_name = "fuzz.ftsh";

struct walker {
  int lines = 1;

  void line(int at) const { check(at >= 1 && at <= lines, "a statement line outside the script"); }

  void block(const ftsh::block& b, int depth) const {
    check(depth <= 101, "blocks nested beyond the parser's limit");
    for (const ftsh::statement& st : b) statement(st, depth);
  }

  void statement(const ftsh::statement& st, int depth) const {
    if (const auto* c = std::get_if<ftsh::command>(&st.node)) {
      line(c->line);
      check(!c->argv.empty(), "a command without a word");
      for (const auto& r : c->redirects) {
        check(r.fd >= 0 && r.fd <= 255, "a descriptor outside 0-255");
        if (r.how == ftsh::redirect::kind::duplicate) {
          check(r.other_fd >= 0 && r.other_fd <= 255, "a duplicated descriptor outside 0-255");
        }
      }
    } else if (const auto* a = std::get_if<ftsh::assignment>(&st.node)) {
      line(a->line);
      check(ftsh::is_variable_name(a->name), "an assignment to a bad name", a->name);
    } else if (const auto* t = std::get_if<ftsh::try_block>(&st.node)) {
      line(t->line);
      check(!t->body.empty(), "an empty try body");
      check(!t->times || *t->times >= 1, "a try with 0 times");
      check(!t->within || t->within->count() > 0, "a try with no time");
      check(!t->every || t->every->count() >= 0, "a negative every");
      check(!t->handler || !t->handler->empty(), "an empty catch block");
      block(t->body, depth + 1);
      if (t->handler) block(*t->handler, depth + 1);
    } else if (const auto* l = std::get_if<ftsh::loop>(&st.node)) {
      line(l->line);
      check(ftsh::is_variable_name(l->variable), "a loop over a bad name", l->variable);
      check(!l->items.empty(), "a loop without items");
      check(!l->body.empty(), "an empty loop body");
      block(l->body, depth + 1);
    } else if (const auto* b = std::get_if<ftsh::builtin>(&st.node)) {
      line(b->line);
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  try {
    const ftsh::script s = ftsh::parse(text, file_name);
    check(s.file == file_name, "the script forgets its file name");
    walker{lines}.block(s.body, 0);
    const ftsh::script again = ftsh::parse(text, file_name);
    check(again.body.size() == s.body.size(), "parsing twice gives another script");
  } catch (const backoff::parse_error& e) {
    const std::string_view message = e.what();
    backoff::fuzz::check_message(message, std::string(file_name) + ":");
    const std::string_view rest = message.substr(file_name.size() + 1);
    const std::size_t colon = rest.find(':');
    check(colon != std::string_view::npos && colon > 0 && colon <= 9,
          "an error without a line number", message);
    const std::string_view digits = rest.substr(0, colon);
    check(digits.find_first_not_of("0123456789") == std::string_view::npos,
          "an error without a line number", message);
    const int at = std::stoi(std::string(digits));
    check(at >= 1 && at <= lines, "an error line outside the script", message);
  } catch (const std::exception& e) {
    backoff::fuzz::fail("an exception other than parse_error", e.what());
  }
  return 0;
}
