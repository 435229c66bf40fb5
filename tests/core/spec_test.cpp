// SPDX-License-Identifier: Apache-2.0
// Policies as text (spec.hpp): the SPEC examples, every preset name, canonical to_string()
// round trips, the shared call tokenizer, and a table of bad specs, each of which must fail with
// one line that names the bad part.
#include "backoff/spec.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <source_location>
#include <string>
#include <string_view>

#include "backoff/aimd_window.hpp"
#include "backoff/duration.hpp"
#include "backoff/error.hpp"
#include "backoff/policy.hpp"
#include "backoff/presets.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/throttle.hpp"

namespace {

using namespace std::chrono_literals;
using backoff::backoff_policy;
using backoff::cap_mode;
using backoff::duration;
using backoff::jitter_kind;
using backoff::parse_policy;
using backoff::schedule_kind;

// Like toml++'s parsing_should_fail: `text` must throw parse_error whose message contains
// `fragment`, quotes the spec, and is a single line. Failures point at the caller's line.
void policy_should_fail(std::string_view text, std::string_view fragment,
                        std::source_location where = std::source_location::current()) {
  const auto fail_at = [&](const std::string& why) {
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << why;
  };
  try {
    const backoff_policy p = parse_policy(text);
    fail_at("\"" + std::string(text) + "\" parsed as " + p.to_string());
  } catch (const backoff::parse_error& e) {
    const std::string message = e.what();
    if (message.find(fragment) == std::string::npos) {
      fail_at("message: " + message + "\nexpected to contain: " + std::string(fragment));
    }
    if (message.find('\n') != std::string::npos) {
      fail_at("message is not one line: " + message);
    }
    if (message.rfind("bad policy ", 0) != 0) {
      fail_at("message does not start with 'bad policy': " + message);
    }
  } catch (const std::exception& e) {
    fail_at("\"" + std::string(text) + "\" threw something else than parse_error: " + e.what());
  }
}

// ---------------------------------------------------------------------------------------------

TEST(ParsePolicy, ReadsTheSpecExponentialExample) {
  const backoff_policy p =
      parse_policy("exponential(initial=50ms, factor=2, max=30s, jitter=full)");
  EXPECT_EQ(p.schedule, schedule_kind::exponential);
  EXPECT_EQ(p.initial, 50ms);
  EXPECT_EQ(p.factor, 2.0);
  EXPECT_EQ(p.max, 30s);
  EXPECT_EQ(p.jitter, jitter_kind::full);
  EXPECT_EQ(p.cap, cap_mode::before);
  EXPECT_EQ(p.grow, backoff::growth::base);
  EXPECT_TRUE(p.jitter_first);
  EXPECT_EQ(p, backoff_policy::exponential(50ms, 2.0, 30s).with_jitter(jitter_kind::full));
}

TEST(ParsePolicy, ReadsAPresetWithAnOverride) {
  const backoff_policy p = parse_policy("gcp-iot(max=32s)");
  backoff_policy expected = backoff::find_preset("gcp-iot")->policy;
  expected.max = 32s;
  EXPECT_EQ(p, expected);
  EXPECT_EQ(p.jitter, jitter_kind::additive);
  EXPECT_EQ(p.cap, cap_mode::after);
}

TEST(ParsePolicy, EveryPresetNameParsesToThatPreset) {
  for (const auto& pr : backoff::presets()) {
    EXPECT_EQ(parse_policy(pr.name), pr.policy) << pr.name;
    EXPECT_EQ(parse_policy(std::string(pr.name) + "()"), pr.policy) << pr.name;
  }
}

TEST(ParsePolicy, BareScheduleNamesHaveDocumentedDefaults) {
  EXPECT_EQ(parse_policy("constant"), backoff::find_preset("constant")->policy);
  EXPECT_EQ(parse_policy("exponential"), backoff::find_preset("exponential")->policy);
  EXPECT_EQ(parse_policy("linear"), backoff_policy::linear(1s, 1s));
  EXPECT_EQ(parse_policy("fibonacci"), backoff_policy::fibonacci(1s, 60s));
}

TEST(ParsePolicy, AllowsBlanksAroundTokens) {
  EXPECT_EQ(parse_policy("  exponential ( initial = 50ms ,\tfactor = 2 , max=30s,jitter=full ) "),
            parse_policy("exponential(initial=50ms, factor=2, max=30s, jitter=full)"));
}

TEST(ParsePolicy, ReadsEveryKey) {
  const backoff_policy lin = parse_policy("linear(initial=1s, step=250ms, max=5s, cap=after)");
  EXPECT_EQ(lin.schedule, schedule_kind::linear);
  EXPECT_EQ(lin.step, 250ms);
  EXPECT_EQ(lin.cap, cap_mode::after);

  const backoff_policy add = parse_policy("exponential(jitter=additive, jitter_max=300ms)");
  EXPECT_EQ(add.jitter_max, 300ms);
  const backoff_policy mul = parse_policy("exponential(jitter=multiplicative, lo=0.5, hi=1.5)");
  EXPECT_EQ(mul.lo, 0.5);
  EXPECT_EQ(mul.hi, 1.5);
  EXPECT_EQ(parse_policy("exponential(jitter=proportional, r=0.5)").r, 0.5);
  EXPECT_EQ(parse_policy("exponential(jitter=gaussian, sigma=0.25)").sigma, 0.25);
  EXPECT_EQ(parse_policy("exponential(jitter=gaussian, sd=40ms)").sd, 40ms);
  EXPECT_EQ(parse_policy("exponential(grow=previous)").grow, backoff::growth::previous);
  EXPECT_FALSE(parse_policy("exponential(jitter_first=false)").jitter_first);
  EXPECT_TRUE(parse_policy("smira(jitter_first=true)").jitter_first);
  EXPECT_EQ(parse_policy("exponential(factor=1.5)").factor, 1.5);
}

TEST(ParsePolicy, MaxNoneRemovesTheCap) {
  EXPECT_EQ(parse_policy("exponential(max=none)").max, duration::max());
  EXPECT_EQ(parse_policy("grpc(max=none)").max, duration::max());
}

TEST(ParsePolicy, SigmaOnAPresetWithAbsoluteSdSwitchesToRelative) {
  const backoff_policy p = parse_policy("smira-go(sigma=0.2)");
  EXPECT_EQ(p.sd, 0ns);
  EXPECT_EQ(p.sigma, 0.2);
}

TEST(ParsePolicy, ChangingTheJitterOfAPresetDropsItsOldJitterParameters) {
  const backoff_policy p = parse_policy("grpc(jitter=none)");
  EXPECT_EQ(p.jitter, jitter_kind::none);
  EXPECT_EQ(p, parse_policy("exponential(initial=1s, factor=1.6, max=120s, jitter=none)"));
}

// ---------------------------------------------------------------------------------------------
// to_string: canonical, and parse(to_string(p)) == p.

TEST(PolicyToString, RoundTripsEveryPreset) {
  for (const auto& pr : backoff::presets()) {
    const std::string text = pr.policy.to_string();
    EXPECT_EQ(parse_policy(text), pr.policy) << pr.name << ": " << text;
    EXPECT_EQ(parse_policy(text).to_string(), text) << pr.name;
  }
}

TEST(PolicyToString, RoundTripsSpecs) {
  for (std::string_view spec : {
           "exponential(initial=50ms, factor=2, max=30s, jitter=full)",
           "gcp-iot(max=32s)",
           "linear(initial=100ms, step=1.5s, max=1h30m, jitter=equal, cap=after)",
           "fibonacci(initial=10ms, max=2d3h, jitter=decorrelated)",
           "constant(initial=750ns, jitter=additive, jitter_max=12.5us)",
           "exponential(initial=1.1s, factor=1.0001, max=none, jitter=multiplicative, lo=0.3, "
           "hi=7)",
           "exponential(factor=3.14159, jitter=proportional, r=0.05, grow=previous)",
           "exponential(jitter=gaussian, sd=271.828ms, jitter_first=false)",
           "smira(max=1m, sigma=0.3333333333333333)",
           "aws-decorrelated(cap=after)",
       }) {
    const backoff_policy p = parse_policy(spec);
    const std::string text = p.to_string();
    EXPECT_EQ(parse_policy(text), p) << spec << " -> " << text;
  }
}

TEST(PolicyToString, WritesTheCanonicalForm) {
  EXPECT_EQ(parse_policy("exponential(initial=50ms, factor=2, max=30s, jitter=full)").to_string(),
            "exponential(initial=50ms, factor=2, max=30s, jitter=full)");
  EXPECT_EQ(parse_policy("grpc").to_string(),
            "exponential(initial=1s, factor=1.6, max=2m, jitter=proportional, r=0.2)");
  EXPECT_EQ(parse_policy("none").to_string(), "constant(initial=0s, max=none, jitter=none)");
  EXPECT_EQ(parse_policy("linear(step=2s)").to_string(),
            "linear(initial=1s, step=2s, max=none, jitter=none)");
}

TEST(PolicyToString, OmitsParametersThatDoNotApply) {
  backoff_policy p = backoff_policy::constant(1s);
  p.factor = 9;   // unused by a constant schedule
  p.r = 0.9;      // unused without proportional jitter
  p.step = 1min;  // unused by a non-linear schedule
  EXPECT_EQ(p.to_string(), "constant(initial=1s, max=none, jitter=none)");
}

TEST(EnumNames, AreTheSpecWords) {
  EXPECT_EQ(backoff::to_string(schedule_kind::fibonacci), "fibonacci");
  EXPECT_EQ(backoff::to_string(jitter_kind::decorrelated), "decorrelated");
  EXPECT_EQ(backoff::to_string(jitter_kind::multiplicative), "multiplicative");
  EXPECT_EQ(backoff::to_string(cap_mode::after), "after");
  EXPECT_EQ(backoff::to_string(backoff::growth::previous), "previous");
}

// ---------------------------------------------------------------------------------------------
// Bad specs: each names the bad part, in one line.

TEST(ParsePolicy, RejectsBadSpecsNamingTheBadPart) {
  policy_should_fail("", "empty");
  policy_should_fail("   ", "empty");
  policy_should_fail("(initial=1s)", "expected a name at column 1");
  policy_should_fail("bogus", "unknown policy \"bogus\"");
  policy_should_fail("bogus(initial=1s)", "known: constant, linear, exponential, fibonacci");
  policy_should_fail("Exponential", "unknown policy \"Exponential\"");
  policy_should_fail("exponential(foo=1)", "unknown parameter \"foo\"");
  policy_should_fail("exponential(Initial=1s)", "unknown parameter \"Initial\"");
  policy_should_fail("exponential(initial=1s, initial=2s)", "parameter \"initial\" given twice");
  policy_should_fail("exponential(", "missing ')'");
  policy_should_fail("exponential(initial=50ms", "missing ')'");
  policy_should_fail("exponential(initial=50ms, factor=2", "missing ')'");
  policy_should_fail("exponential(initial=)", "parameter \"initial\" has an empty value");
  policy_should_fail("exponential(initial= , factor=2)",
                     "parameter \"initial\" has an empty value");
  policy_should_fail("exponential(initial)", "parameter \"initial\" at column 13 needs a value");
  policy_should_fail("exponential(,)", "expected a parameter name at column 13");
  policy_should_fail("exponential(initial=1s,)", "expected a parameter name at column 24");
  policy_should_fail("exponential(initial=1(s))", "at column 22 in the value of \"initial\"");
  policy_should_fail("exponential(factor=0.5)", "factor=0.5 must be a finite number >= 1");
  policy_should_fail("exponential(factor=abc)", "factor=abc is not a number");
  policy_should_fail("exponential(factor=inf)", "factor=inf is not a finite number");
  policy_should_fail("exponential(factor=nan)", "factor=nan is not a number");
  policy_should_fail("exponential(factor=1e400)", "factor=1e400 is too large for a number");
  policy_should_fail("exponential(factor=1e-400)", "factor=1e-400 is too small for a number");
  policy_should_fail("exponential(factor=2x)", "factor=2x is not a number");
  policy_should_fail("exponential(jitter=multiplicative, lo=2, hi=1)", "lo <= hi (lo=2, hi=1)");
  policy_should_fail("exponential(jitter=multiplicative, lo=-1)", "0 <= lo");
  policy_should_fail("exponential(jitter=proportional, r=1.5)", "r=1.5 must be between 0 and 1");
  policy_should_fail("exponential(jitter=proportional, r=-0.1)", "r=-0.1 must be between 0 and 1");
  policy_should_fail("exponential(jitter=gaussian, sigma=-1)",
                     "sigma=-1 must be a finite number >= 0");
  policy_should_fail("exponential(jitter=full, sigma=0.1)",
                     "\"sigma\" applies only to jitter=gaussian");
  policy_should_fail("exponential(jitter=gaussian, sigma=0.1, sd=1s)",
                     "sigma (relative) or sd (absolute), not both");
  policy_should_fail("exponential(sd=1s)", "\"sd\" applies only to jitter=gaussian");
  policy_should_fail("exponential(step=1s)", "\"step\" applies only to the linear schedule");
  policy_should_fail("linear(factor=2)", "\"factor\" applies only to the exponential schedule");
  policy_should_fail("constant(grow=previous)",
                     "\"grow\" applies only to the exponential schedule");
  policy_should_fail("exponential(jitter=none, lo=1)",
                     "\"lo\" applies only to jitter=multiplicative");
  policy_should_fail("exponential(jitter=full, hi=3)",
                     "\"hi\" applies only to jitter=multiplicative");
  policy_should_fail("exponential(jitter=full, r=0.1)",
                     "\"r\" applies only to jitter=proportional");
  policy_should_fail("exponential(jitter_max=1s)",
                     "\"jitter_max\" applies only to jitter=additive");
  policy_should_fail("grpc(jitter=full, r=0.1)", "\"r\" applies only to jitter=proportional");
  policy_should_fail("exponential(initial=5x)", "initial: bad duration \"5x\": unknown unit \"x\"");
  policy_should_fail("exponential(initial=5)", "initial: bad duration \"5\": missing unit");
  policy_should_fail("exponential(initial=-1s)", "negative");
  policy_should_fail("exponential(max=-5s)", "max: bad duration \"-5s\"");
  policy_should_fail("gcp-iot(max=32x)", "max: bad duration \"32x\"");
  policy_should_fail("exponential(jitter=additive, jitter_max=1z)", "jitter_max: bad duration");
  policy_should_fail("exponential(jitter=gaussian, sd=fast)", "sd: bad duration \"fast\"");
  policy_should_fail("exponential(initial=1s) x", "unexpected text \"x\" at column 25 after ')'");
  policy_should_fail("exponential(initial=1s))", "unexpected text \")\"");
  policy_should_fail("exponential x", "at column 13 after \"exponential\"");
  policy_should_fail("exponential(initial=10s, max=1s)", "max (1s) is smaller than initial (10s)");
  policy_should_fail("gcp-iot(max=500ms)", "max (500ms) is smaller than initial (1s)");
  policy_should_fail("exponential(jitter=wobbly)", "unknown jitter \"wobbly\"");
  policy_should_fail("exponential(cap=middle)", "cap=middle must be before or after");
  policy_should_fail("exponential(grow=sideways)", "grow=sideways must be base or previous");
  policy_should_fail("exponential(jitter_first=yes)", "jitter_first=yes must be true or false");
}

TEST(ParsePolicy, ErrorQuotesTheWholeSpec) {
  policy_should_fail("exponential(initial=50ms, factor=0)",
                     "\"exponential(initial=50ms, factor=0)\"");
}

// SPEC 1.3 and error.hpp: "a bad spec gives one clear line". A spec may come from a file or a
// shell variable with a line break in it; the message that quotes it must still be one line
// (control characters escaped).
TEST(ParsePolicy, ErrorStaysOneLineWhenTheSpecContainsALineBreak) {
  policy_should_fail("exponential(initial=1s,\nfactor=0)", "expected a parameter name");
  policy_should_fail("exponential\n", "unexpected");
}

TEST(ErrorText, EscapesControlCharactersSoThatMessagesStayOneLine) {
  EXPECT_EQ(backoff::escape_controls("a\nb\tc\rd\x01\x7f"), "a\\nb\\tc\\rd\\x01\\x7f");
  EXPECT_EQ(backoff::escape_controls("plain 250ms \xC2\xB5s"),
            "plain 250ms \xC2\xB5s");  // UTF-8 kept
  EXPECT_EQ(backoff::quote_for_message("x\ny"), "\"x\\ny\"");
}

// ---------------------------------------------------------------------------------------------
// The shared tokenizer and helpers, used by the other spec kinds.

TEST(ParseSpecCall, SplitsNameKeysValuesAndColumns) {
  const backoff::spec_call call =
      backoff::parse_spec_call("window(kind=aimd, start = 20 )", "window");
  EXPECT_EQ(call.name, "window");
  ASSERT_EQ(call.arguments.size(), 2u);
  EXPECT_EQ(call.arguments[0].key, "kind");
  EXPECT_EQ(call.arguments[0].value, "aimd");
  EXPECT_EQ(call.arguments[0].column, 8u);
  EXPECT_EQ(call.arguments[1].key, "start");
  EXPECT_EQ(call.arguments[1].value, "20");
  EXPECT_EQ(call.arguments[1].column, 19u);
}

TEST(ParseSpecCall, ANameAloneHasNoArguments) {
  EXPECT_TRUE(backoff::parse_spec_call("tahoe", "window").arguments.empty());
  EXPECT_TRUE(backoff::parse_spec_call("tahoe()", "window").arguments.empty());
  EXPECT_EQ(backoff::parse_spec_call(" tahoe ( ) ", "window").name, "tahoe");
}

TEST(ParseSpecCall, NamesTheKindOfSpecInErrors) {
  try {
    (void)backoff::parse_spec_call("budget(ratio=0.1, ratio=0.2)", "budget");
    FAIL() << "no exception";
  } catch (const backoff::parse_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad budget \"budget(ratio=0.1, ratio=0.2)\": parameter \"ratio\" given twice");
  }
}

