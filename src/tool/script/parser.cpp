// SPDX-License-Identifier: Apache-2.0
// The ftsh lexer and parser. Both work one logical line at a time, so the first error reported is
// the first one in the file, and open blocks live on an explicit stack instead of the call stack,
// so hostile input (this parser is fuzzed) cannot exhaust it.
#include "parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backoff/error.hpp"

namespace backoff::tool::script {
namespace {

constexpr std::size_t max_nesting = 100;
// Far above what a script needs, and small enough that a descriptor never overflows an int.
constexpr int max_fd = 255;

bool is_blank(char c) {
  // '\r' too, so that a script saved with CRLF line ends does not pass "\r" to its commands.
  return c == ' ' || c == '\t' || c == '\r';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_digit);
}

// Digits with an optional fraction: the number of "1.5 hours" or "3 times".
bool is_decimal(std::string_view text) {
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos) return all_digits(text);
  return all_digits(text.substr(0, dot)) && all_digits(text.substr(dot + 1));
}

// Characters that end an unquoted word: the shell operators, supported (redirections) or not.
bool is_operator(char c) {
  return c == ';' || c == '|' || c == '&' || c == '`' || c == '(' || c == ')' || c == '<' ||
         c == '>';
}

void append_literal(word& w, std::string_view text, bool quoted) {
  if (!w.parts.empty() && !w.parts.back().variable && w.parts.back().quoted == quoted) {
    w.parts.back().text += text;
    return;
  }
  word_part part;
  part.quoted = quoted;
  part.text = std::string(text);
  w.parts.push_back(std::move(part));
}

void append_variable(word& w, std::string_view name, bool quoted) {
  word_part part;
  part.variable = true;
  part.quoted = quoted;
  part.text = std::string(name);
  w.parts.push_back(std::move(part));
}

// The text of a word written without any quoting or variable: the only form a keyword, a loop
// variable or a try limit takes (as in sh, quoting a keyword makes it an ordinary word).
std::optional<std::string_view> plain_text(const word& w) {
  if (w.parts.size() != 1 || w.parts[0].variable || w.parts[0].quoted) return std::nullopt;
  return w.parts[0].text;
}

struct token {
  enum class type : std::uint8_t { word, redirect };
  type kind = type::word;
  int line = 0;
  std::string source;  // as written, for messages
  word value;          // for a word
  redirect redirection;

  std::optional<std::string_view> plain() const {
    if (kind != type::word) return std::nullopt;
    return plain_text(value);
  }
};

class error_sink {
 public:
  explicit error_sink(std::string_view file) : file_(escape_controls(file)) {}

  [[noreturn]] void fail(int line, const std::string& message) const {
    throw parse_error(file_ + ":" + std::to_string(line) + ": " + message);
  }

 private:
  std::string file_;
};

class lexer {
 public:
  lexer(std::string_view text, const error_sink& errors) : text_(text), errors_(errors) {}

