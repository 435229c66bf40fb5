// SPDX-License-Identifier: Apache-2.0
// The ftsh parser (script/parser.hpp): every construct of the language, the words quoting and
// expansion produce, line numbers across continuations, and one clear "file:line: message" per
// kind of mistake, including input no person would write (the parser is fuzzed).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backoff/error.hpp"
#include "tool/script/parser.hpp"

namespace {

using namespace std::chrono_literals;
// Using-declarations rather than a using-directive: in a unity build the other tool tests' `using
// namespace backoff::tool` would make the namespace `script` and the struct `script` ambiguous.
using backoff::tool::script::assignment;
using backoff::tool::script::block;
using backoff::tool::script::builtin;
using backoff::tool::script::command;
using backoff::tool::script::is_variable_name;
using backoff::tool::script::loop;
using backoff::tool::script::parse;
using backoff::tool::script::redirect;
using backoff::tool::script::script;
using backoff::tool::script::statement;
using backoff::tool::script::try_block;
using backoff::tool::script::unit_duration;
using backoff::tool::script::word;
using backoff::tool::script::word_part;

constexpr std::string_view file_name = "t.ftsh";

script parse_ok(std::string_view text) {
  return parse(text, file_name);
}

// The message of the parse_error, or "(parsed)" when there was none.
std::string error_of(std::string_view text) {
  try {
    parse(text, file_name);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "(parsed)";
}

word_part literal(std::string text, bool quoted = false) {
  word_part part;
  part.quoted = quoted;
  part.text = std::move(text);
  return part;
}

word_part quoted(std::string text) {
  return literal(std::move(text), true);
}

word_part variable(std::string name, bool is_quoted = false) {
  word_part part;
  part.variable = true;
  part.quoted = is_quoted;
  part.text = std::move(name);
  return part;
}

word make_word(std::vector<word_part> parts) {
  word w;
  w.parts = std::move(parts);
  return w;
}

word plain(std::string text) {
  return make_word({literal(std::move(text))});
}

std::vector<word> plain_words(const std::vector<std::string>& texts) {
  std::vector<word> out;
  for (const std::string& t : texts) out.push_back(plain(t));
  return out;
}

// By value: callers often pass a temporary script.
template <typename Node>
Node only(const script& s) {
  EXPECT_EQ(s.body.size(), 1u);
  return std::get<Node>(s.body.at(0).node);
}

template <typename Node>
const Node& at(const block& b, std::size_t i) {
  return std::get<Node>(b.at(i).node);
}

TEST(ScriptParser, EmptyAndCommentOnlyScriptsHaveNoStatements) {
  EXPECT_TRUE(parse_ok("").body.empty());
  EXPECT_TRUE(parse_ok("\n\n  \t\n# just a comment\n   # another\n").body.empty());
}

TEST(ScriptParser, KeepsTheFileNameForMessages) {
  EXPECT_EQ(parse("echo hi\n", "dir/job.ftsh").file, "dir/job.ftsh");
}

TEST(ScriptParser, SplitsACommandIntoWordsAtBlanks) {
  const script s = parse_ok("curl  -fsS\t-o out.tgz\n");
  const command& c = only<command>(s);
  EXPECT_EQ(c.argv, plain_words({"curl", "-fsS", "-o", "out.tgz"}));
  EXPECT_TRUE(c.redirects.empty());
  EXPECT_EQ(c.line, 1);
}

TEST(ScriptParser, LastLineNeedsNoNewline) {
  const script s = parse_ok("echo a\necho b");
  ASSERT_EQ(s.body.size(), 2u);
  EXPECT_EQ(at<command>(s.body, 1).argv, plain_words({"echo", "b"}));
  EXPECT_EQ(at<command>(s.body, 1).line, 2);
}

struct word_case {
  std::string source;  // one word, given to `echo`
  word expected;
};

TEST(ScriptParser, ResolvesQuotingAndVariablesIntoParts) {
  const std::vector<word_case> cases = {
      {R"("a b"c${x})", make_word({quoted("a b"), literal("c"), variable("x")})},
      {R"('$x "y" \n')", make_word({quoted(R"($x "y" \n)")})},
      {R"("\"\\\$x \n\a")", make_word({quoted(R"("\$x \n\a)")})},
      {R"("${host}/pkg")", make_word({variable("host", true), quoted("/pkg")})},
      {R"("$x")", make_word({variable("x", true)})},
      {R"(pre"$x"post)", make_word({literal("pre"), variable("x", true), literal("post")})},
      {"$x.txt", make_word({variable("x"), literal(".txt")})},
      {"$x_1y-z", make_word({variable("x_1y"), literal("-z")})},
      {"${a}${b}", make_word({variable("a"), variable("b")})},
      {R"(a\ b)", make_word({literal("a"), quoted(" "), literal("b")})},
      {R"(\$x)", make_word({quoted("$"), literal("x")})},
      {R"("a"'b')", make_word({quoted("ab")})},
      {R"("")", make_word({quoted("")})},
      {"''", make_word({quoted("")})},
      {R"(""'')", make_word({quoted("")})},
      {"$", plain("$")},
      {"$1$?", plain("$1$?")},
      {"a$", plain("a$")},
      {R"("cost: $")", make_word({quoted("cost: $")})},
      {"a#b", plain("a#b")},
      {"x=1", plain("x=1")},
      {"~/*.tgz", plain("~/*.tgz")},
      {R"("a\`b")", make_word({quoted("a`b")})},
  };
  for (const word_case& c : cases) {
    SCOPED_TRACE(c.source);
    const script s = parse_ok("echo " + c.source + "\n");
    const command& cmd = only<command>(s);
    ASSERT_EQ(cmd.argv.size(), 2u);
    EXPECT_EQ(cmd.argv[1], c.expected);
  }
}