TEST(SpecHelpers, ConvertValuesOrNameTheKey) {
  const backoff::spec_argument number{"ratio", "0.25", 8, false, {}};
  const backoff::spec_argument dur{"window", "1m30s", 8, false, {}};
  const backoff::spec_argument yes{"on", "true", 8, false, {}};
  const backoff::spec_argument no{"on", "false", 8, false, {}};
  EXPECT_EQ(backoff::spec_number("x(ratio=0.25)", number, "budget"), 0.25);
  EXPECT_EQ(backoff::spec_duration("x(window=1m30s)", dur, "budget"), 90s);
  EXPECT_TRUE(backoff::spec_bool("x(on=true)", yes, "budget"));
  EXPECT_FALSE(backoff::spec_bool("x(on=false)", no, "budget"));

  const backoff::spec_argument bad_number{"ratio", "lots", 8, false, {}};
  const backoff::spec_argument bad_duration{"window", "soon", 8, false, {}};
  const backoff::spec_argument bad_bool{"on", "1", 8, false, {}};
  EXPECT_THROW((void)backoff::spec_number("x", bad_number, "budget"), backoff::parse_error);
  EXPECT_THROW((void)backoff::spec_duration("x", bad_duration, "budget"), backoff::parse_error);
  EXPECT_THROW((void)backoff::spec_bool("x", bad_bool, "budget"), backoff::parse_error);
  try {
    (void)backoff::spec_number("throttle(k=lots)",
                               backoff::spec_argument{"k", "lots", 10, false, {}}, "throttle");
    FAIL() << "no exception";
  } catch (const backoff::parse_error& e) {
    EXPECT_EQ(std::string(e.what()), "bad throttle \"throttle(k=lots)\": k=lots is not a number");
  }
}