  // The tokens of the next logical line (none for a blank or comment line); false at the end.
  bool next_line(std::vector<token>& tokens) {
    tokens.clear();
    if (at_end()) return false;
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        return true;
      }
      if (is_blank(c)) {
        ++pos_;
        continue;
      }
      if (skip_continuation()) continue;
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == '<' || c == '>') {
        tokens.push_back(read_redirect(pos_, line_, std::nullopt));
        continue;
      }
      if (is_operator(c)) reject_operator();
      tokens.push_back(read_word(/*fd_allowed=*/true));
    }
    return true;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  bool next_is(char c) const { return pos_ + 1 < text_.size() && text_[pos_ + 1] == c; }

  bool skip_continuation() {
    if (text_[pos_] != '\\' || !next_is('\n')) return false;
    pos_ += 2;
    ++line_;
    return true;
  }

  [[noreturn]] void reject_operator() const {
    switch (text_[pos_]) {
      case ';':
        errors_.fail(line_, "';' is not supported: put each command on its own line");
      case '|':
        if (next_is('|')) {
          errors_.fail(line_,
                       "'||' is not supported: use try ... catch ... end to act on a failure");
        }
        errors_.fail(line_,
                     "pipes are not supported (ftsh runs each stage under its own retry policy): "
                     "write the output to a file and read that file in the next command");
      case '&':
        if (next_is('&')) {
          errors_.fail(line_,
                       "'&&' is not supported: put each command on its own line (a failure "
                       "already stops the rest of the group)");
        }
        if (next_is('>')) errors_.fail(line_, "'&>' is not supported: write '> FILE 2>&1'");
        errors_.fail(line_,
                     "'&' (running in the background) is not supported: use forall to run "
                     "commands at the same time");
      case '`':
        reject_backquote();
      default:
        errors_.fail(line_, "'" + std::string(1, text_[pos_]) +
                                "' is not supported (ftsh has no subshells): quote it to pass "
                                "it as text");
    }
  }

  [[noreturn]] void reject_backquote() const {
    errors_.fail(line_, "command substitution with '`' is not supported");
  }

  // A word, up to a blank, a newline or an operator. When fd_allowed and the word so far is bare
  // digits touching '<' or '>', as in "2>err", they are that redirection's descriptor instead.
  token read_word(bool fd_allowed) {
    token result;
    result.line = line_;
    const std::size_t start = pos_;
    word& w = result.value;
    while (!at_end()) {
      const char c = text_[pos_];
      if (is_blank(c) || c == '\n') break;
      if (c == '\\') {
        if (skip_continuation()) continue;
        // A backslash quotes the next character; a last one in the file has none and stays.
        if (pos_ + 1 < text_.size()) {
          append_literal(w, text_.substr(pos_ + 1, 1), true);
          pos_ += 2;
        } else {
          append_literal(w, "\\", true);
          ++pos_;
        }
        continue;
      }
      if (c == '\'') {
        read_single_quoted(w);
        continue;
      }
      if (c == '"') {
        read_double_quoted(w);
        continue;
      }
      if (c == '$') {
        read_dollar(w, /*quoted=*/false);
        continue;
      }
      if (c == '<' || c == '>') {
        const auto digits = plain_text(w);
        if (fd_allowed && digits && all_digits(*digits)) {
          return read_redirect(start, result.line, std::string(*digits));
        }
        break;
      }
      if (is_operator(c)) break;
      append_literal(w, text_.substr(pos_, 1), false);
      ++pos_;
    }
    result.source = std::string(text_.substr(start, pos_ - start));
    return result;
  }

  void read_single_quoted(word& w) {
    const std::size_t close = text_.find('\'', pos_ + 1);
    if (close == std::string_view::npos) {
      errors_.fail(line_, "a single quote (') opened here is never closed");
    }
    const std::string_view content = text_.substr(pos_ + 1, close - pos_ - 1);
    line_ += static_cast<int>(std::count(content.begin(), content.end(), '\n'));
    append_literal(w, content, true);
    pos_ = close + 1;
  }

  void read_double_quoted(word& w) {
    const int opened = line_;
    ++pos_;
    bool emitted = false;
    for (;;) {
      if (at_end()) errors_.fail(opened, "a double quote (\") opened here is never closed");
      const char c = text_[pos_];
      if (c == '"') break;
      if (c == '\\' && skip_continuation()) continue;
      emitted = true;
      if (c == '\\' && pos_ + 1 < text_.size()) {
        const char next = text_[pos_ + 1];
        // '`' as well as the three the language names, so a backquote can be written in "...".
        if (next == '"' || next == '\\' || next == '$' || next == '`') {
          append_literal(w, text_.substr(pos_ + 1, 1), true);
          pos_ += 2;
          continue;
        }
      }
      if (c == '$') {
        read_dollar(w, /*quoted=*/true);
        continue;
      }
      // sh would run it; passing it on as text would surprise whoever wrote it.
      if (c == '`') reject_backquote();
      if (c == '\n') ++line_;
      append_literal(w, text_.substr(pos_, 1), true);
      ++pos_;
    }
    ++pos_;
    // Keeps `""` as an argument, and `""try` from reading as the keyword.
    if (!emitted) append_literal(w, "", true);
  }

  void read_dollar(word& w, bool quoted) {
    const std::size_t after = pos_ + 1;
    if (next_is('{')) {
      std::size_t close = after + 1;
      while (close < text_.size() && text_[close] != '}' && text_[close] != '\n') ++close;
      if (close >= text_.size() || text_[close] != '}') {
        errors_.fail(line_, "'${' without a closing '}'");
      }
      const std::string_view name = text_.substr(after + 1, close - after - 1);
      if (!is_variable_name(name)) {
        errors_.fail(line_, "bad variable reference " +
                                quote_for_message(text_.substr(pos_, close + 1 - pos_)) +
                                ": write ${NAME}, NAME made of letters, digits and '_'");
      }
      append_variable(w, name, quoted);
      pos_ = close + 1;
      return;
    }
    if (next_is('(')) errors_.fail(line_, "command substitution with '$(' is not supported");
    if (after < text_.size() && is_name_start(text_[after])) {
      std::size_t end = after;
      while (end < text_.size() && is_name_char(text_[end])) ++end;
      append_variable(w, text_.substr(after, end - after), quoted);
      pos_ = end;
      return;
    }
    append_literal(w, "$", quoted);
    ++pos_;
  }

  int read_fd(std::string_view digits, int line) const {
    if (digits.size() > 3 || std::stoi(std::string(digits)) > max_fd) {
      errors_.fail(line, "file descriptor " + quote_for_message(digits) +
                             " is too large (at most " + std::to_string(max_fd) + ")");
    }
    return std::stoi(std::string(digits));
  }

  // At '<' or '>'; `start` and `line` are where the redirection began, at its descriptor if any.
  token read_redirect(std::size_t start, int line, std::optional<std::string> fd_digits) {
    token result;
    result.kind = token::type::redirect;
    result.line = line;
    redirect& r = result.redirection;
    const char first = text_[pos_];
    if (first == '<') {
      if (next_is('<')) {
        errors_.fail(line_,
                     "here-documents ('<<') are not supported: redirect from a file with '<'");
      }
      if (next_is('>')) errors_.fail(line_, "'<>' (read and write) is not supported");
      r.how = next_is('&') ? redirect::kind::duplicate : redirect::kind::read;
      r.fd = 0;
    } else {
      if (next_is('|')) errors_.fail(line_, "'>|' is not supported: '>' already overwrites");
      r.how = next_is('>')   ? redirect::kind::append
              : next_is('&') ? redirect::kind::duplicate
                             : redirect::kind::write;
      r.fd = 1;
    }
    pos_ += (r.how == redirect::kind::read || r.how == redirect::kind::write) ? 1 : 2;
    if (fd_digits) r.fd = read_fd(*fd_digits, line);
    const std::string op(text_.substr(start, pos_ - start));

    while (!at_end()) {
      if (is_blank(text_[pos_])) {
        ++pos_;
      } else if (!skip_continuation()) {
        break;
      }
    }
    const bool duplicate = r.how == redirect::kind::duplicate;
    if (at_end() || text_[pos_] == '\n' || text_[pos_] == '#' || is_operator(text_[pos_])) {
      errors_.fail(line_, duplicate ? "'" + escape_controls(op) +
                                          "' needs a file descriptor number after it, as in 2>&1"
                                    : "redirection '" + escape_controls(op) +
                                          "' needs a file name after it");
    }
    token target = read_word(/*fd_allowed=*/false);
    if (duplicate) {
      const auto digits = plain_text(target.value);
      if (!digits || !all_digits(*digits)) {
        errors_.fail(target.line, "'" + escape_controls(op) +
                                      "' needs a file descriptor number, as in 2>&1, not " +
                                      quote_for_message(target.source));
      }
      r.other_fd = read_fd(*digits, target.line);
    } else {
      r.target = std::move(target.value);
    }
    result.source = std::string(text_.substr(start, pos_ - start));
    return result;
  }

  std::string_view text_;
  const error_sink& errors_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