TEST(ScriptParser, EmptyQuotedWordsStayArguments) {
  const command& c = only<command>(parse_ok(R"(printf "" '' x)"));
  ASSERT_EQ(c.argv.size(), 4u);
  EXPECT_EQ(c.argv[1], make_word({quoted("")}));
  EXPECT_EQ(c.argv[2], make_word({quoted("")}));
}

TEST(ScriptParser, CommentsEndTheLineOnlyAtTheStartOfAWord) {
  const script s = parse_ok("echo a # the rest is ignored\necho '#' \"#\" b#c #d\n");
  ASSERT_EQ(s.body.size(), 2u);
  EXPECT_EQ(at<command>(s.body, 0).argv, plain_words({"echo", "a"}));
  EXPECT_EQ(at<command>(s.body, 1).argv,
            (std::vector<word>{plain("echo"), make_word({quoted("#")}), make_word({quoted("#")}),
                               plain("b#c")}));
}

TEST(ScriptParser, LineNumbersCountBlankCommentAndContinuationLines) {
  const script s = parse_ok(
      "# header\n"          // 1
      "\n"                  // 2
      "echo a \\\n"         // 3
      "  b \\\n"            // 4
      "  c\n"               // 5
      "echo d\n"            // 6
      "echo 'multi\n"       // 7
      "line'\n"             // 8
      "\\\n"                // 9: a continuation before the first word
      "echo e\"x\\\ny\"\n"  // 10, 11: continued inside double quotes
      "echo f\n");          // 12
  ASSERT_EQ(s.body.size(), 5u);
  EXPECT_EQ(at<command>(s.body, 0).line, 3);
  EXPECT_EQ(at<command>(s.body, 0).argv, plain_words({"echo", "a", "b", "c"}));
  EXPECT_EQ(at<command>(s.body, 1).line, 6);
  EXPECT_EQ(at<command>(s.body, 2).line, 7);
  EXPECT_EQ(at<command>(s.body, 2).argv[1], make_word({quoted("multi\nline")}));
  EXPECT_EQ(at<command>(s.body, 3).line, 10);
  EXPECT_EQ(at<command>(s.body, 3).argv[1], make_word({literal("e"), quoted("xy")}));
  EXPECT_EQ(at<command>(s.body, 4).line, 12);
}

TEST(ScriptParser, ContinuationJoinsTheHalvesOfAWord) {
  EXPECT_EQ(only<command>(parse_ok("ec\\\nho hi\n")).argv, plain_words({"echo", "hi"}));
}

TEST(ScriptParser, AcceptsCarriageReturnLineEnds) {
  const script s = parse_ok("try 2 times\r\n  echo hi\r\nend\r\n");
  const try_block& t = only<try_block>(s);
  EXPECT_EQ(t.times, 2u);
  EXPECT_EQ(at<command>(t.body, 0).argv, plain_words({"echo", "hi"}));
}

struct redirect_case {
  std::string source;
  redirect::kind how;
  int fd;
  std::optional<word> target;
  int other_fd;
};