// Found by fuzz/spec_fuzzer.cpp (fuzz/regressions/spec/): the window, budget and throttle readers
// repeated the spec and a bad value as written, so a control character split the message.
TEST(OverloadSpecs, ErrorsStayOnOneLineWhateverTheSpecHolds) {
  const auto message_of = [](auto parse, std::string_view text) -> std::string {
    try {
      (void)parse(text);
    } catch (const backoff::parse_error& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string texts[] = {std::string("aimd(variant=re\nno)"),
                               std::string("aimd(initial=20, ssthresh=1024\x01\0\0\0se=0.9)", 38),
                               std::string("sre(k=2,\twindow=\r2m)"), std::string("nope\x7f")};
  for (const std::string& text : texts) {
    for (const std::string& m :
         {message_of(backoff::parse_window, text), message_of(backoff::parse_budget, text),
          message_of(backoff::parse_throttle, text)}) {
      EXPECT_TRUE(m.starts_with("bad ")) << m;
      for (const char c : m) {
        EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << m;
      }
    }
  }
  EXPECT_EQ(message_of(backoff::parse_window, "aimd(variant=re\nno)"),
            "bad window \"aimd(variant=re\\nno)\": variant=re\\nno must be tahoe or reno");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Lists, percentages and call counts (the guard specs of SPEC 7.2).

TEST(ParseSpecCall, ReadsAListAsOneValueWithItems) {
  const backoff::spec_call call =
      backoff::parse_spec_call("hedge(non_fatal=[429, 503 ], delay=1s)", "hedge");
  ASSERT_EQ(call.arguments.size(), 2u);
  EXPECT_TRUE(call.arguments[0].is_list);
  EXPECT_EQ(call.arguments[0].value, "[429, 503 ]");
  EXPECT_EQ(call.arguments[0].items, (std::vector<std::string>{"429", "503"}));
  EXPECT_FALSE(call.arguments[1].is_list);
  EXPECT_EQ(call.arguments[1].value, "1s");
  const backoff::spec_call empty = backoff::parse_spec_call("hedge(non_fatal=[ ])", "hedge");
  ASSERT_EQ(empty.arguments.size(), 1u);
  EXPECT_TRUE(empty.arguments[0].is_list);
  EXPECT_TRUE(empty.arguments[0].items.empty());
}

TEST(ParseSpecCall, RefusesMalformedListsWithOneLine) {
  const auto message = [](std::string_view text) {
    try {
      (void)backoff::parse_spec_call(text, "hedge");
    } catch (const backoff::parse_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("h(x=[1, 2)"),
            "bad hedge \"h(x=[1, 2)\": unexpected \")\" at column 10 in "
            "the list of \"x\"");
  EXPECT_EQ(message("h(x=[1, 2"), "bad hedge \"h(x=[1, 2\": missing ']' in the value of \"x\"");
  EXPECT_EQ(message("h(x=[1,,2])"),
            "bad hedge \"h(x=[1,,2])\": an empty item at column 8 in "
            "the list of \"x\"");
  EXPECT_EQ(message("h(x=[1,])"),
            "bad hedge \"h(x=[1,])\": an empty item at column 8 in the "
            "list of \"x\"");
  EXPECT_EQ(message("h(x=[1] 2)"),
            "bad hedge \"h(x=[1] 2)\": unexpected \"2\" at column 9 after "
            "the list of \"x\"");
  EXPECT_EQ(message("h(x=[[1]])"),
            "bad hedge \"h(x=[[1]])\": unexpected \"[\" at column 6 in "
            "the list of \"x\"");
  EXPECT_EQ(message("h(x=1])"),
            "bad hedge \"h(x=1])\": unexpected \"]\" at column 6 in the "
            "value of \"x\"");
  EXPECT_EQ(message("h(x=1[2])"),
            "bad hedge \"h(x=1[2])\": unexpected \"[\" at column 6 in "
            "the value of \"x\"");
}

TEST(SpecHelpers, ReadPercentagesFractionsListsAndCallCounts) {
  const auto arg = [](std::string key, std::string value) {
    return backoff::spec_argument{std::move(key), std::move(value), 3, false, {}};
  };
  EXPECT_DOUBLE_EQ(backoff::spec_fraction("s", arg("threshold", "50%"), "breaker"), 0.5);
  EXPECT_DOUBLE_EQ(backoff::spec_fraction("s", arg("threshold", "12.5 %"), "breaker"), 0.125);
  EXPECT_DOUBLE_EQ(backoff::spec_fraction("s", arg("threshold", "0.1"), "breaker"), 0.1);
  EXPECT_DOUBLE_EQ(backoff::spec_fraction("s", arg("threshold", "100%"), "breaker"), 1.0);
  EXPECT_EQ(backoff::format_fraction(0.125), "12.5%");
  EXPECT_EQ(backoff::format_fraction(0.1), "10%");
  for (const char* bad : {"101%", "-1%", "10", "%", "ten%", "1.5"}) {
    EXPECT_THROW((void)backoff::spec_fraction("s", arg("threshold", bad), "breaker"),
                 backoff::parse_error)
        << bad;
  }
  EXPECT_EQ(backoff::spec_list("s", arg("non_fatal", "503"), "hedge"),
            std::vector<std::string>{"503"});
  const auto list = backoff::parse_spec_call("h(non_fatal=[429,503])", "hedge").arguments[0];
  EXPECT_EQ(backoff::spec_list("s", list, "hedge"), (std::vector<std::string>{"429", "503"}));

  EXPECT_EQ(backoff::spec_calls("s", arg("window", "100calls"), "breaker"), 100u);
  EXPECT_EQ(backoff::spec_calls("s", arg("window", "10s"), "breaker"), std::nullopt);
  EXPECT_EQ(backoff::spec_calls("s", arg("window", "calls"), "breaker"), std::nullopt);
  for (const char* bad : {"-1calls", "1.5calls", "xcalls", "99999999999999999999999calls"}) {
    EXPECT_THROW((void)backoff::spec_calls("s", arg("window", bad), "breaker"),
                 backoff::parse_error)
        << bad;
  }
}