struct split_name_value {
  std::string name;
  word value;
};

// `NAME=value` written with NAME unquoted, as sh recognises an assignment.
std::optional<split_name_value> as_assignment(const word& w) {
  if (w.parts.empty() || w.parts[0].variable || w.parts[0].quoted) return std::nullopt;
  const std::string& head = w.parts[0].text;
  const std::size_t eq = head.find('=');
  if (eq == std::string::npos || !is_variable_name(std::string_view(head).substr(0, eq))) {
    return std::nullopt;
  }
  split_name_value result;
  result.name = head.substr(0, eq);
  if (eq + 1 < head.size()) append_literal(result.value, head.substr(eq + 1), false);
  result.value.parts.insert(result.value.parts.end(), w.parts.begin() + 1, w.parts.end());
  return result;
}

class parser {
 public:
  parser(std::string_view text, std::string_view file) : errors_(file), lexer_(text, errors_) {
    result_.file = std::string(file);
  }

  script run() {
    std::vector<token> tokens;
    while (lexer_.next_line(tokens)) {
      if (!tokens.empty()) take_statement(tokens);
    }
    if (!open_.empty()) {
      const open_block& innermost = open_.back();
      errors_.fail(innermost.line, "'" + std::string(innermost.keyword) +
                                       "' opened here is never closed with 'end'");
    }
    return std::move(result_);
  }