TEST(ScriptParser, ReadsEachFormOfRedirection) {
  using k = redirect::kind;
  const std::vector<redirect_case> cases = {
      {"cat <in", k::read, 0, plain("in"), -1},
      {"cat < in", k::read, 0, plain("in"), -1},
      {"cat 0<in", k::read, 0, plain("in"), -1},
      {"echo >out.txt", k::write, 1, plain("out.txt"), -1},
      {"echo > out.txt", k::write, 1, plain("out.txt"), -1},
      {"echo >> log", k::append, 1, plain("log"), -1},
      {"cmd 2>err", k::write, 2, plain("err"), -1},
      {"cmd 2> err", k::write, 2, plain("err"), -1},
      {"cmd 2>>err", k::append, 2, plain("err"), -1},
      {"cmd 9<data", k::read, 9, plain("data"), -1},
      {"cmd 2>&1", k::duplicate, 2, std::nullopt, 1},
      {"cmd 2>& 1", k::duplicate, 2, std::nullopt, 1},
      {"cmd >&2", k::duplicate, 1, std::nullopt, 2},
      {"cmd 3<&0", k::duplicate, 3, std::nullopt, 0},
      {"cmd > \\\n out", k::write, 1, plain("out"), -1},
      {"cmd >\"$dir/o t\"", k::write, 1, make_word({variable("dir", true), quoted("/o t")}), -1},
  };
  for (const redirect_case& c : cases) {
    SCOPED_TRACE(c.source);
    const command& cmd = only<command>(parse_ok(c.source));
    ASSERT_EQ(cmd.argv.size(), 1u);
    ASSERT_EQ(cmd.redirects.size(), 1u);
    const redirect& r = cmd.redirects[0];
    EXPECT_EQ(r.how, c.how);
    EXPECT_EQ(r.fd, c.fd);
    EXPECT_EQ(r.target, c.target.value_or(word{}));
    EXPECT_EQ(r.other_fd, c.other_fd);
  }
}

TEST(ScriptParser, DigitsAreADescriptorOnlyWhenTheyTouchTheOperator) {
  const command& spaced = only<command>(parse_ok("echo 2 >x"));
  EXPECT_EQ(spaced.argv, plain_words({"echo", "2"}));
  EXPECT_EQ(spaced.redirects.at(0).fd, 1);

  const command& glued = only<command>(parse_ok("echo a2>x"));
  EXPECT_EQ(glued.argv, plain_words({"echo", "a2"}));
  EXPECT_EQ(glued.redirects.at(0).fd, 1);

  const command& quoted_digit = only<command>(parse_ok("echo '2'>x"));
  EXPECT_EQ(quoted_digit.argv.at(1), make_word({quoted("2")}));
  EXPECT_EQ(quoted_digit.redirects.at(0).fd, 1);
}

TEST(ScriptParser, KeepsSeveralRedirectionsInOrderWhereverTheyStand) {
  const command& c = only<command>(parse_ok(">out sort <in -r 2>&1"));
  EXPECT_EQ(c.argv, plain_words({"sort", "-r"}));
  ASSERT_EQ(c.redirects.size(), 3u);
  EXPECT_EQ(c.redirects[0].how, redirect::kind::write);
  EXPECT_EQ(c.redirects[1].how, redirect::kind::read);
  EXPECT_EQ(c.redirects[2].how, redirect::kind::duplicate);
}

TEST(ScriptParser, ReadsAssignments) {
  const script s = parse_ok("X=1\nURL=\"https://$host/a b\"/c\nEMPTY=\nEQ=a=b\n");
  ASSERT_EQ(s.body.size(), 4u);
  const assignment& x = at<assignment>(s.body, 0);
  EXPECT_EQ(x.name, "X");
  EXPECT_EQ(x.value, plain("1"));
  EXPECT_EQ(x.line, 1);
  const assignment& url = at<assignment>(s.body, 1);
  EXPECT_EQ(url.name, "URL");
  EXPECT_EQ(url.value,
            make_word({quoted("https://"), variable("host", true), quoted("/a b"), literal("/c")}));
  EXPECT_EQ(url.line, 2);
  EXPECT_TRUE(at<assignment>(s.body, 2).value.parts.empty());
  EXPECT_EQ(at<assignment>(s.body, 3).value, plain("a=b"));
}

TEST(ScriptParser, AQuotedOrInvalidNameIsACommandNotAnAssignment) {
  for (const std::string source : {"1X=2", "'X'=1", "X\"\"=1", "\\X=1", "=1", "a-b=1", "$X=1"}) {
    SCOPED_TRACE(source);
    const script s = parse_ok(source);
    ASSERT_EQ(s.body.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<command>(s.body[0].node));
  }
}