 private:
  // A try or loop whose 'end' has not been read yet.
  struct open_block {
    statement node;
    std::string_view keyword;
    int line = 0;
    int catch_line = 0;
  };

  block& current_block() {
    if (open_.empty()) return result_.body;
    statement& top = open_.back().node;
    if (auto* t = std::get_if<try_block>(&top.node)) return t->handler ? *t->handler : t->body;
    return std::get<loop>(top.node).body;
  }

  void take_statement(std::vector<token>& tokens) {
    if (const auto keyword = tokens.front().plain()) {
      if (*keyword == "try") return open_try(tokens);
      if (*keyword == "for") return open_loop(tokens, loop::kind::each, "for");
      if (*keyword == "forany") return open_loop(tokens, loop::kind::any, "forany");
      if (*keyword == "forall") return open_loop(tokens, loop::kind::all, "forall");
      if (*keyword == "catch") return take_catch(tokens);
      if (*keyword == "end") return close_block(tokens);
      if (*keyword == "success") return take_builtin(tokens, true, "success");
      if (*keyword == "failure") return take_builtin(tokens, false, "failure");
    }
    take_command(tokens);
  }

  void reject_redirects(const std::vector<token>& tokens, std::string_view keyword) const {
    for (const token& t : tokens) {
      if (t.kind == token::type::redirect) {
        errors_.fail(t.line, "redirections belong on commands, not on a '" + std::string(keyword) +
                                 "' line");
      }
    }
  }

  void reject_arguments(const std::vector<token>& tokens, std::string_view keyword) const {
    reject_redirects(tokens, keyword);
    if (tokens.size() > 1) {
      errors_.fail(tokens[1].line, "unexpected " + quote_for_message(tokens[1].source) +
                                       " after '" + std::string(keyword) + "'");
    }
  }

  void take_command(std::vector<token>& tokens) {
    const int line = tokens.front().line;
    command cmd;
    cmd.line = line;
    for (token& t : tokens) {
      if (t.kind == token::type::word) {
        cmd.argv.push_back(std::move(t.value));
      } else {
        cmd.redirects.push_back(std::move(t.redirection));
      }
    }
    if (cmd.argv.empty()) errors_.fail(line, "a redirection needs a command to apply to");
    if (auto split = as_assignment(cmd.argv.front())) {
      if (cmd.argv.size() > 1) {
        errors_.fail(line, "NAME=value before a command is not supported; assign on its own line");
      }
      if (!cmd.redirects.empty()) errors_.fail(line, "an assignment takes no redirection");
      assignment a;
      a.name = std::move(split->name);
      a.value = std::move(split->value);
      a.line = line;
      statement st;
      st.node = std::move(a);
      current_block().push_back(std::move(st));
      return;
    }
    statement st;
    st.node = std::move(cmd);
    current_block().push_back(std::move(st));
  }

  void take_builtin(const std::vector<token>& tokens, bool succeed, std::string_view keyword) {
    reject_arguments(tokens, keyword);
    builtin b;
    b.succeed = succeed;
    b.line = tokens.front().line;
    statement st;
    st.node = b;
    current_block().push_back(std::move(st));
  }

  void push_block(statement node, std::string_view keyword, int line) {
    if (open_.size() >= max_nesting) {
      errors_.fail(line, "blocks are nested more than " + std::to_string(max_nesting) + " deep");
    }
    open_block opened;
    opened.node = std::move(node);
    opened.keyword = keyword;
    opened.line = line;
    open_.push_back(std::move(opened));
  }

  void open_loop(const std::vector<token>& tokens, loop::kind how, std::string_view keyword) {
    reject_redirects(tokens, keyword);
    const int line = tokens.front().line;
    const std::string kw(keyword);
    if (tokens.size() < 2) {
      errors_.fail(line, "'" + kw + "' needs a variable and items: " + kw + " NAME in ITEM...");
    }
    const auto name = tokens[1].plain();
    if (!name || !is_variable_name(*name)) {
      errors_.fail(tokens[1].line, "bad loop variable " + quote_for_message(tokens[1].source) +
                                       ": a name is letters, digits and '_', not starting with a "
                                       "digit");
    }
    if (tokens.size() < 3 || tokens[2].plain() != "in") {
      const int at = tokens.size() < 3 ? line : tokens[2].line;
      errors_.fail(at, "expected 'in' after '" + kw + " " + std::string(*name) + "'");
    }
    if (tokens.size() < 4) errors_.fail(line, "'" + kw + "' has no items to loop over");
    loop l;
    l.how = how;
    l.variable = std::string(*name);
    l.line = line;
    for (std::size_t i = 3; i < tokens.size(); ++i) l.items.push_back(tokens[i].value);
    statement st;
    st.node = std::move(l);
    push_block(std::move(st), keyword, line);
  }

  void open_try(const std::vector<token>& tokens) {
    reject_redirects(tokens, "try");
    try_block t;
    t.line = tokens.front().line;
    read_try_limits(tokens, t);
    statement st;
    st.node = std::move(t);
    push_block(std::move(st), "try", tokens.front().line);
  }

  void take_catch(const std::vector<token>& tokens) {
    reject_arguments(tokens, "catch");
    const int line = tokens.front().line;
    if (open_.empty()) errors_.fail(line, "'catch' without an open 'try'");
    open_block& top = open_.back();
    auto* t = std::get_if<try_block>(&top.node.node);
    if (t == nullptr) {
      errors_.fail(line, "'catch' inside '" + std::string(top.keyword) + "' (opened on line " +
                             std::to_string(top.line) + "): catch belongs to a try");
    }
    if (t->handler) {
      errors_.fail(line,
                   "a second 'catch' in the 'try' opened on line " + std::to_string(top.line));
    }
    if (t->body.empty()) errors_.fail(top.line, "empty 'try' block");
    t->handler.emplace();
    top.catch_line = line;
  }

  void close_block(const std::vector<token>& tokens) {
    reject_arguments(tokens, "end");
    if (open_.empty()) {
      errors_.fail(tokens.front().line, "'end' without an open block (try, for, forany or forall)");
    }
    open_block& top = open_.back();
    if (const auto* t = std::get_if<try_block>(&top.node.node)) {
      if (t->body.empty()) errors_.fail(top.line, "empty 'try' block");
      if (t->handler && t->handler->empty()) errors_.fail(top.catch_line, "empty 'catch' block");
    } else if (std::get<loop>(top.node.node).body.empty()) {
      errors_.fail(top.line, "empty '" + std::string(top.keyword) + "' block");
    }
    statement closed = std::move(top.node);
    open_.pop_back();
    current_block().push_back(std::move(closed));
  }

  // `[for] [LIMIT ([or] LIMIT)...] [every DURATION]`, LIMIT being `N time(s)` or a duration.
  void read_try_limits(const std::vector<token>& tokens, try_block& t) const {
    std::size_t i = 1;
    const std::size_t n = tokens.size();
    auto text = [&](std::size_t k) -> std::string_view {
      const auto plain = tokens[k].plain();
      if (!plain) unexpected(tokens[k]);
      return *plain;
    };
    std::string within_source;
    std::string times_source;
    bool need_limit = false;  // after `for` or `or`
    bool after_limit = false;
    if (i < n && text(i) == "for") {
      ++i;
      need_limit = true;
    }
    while (i < n && text(i) != "every") {
      if (text(i) == "or") {
        if (!after_limit) errors_.fail(tokens[i].line, "'or' must come between two try limits");
        ++i;
        need_limit = true;
        after_limit = false;
        continue;
      }
      const std::size_t first = i;
      const std::string_view number = text(i);
      const std::string_view next = i + 1 < n ? tokens[i + 1].plain().value_or("") : "";
      if (is_decimal(number) && (next == "times" || next == "time")) {
        if (t.times) {
          errors_.fail(tokens[i].line,
                       "two attempt counts in one try: " + quote_for_message(times_source) +
                           " and " + quote_for_message(joined(tokens, i, i + 2)));
        }
        t.times = read_count(tokens[i]);
        times_source = joined(tokens, i, i + 2);
        i += 2;
      } else {
        const duration d = read_duration(tokens, i, /*after_every=*/false);
        const std::string source = joined(tokens, first, i);
        if (t.within) {
          errors_.fail(tokens[first].line,
                       "two time limits in one try: " + quote_for_message(within_source) + " and " +
                           quote_for_message(source));
        }
        if (d == duration::zero()) {
          errors_.fail(tokens[first].line,
                       "a time limit of " + quote_for_message(source) + " leaves no time to try");
        }
        t.within = d;
        within_source = source;
      }
      need_limit = false;
      after_limit = true;
    }
    if (need_limit) {
      const int line = i < n ? tokens[i].line : tokens.back().line;
      errors_.fail(line, "expected a try limit (as in '3 times' or '1 hour') after '" +
                             std::string(text(i - 1)) + "'");
    }
    if (i == n) return;
    ++i;  // every
    if (i == n) {
      errors_.fail(tokens[i - 1].line, "'every' needs a duration, as in 'every 30 seconds'");
    }
    t.every = read_duration(tokens, i, /*after_every=*/true);
    if (i < n) {
      if (text(i) == "every") errors_.fail(tokens[i].line, "'every' given twice");
      unexpected(tokens[i]);
    }
  }