TEST(ScriptParser, QuotedKeywordsAreCommands) {
  const script s = parse_ok("'try' 5\n\"end\"\n\\catch\nfo\"r\" x in a\ntryhard 5 times\n");
  ASSERT_EQ(s.body.size(), 5u);
  for (const statement& st : s.body) EXPECT_TRUE(std::holds_alternative<command>(st.node));
  EXPECT_EQ(at<command>(s.body, 0).argv,
            (std::vector<word>{make_word({quoted("try")}), plain("5")}));
}

TEST(ScriptParser, KeywordsAfterTheFirstWordAreArguments) {
  const command& c = only<command>(parse_ok("echo try end catch for success"));
  EXPECT_EQ(c.argv, plain_words({"echo", "try", "end", "catch", "for", "success"}));
}

struct limits_case {
  std::string header;
  std::optional<std::uint32_t> times;
  std::optional<backoff::duration> within;
  std::optional<backoff::duration> every;
};

TEST(ScriptParser, ReadsEveryFormOfTryLimits) {
  const std::vector<limits_case> cases = {
      {"try", std::nullopt, std::nullopt, std::nullopt},
      {"try 5 times", 5u, std::nullopt, std::nullopt},
      {"try 1 time", 1u, std::nullopt, std::nullopt},
      {"try for 1 hour", std::nullopt, 1h, std::nullopt},
      {"try for 3 days or 100 times", 100u, 72h, std::nullopt},
      {"try 1 time 10 seconds", 1u, 10s, std::nullopt},
      {"try 10 seconds or 1 time every 10 seconds", 1u, 10s, 10s},
      {"try for 30s every 5s", std::nullopt, 30s, 5s},
      {"try for 1.5 hours", std::nullopt, 90min, std::nullopt},
      {"try for 1h30m", std::nullopt, 90min, std::nullopt},
      {"try 1.5m", std::nullopt, 90s, std::nullopt},
      {"try 2 minutes or 3 times", 3u, 2min, std::nullopt},
      {"try 1 second", std::nullopt, 1s, std::nullopt},
      {"try 1 day", std::nullopt, 24h, std::nullopt},
      {"try 1 minute every 0.5 seconds", std::nullopt, 1min, 500ms},
      {"try every 30 seconds", std::nullopt, std::nullopt, 30s},
      {"try every 0", std::nullopt, std::nullopt, 0s},
      {"try 007 times", 7u, std::nullopt, std::nullopt},
      {"try 4294967295 times", 4294967295u, std::nullopt, std::nullopt},
      {"try 5 times # a comment", 5u, std::nullopt, std::nullopt},
  };
  for (const limits_case& c : cases) {
    SCOPED_TRACE(c.header);
    const try_block& t = only<try_block>(parse_ok(c.header + "\n  true\nend\n"));
    EXPECT_EQ(t.times, c.times);
    EXPECT_EQ(t.within, c.within);
    EXPECT_EQ(t.every, c.every);
    EXPECT_FALSE(t.handler.has_value());
    EXPECT_EQ(t.line, 1);
  }
}

TEST(ScriptParser, ReadsTryWithCatch) {
  const script s = parse_ok(
      "try 3 times\n"
      "  fetch a\n"
      "  fetch b\n"
      "catch\n"
      "  echo failed\n"
      "  failure\n"
      "end\n"
      "echo after\n");
  ASSERT_EQ(s.body.size(), 2u);
  const try_block& t = at<try_block>(s.body, 0);
  ASSERT_EQ(t.body.size(), 2u);
  EXPECT_EQ(at<command>(t.body, 1).argv, plain_words({"fetch", "b"}));
  EXPECT_EQ(at<command>(t.body, 1).line, 3);
  ASSERT_TRUE(t.handler.has_value());
  ASSERT_EQ(t.handler->size(), 2u);
  EXPECT_EQ(at<command>(*t.handler, 0).line, 5);
  EXPECT_FALSE(at<builtin>(*t.handler, 1).succeed);
  EXPECT_EQ(at<builtin>(*t.handler, 1).line, 6);
  EXPECT_EQ(at<command>(s.body, 1).line, 8);
}

TEST(ScriptParser, ReadsEachKindOfLoop) {
  const script s = parse_ok(
      "for f in a 'b c' $rest\n"
      "  echo $f\n"
      "end\n"
      "forany host in m1 m2\n"
      "  ping $host\n"
      "end\n"
      "forall job in 1 2 3\n"
      "  run $job\n"
      "end\n");
  ASSERT_EQ(s.body.size(), 3u);
  const loop& each = at<loop>(s.body, 0);
  EXPECT_EQ(each.how, loop::kind::each);
  EXPECT_EQ(each.variable, "f");
  EXPECT_EQ(each.items, (std::vector<word>{plain("a"), make_word({quoted("b c")}),
                                           make_word({variable("rest")})}));
  EXPECT_EQ(each.line, 1);
  EXPECT_EQ(at<command>(each.body, 0).argv[1], make_word({variable("f")}));
  const loop& any = at<loop>(s.body, 1);
  EXPECT_EQ(any.how, loop::kind::any);
  EXPECT_EQ(any.variable, "host");
  EXPECT_EQ(any.line, 4);
  const loop& all = at<loop>(s.body, 2);
  EXPECT_EQ(all.how, loop::kind::all);
  EXPECT_EQ(all.items, plain_words({"1", "2", "3"}));
  EXPECT_EQ(all.line, 7);
}

TEST(ScriptParser, ReadsSuccessAndFailure) {
  const script s = parse_ok("success\n  failure  # on purpose\n");
  ASSERT_EQ(s.body.size(), 2u);
  EXPECT_TRUE(at<builtin>(s.body, 0).succeed);
  EXPECT_EQ(at<builtin>(s.body, 0).line, 1);
  EXPECT_FALSE(at<builtin>(s.body, 1).succeed);
  EXPECT_EQ(at<builtin>(s.body, 1).line, 2);
}

TEST(ScriptParser, ReadsTheManualsExample) {
  const script s = parse_ok(R"(# fetch a file from any mirror, retrying for up to an hour
try for 1 hour every 30 seconds
  forany host in mirror1 mirror2 "mirror 3"
    curl -fsS -o out.tgz "https://${host}/pkg.tgz"
  end
catch
  echo "no mirror answered" > /dev/stderr
  failure
end
)");
  const try_block& t = only<try_block>(s);
  EXPECT_EQ(t.line, 2);
  EXPECT_EQ(t.within, 1h);
  EXPECT_EQ(t.every, 30s);
  EXPECT_FALSE(t.times.has_value());
  const loop& l = at<loop>(t.body, 0);
  EXPECT_EQ(l.how, loop::kind::any);
  EXPECT_EQ(l.items.back(), make_word({quoted("mirror 3")}));
  const command& curl = at<command>(l.body, 0);
  EXPECT_EQ(curl.line, 4);
  EXPECT_EQ(curl.argv.back(),
            make_word({quoted("https://"), variable("host", true), quoted("/pkg.tgz")}));
  const command& echo = at<command>(*t.handler, 0);
  EXPECT_EQ(echo.redirects.at(0).target, plain("/dev/stderr"));
  EXPECT_FALSE(at<builtin>(*t.handler, 1).succeed);
}

TEST(ScriptParser, NestsBlocks) {
  const script s = parse_ok(
      "try 2 times\n"
      "  for x in a b\n"
      "    try for 5s\n"
      "      echo $x\n"
      "    catch\n"
      "      success\n"
      "    end\n"
      "  end\n"
      "end\n");
  const try_block& outer = only<try_block>(s);
  const loop& l = at<loop>(outer.body, 0);
  EXPECT_EQ(l.line, 2);
  const try_block& inner = at<try_block>(l.body, 0);
  EXPECT_EQ(inner.line, 3);
  EXPECT_EQ(inner.within, 5s);
  EXPECT_EQ(at<command>(inner.body, 0).line, 4);
  EXPECT_TRUE(at<builtin>(*inner.handler, 0).succeed);
}

TEST(ScriptParser, AcceptsNestingUpToTheLimit) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "try\n";
  text += "true\n";
  for (int i = 0; i < 100; ++i) text += "end\n";
  const script s = parse_ok(text);
  const block* b = &s.body;
  int depth = 0;
  while (const auto* t = std::get_if<try_block>(&b->at(0).node)) {
    ++depth;
    b = &t->body;
  }
  EXPECT_EQ(depth, 100);
}

TEST(ScriptParser, RejectsNestingBeyondTheLimitCleanly) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += i % 2 == 0 ? "try\n" : "for x in y\n";
  EXPECT_EQ(error_of(text), "t.ftsh:101: blocks are nested more than 100 deep");
}