  // One token ("90s", "1h30m") or two ("1.5 hours"); advances `i` past it.
  duration read_duration(const std::vector<token>& tokens, std::size_t& i, bool after_every) const {
    const token& first = tokens[i];
    if (!first.plain()) unexpected(first);
    const std::string_view number = *first.plain();
    if (i + 1 < tokens.size()) {
      if (const auto unit = tokens[i + 1].plain()) {
        try {
          if (const auto d = unit_duration(number, *unit)) {
            i += 2;
            return *d;
          }
        } catch (const parse_error& e) {
          errors_.fail(first.line, e.what());
        }
      }
    }
    if (is_decimal(number) && number != "0") {
      // "5 parsecs": the word after the number is meant as its unit, and is not one we know.
      if (i + 1 < tokens.size()) {
        if (const auto word = tokens[i + 1].plain();
            word && !word->empty() && std::isalpha(static_cast<unsigned char>(word->front())) &&
            *word != "every" && *word != "or" && *word != "times" && *word != "time") {
          errors_.fail(first.line,
                       "unknown unit " + quote_for_message(*word) + " in " +
                           quote_for_message(std::string(number) + " " + std::string(*word)) +
                           " (units: seconds, minutes, hours, days)");
        }
      }
      errors_.fail(
          first.line,
          quote_for_message(number) + " needs a unit, as in '" + std::string(number) +
              (after_every ? " seconds'" : " times' or '" + std::string(number) + " seconds'"));
    }
    if (number.empty() || !(is_digit(number.front()) || number.front() == '.')) unexpected(first);
    try {
      const duration d = parse_duration(number);
      ++i;
      return d;
    } catch (const parse_error& e) {
      errors_.fail(first.line, e.what());
    }
  }

  std::uint32_t read_count(const token& number) const {
    const std::string_view digits = *number.plain();
    const bool whole = all_digits(digits);
    if (!whole || digits.find_first_not_of('0') == std::string_view::npos) {
      errors_.fail(number.line,
                   "the number of attempts must be a whole number of at least 1, not " +
                       quote_for_message(digits));
    }
    const std::string_view significant = digits.substr(digits.find_first_not_of('0'));
    if (significant.size() > 10 ||
        std::stoull(std::string(significant)) > std::numeric_limits<std::uint32_t>::max()) {
      errors_.fail(number.line, "too many attempts: " + quote_for_message(digits) + " (at most " +
                                    std::to_string(std::numeric_limits<std::uint32_t>::max()) +
                                    ")");
    }
    return static_cast<std::uint32_t>(std::stoull(std::string(significant)));
  }

  [[noreturn]] void unexpected(const token& t) const {
    errors_.fail(t.line, "unexpected " + quote_for_message(t.source) + " in try limits");
  }

  static std::string joined(const std::vector<token>& tokens, std::size_t from, std::size_t to) {
    std::string out;
    for (std::size_t k = from; k < to; ++k) {
      if (!out.empty()) out += ' ';
      out += tokens[k].source;
    }
    return out;
  }

  error_sink errors_;
  lexer lexer_;
  script result_;
  std::vector<open_block> open_;
};

}  // namespace

bool is_variable_name(std::string_view text) {
  return !text.empty() && is_name_start(text.front()) &&
         std::all_of(text.begin() + 1, text.end(), is_name_char);
}

std::optional<duration> unit_duration(std::string_view number, std::string_view unit) {
  static constexpr std::pair<std::string_view, std::string_view> units[] = {
      {"second", "s"}, {"seconds", "s"}, {"minute", "m"}, {"minutes", "m"},
      {"hour", "h"},   {"hours", "h"},   {"day", "d"},    {"days", "d"},
  };
  if (!is_decimal(number)) return std::nullopt;
  for (const auto& [name, suffix] : units) {
    // parse_duration does the arithmetic so "1.1 hours" is as exact as "1.1h".
    if (name == unit) return parse_duration(std::string(number) + std::string(suffix));
  }
  return std::nullopt;
}

script parse(std::string_view text, std::string_view file) {
  return parser(text, file).run();
}

}  // namespace backoff::tool::script