TEST(ScriptParser, ErrorMessagesAreExact) {
  EXPECT_EQ(error_of("echo a; echo b"),
            "t.ftsh:1: ';' is not supported: put each command on its own line");
  EXPECT_EQ(error_of("echo a\nsort data | uniq\n"),
            "t.ftsh:2: pipes are not supported (ftsh runs each stage under its own retry "
            "policy): write the output to a file and read that file in the next command");
  EXPECT_EQ(error_of("echo ok\necho 'abc\n\n\n"),
            "t.ftsh:2: a single quote (') opened here is never closed");
  EXPECT_EQ(error_of("echo \"abc\n\n"),
            "t.ftsh:1: a double quote (\") opened here is never closed");
  EXPECT_EQ(error_of("echo\ntry 3 times\n  echo\n"),
            "t.ftsh:2: 'try' opened here is never closed with 'end'");
  EXPECT_EQ(error_of("try foo\n"), "t.ftsh:1: unexpected \"foo\" in try limits");
  EXPECT_EQ(error_of("X=1 make\n"),
            "t.ftsh:1: NAME=value before a command is not supported; assign on its own line");
  EXPECT_EQ(error_of("try\ncatch\n  echo\nend\n"), "t.ftsh:1: empty 'try' block");
}

TEST(ScriptParser, NamesTheFileWithControlCharactersEscaped) {
  try {
    parse("end\n", "a\nb.ftsh");
    FAIL() << "no error";
  } catch (const backoff::parse_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "a\\nb.ftsh:1: 'end' without an open block (try, for, forany or forall)");
  }
}

struct error_case {
  std::string source;
  int line;
  std::string message;  // what follows "t.ftsh:LINE: "
};

TEST(ScriptParser, ReportsEachErrorWithItsLine) {
  const std::vector<error_case> cases = {
      // Operators the language leaves out.
      {"a || b", 1, "'||' is not supported: use try ... catch ... end to act on a failure"},
      {"a && b", 1,
       "'&&' is not supported: put each command on its own line (a failure already stops the "
       "rest of the group)"},
      {"\nsleep 5 &", 2,
       "'&' (running in the background) is not supported: use forall to run commands at the "
       "same time"},
      {"cmd &> log", 1, "'&>' is not supported: write '> FILE 2>&1'"},
      {"echo `date`", 1, "command substitution with '`' is not supported"},
      {"echo \"`date`\"", 1, "command substitution with '`' is not supported"},
      {"echo $(date)", 1, "command substitution with '$(' is not supported"},
      {"echo \"$(date)\"", 1, "command substitution with '$(' is not supported"},
      {"cat <<EOF", 1, "here-documents ('<<') are not supported: redirect from a file with '<'"},
      {"(cd x)", 1, "'(' is not supported (ftsh has no subshells): quote it to pass it as text"},
      {"cmd <> f", 1, "'<>' (read and write) is not supported"},
      {"cmd >| f", 1, "'>|' is not supported: '>' already overwrites"},
      // Words.
      {"echo ${x", 1, "'${' without a closing '}'"},
      {"echo \"${x\"", 1, "'${' without a closing '}'"},
      {"echo ${1x}", 1,
       "bad variable reference \"${1x}\": write ${NAME}, NAME made of letters, digits and '_'"},
      {"echo ${x:-y}", 1,
       "bad variable reference \"${x:-y}\": write ${NAME}, NAME made of letters, digits and '_'"},
      {"echo ${}", 1,
       "bad variable reference \"${}\": write ${NAME}, NAME made of letters, digits and '_'"},
      {"echo a \\\n  'b\n", 2, "a single quote (') opened here is never closed"},
      // Redirections.
      {"echo >", 1, "redirection '>' needs a file name after it"},
      {"echo 2>> # log", 1, "redirection '2>>' needs a file name after it"},
      {"echo hi > \\\n\necho", 2, "redirection '>' needs a file name after it"},
      {"echo > ; x", 1, "redirection '>' needs a file name after it"},
      {"echo 2>&", 1, "'2>&' needs a file descriptor number after it, as in 2>&1"},
      {"echo >&err", 1, "'>&' needs a file descriptor number, as in 2>&1, not \"err\""},
      {"echo >&-", 1, "'>&' needs a file descriptor number, as in 2>&1, not \"-\""},
      {"echo 256>x", 1, "file descriptor \"256\" is too large (at most 255)"},
      {"echo 2>&99999999999999999999", 1,
       "file descriptor \"99999999999999999999\" is too large (at most 255)"},
      {"> out", 1, "a redirection needs a command to apply to"},
      // Assignments.
      {"\nA=1 B=2", 2, "NAME=value before a command is not supported; assign on its own line"},
      {"A=1 >f", 1, "an assignment takes no redirection"},
      // Blocks.
      {"echo\ncatch", 2, "'catch' without an open 'try'"},
      {"end", 1, "'end' without an open block (try, for, forany or forall)"},
      {"try\n echo\nend\nend", 4, "'end' without an open block (try, for, forany or forall)"},
      {"try\n a\ncatch\n b\ncatch\n c\nend", 5, "a second 'catch' in the 'try' opened on line 1"},
      {"try\n for x in y\n  a\n catch\n  b\n end\nend", 4,
       "'catch' inside 'for' (opened on line 2): catch belongs to a try"},
      {"forany x in y\n a\ncatch\nend", 3,
       "'catch' inside 'forany' (opened on line 1): catch belongs to a try"},
      {"\n\ntry\nend", 3, "empty 'try' block"},
      {"try\n a\ncatch\nend", 3, "empty 'catch' block"},
      {"forall x in y\nend", 1, "empty 'forall' block"},
      {"try\n for x in y\n  a\n", 2, "'for' opened here is never closed with 'end'"},
      {"end now", 1, "unexpected \"now\" after 'end'"},
      {"try\n a\ncatch it\nend", 3, "unexpected \"it\" after 'catch'"},
      {"success 0", 1, "unexpected \"0\" after 'success'"},
      {"failure >x", 1, "redirections belong on commands, not on a 'failure' line"},
      {"try 3 times > log\n a\nend", 1, "redirections belong on commands, not on a 'try' line"},
      // Loops.
      {"for", 1, "'for' needs a variable and items: for NAME in ITEM..."},
      {"forany 1x in a", 1,
       "bad loop variable \"1x\": a name is letters, digits and '_', not starting with a digit"},
      {"for \"x\" in a", 1,
       "bad loop variable \"\"x\"\": a name is letters, digits and '_', not starting with a "
       "digit"},
      {"for x of a b", 1, "expected 'in' after 'for x'"},
      {"forall x", 1, "expected 'in' after 'forall x'"},
      {"for x in", 1, "'for' has no items to loop over"},
      {"for x in a > f", 1, "redirections belong on commands, not on a 'for' line"},
      // Try limits.
      {"try 0 times", 1, "the number of attempts must be a whole number of at least 1, not \"0\""},
      {"try 1.5 times", 1,
       "the number of attempts must be a whole number of at least 1, not \"1.5\""},
      {"try 4294967296 times", 1, "too many attempts: \"4294967296\" (at most 4294967295)"},
      {"try 3 times or 4 times", 1, "two attempt counts in one try: \"3 times\" and \"4 times\""},
      {"try for 1 hour or 2h", 1, "two time limits in one try: \"1 hour\" and \"2h\""},
      {"try for 0 seconds", 1, "a time limit of \"0 seconds\" leaves no time to try"},
      {"try 0s", 1, "a time limit of \"0s\" leaves no time to try"},
      {"try 5 every", 1, "\"5\" needs a unit, as in '5 times' or '5 seconds'"},
      {"try 5 times every", 1, "'every' needs a duration, as in 'every 30 seconds'"},
      {"try every 5 times", 1, "\"5\" needs a unit, as in '5 seconds'"},
      {"try every 5s every 6s", 1, "'every' given twice"},
      {"try every 5s 3 times", 1, "unexpected \"3\" in try limits"},
      {"try for", 1, "expected a try limit (as in '3 times' or '1 hour') after 'for'"},
      {"try for every 5s", 1, "expected a try limit (as in '3 times' or '1 hour') after 'for'"},
      {"try 3 times or", 1, "expected a try limit (as in '3 times' or '1 hour') after 'or'"},
      {"try or 3 times", 1, "'or' must come between two try limits"},
      {"try 3 times for 1 hour", 1, "unexpected \"for\" in try limits"},
      {"try \"5\" times", 1, "unexpected \"\"5\"\" in try limits"},
      {"try $n times", 1, "unexpected \"$n\" in try limits"},
      {"try 10x", 1,
       "bad duration \"10x\": unknown unit \"x\" at position 3 (use ns, us, ms, s, m, h or d)"},
      {"try 3 \\\n  weeks", 1,
       "unknown unit \"weeks\" in \"3 weeks\" (units: seconds, minutes, hours, days)"},
      {"try 3\n  true\nend", 1, "\"3\" needs a unit, as in '3 times' or '3 seconds'"},
      {"try for 5 every 1s\n  true\nend", 1, "\"5\" needs a unit, as in '5 times' or '5 seconds'"},
      {"\ntry for 1 hour \\\n  or foo", 3, "unexpected \"foo\" in try limits"},
  };
  for (const error_case& c : cases) {
    SCOPED_TRACE(c.source);
    EXPECT_EQ(error_of(c.source), "t.ftsh:" + std::to_string(c.line) + ": " + c.message);
  }
}

TEST(ScriptParser, ReportsTheFirstErrorInTheFile) {
  // The unclosed quote on line 3 must not hide the ';' on line 2.
  EXPECT_EQ(error_of("echo\na; b\necho 'x\n"),
            "t.ftsh:2: ';' is not supported: put each command on its own line");
}

TEST(ScriptParser, TakesArbitraryBytesAsText) {
  constexpr char raw[] = "echo a\0b \xff\xfe\n";
  const std::string with_nul(raw, sizeof raw - 1);
  const command& c = only<command>(parse_ok(with_nul));
  EXPECT_EQ(c.argv.at(1), plain(std::string("a\0b", 3)));
  EXPECT_EQ(c.argv.at(2), plain("\xff\xfe"));

  const std::string long_word(1 << 20, 'x');
  EXPECT_EQ(only<command>(parse_ok("echo " + long_word)).argv.at(1), plain(long_word));
}

TEST(ScriptParser, NeverFailsOtherwiseThanWithOneLineOnRandomInput) {
  // A cheap, deterministic stand-in for the libFuzzer target: every outcome is a tree or a
  // one-line parse_error naming the file.
  constexpr char symbols[] = "tryforanyl\"'$\\{}<>&|;#` \n\n\n\r\t0123=_()\0\xff";
  std::string alphabet(symbols, sizeof symbols - 1);
  alphabet.append("every times hour or catch end success in ");
  std::uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<std::size_t>(state >> 33);
  };
  int parsed = 0;
  for (int run = 0; run < 3000; ++run) {
    std::string text;
    const std::size_t length = next() % 80;
    for (std::size_t i = 0; i < length; ++i) text += alphabet[next() % alphabet.size()];
    try {
      parse(text, file_name);
      ++parsed;
    } catch (const backoff::parse_error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("t.ftsh:", 0), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
  EXPECT_GT(parsed, 0);
}

TEST(UnitDuration, ConvertsANumberAndAUnitWord) {
  EXPECT_EQ(unit_duration("1", "second"), 1s);
  EXPECT_EQ(unit_duration("10", "seconds"), 10s);
  EXPECT_EQ(unit_duration("1", "minute"), 1min);
  EXPECT_EQ(unit_duration("1.5", "minutes"), 90s);
  EXPECT_EQ(unit_duration("1", "hour"), 1h);
  EXPECT_EQ(unit_duration("1.1", "hours").value().count(), 3'960'000'000'000);
  EXPECT_EQ(unit_duration("3", "days"), 72h);
  EXPECT_EQ(unit_duration("0", "days"), 0s);
}

TEST(UnitDuration, RejectsOtherFormsWithoutThrowing) {
  EXPECT_EQ(unit_duration("5", "weeks"), std::nullopt);
  EXPECT_EQ(unit_duration("5", "s"), std::nullopt);
  EXPECT_EQ(unit_duration("5", "Hours"), std::nullopt);
  EXPECT_EQ(unit_duration("-5", "hours"), std::nullopt);
  EXPECT_EQ(unit_duration("5s", "hours"), std::nullopt);
  EXPECT_EQ(unit_duration("1.", "hours"), std::nullopt);
  EXPECT_EQ(unit_duration("", "hours"), std::nullopt);
}

TEST(UnitDuration, ThrowsForValuesNoDurationHolds) {
  EXPECT_THROW(unit_duration("1000000", "days"), backoff::parse_error);
}

TEST(IsVariableName, FollowsTheShellsRule) {
  EXPECT_TRUE(is_variable_name("x"));
  EXPECT_TRUE(is_variable_name("_"));
  EXPECT_TRUE(is_variable_name("host_2"));
  EXPECT_TRUE(is_variable_name("PATH"));
  EXPECT_FALSE(is_variable_name(""));
  EXPECT_FALSE(is_variable_name("2x"));
  EXPECT_FALSE(is_variable_name("a-b"));
  EXPECT_FALSE(is_variable_name("a.b"));
}

}  // namespace
