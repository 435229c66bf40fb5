// SPDX-License-Identifier: Apache-2.0
// Spec keys from tables (spec_keys.hpp): a misspelt key or name in each spec kind gets a
// did-you-mean, the known keys an error lists are the rows of the kind's table (the same rows
// docs/POLICIES.md carries), a key that does not apply to the variant is still refused, and the
// canonical texts are pinned and round-trip.
#include "backoff/spec_keys.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/aimd_window.hpp"
#include "backoff/circuit_breaker.hpp"
#include "backoff/deadline.hpp"
#include "backoff/error.hpp"
#include "backoff/hedge.hpp"
#include "backoff/retry_budget.hpp"
#include "backoff/spec.hpp"
#include "backoff/throttle.hpp"

namespace {

using backoff::parse_error;

// The message a reader throws for `text`, or "" when it reads it.
std::string error_of(const std::function<void(std::string_view)>& parse, std::string_view text) {
  try {
    parse(text);
  } catch (const parse_error& e) {
    return e.what();
  }
  return "";
}

const std::function<void(std::string_view)> reader_of(std::string_view kind) {
  if (kind == "policy") return [](std::string_view t) { (void)backoff::parse_policy(t); };
  if (kind == "window") return [](std::string_view t) { (void)backoff::parse_window(t); };
  if (kind == "budget") return [](std::string_view t) { (void)backoff::parse_budget(t); };
  if (kind == "throttle") return [](std::string_view t) { (void)backoff::parse_throttle(t); };
  if (kind == "breaker") return [](std::string_view t) { (void)backoff::parse_breaker(t); };
  if (kind == "hedge") return [](std::string_view t) { (void)backoff::parse_hedge(t); };
  return [](std::string_view t) { (void)backoff::parse_deadline(t); };
}

// The key column of a kind's markdown table, in order.
std::vector<std::string> keys_in_table(std::string_view kind) {
  std::vector<std::string> keys;
  std::istringstream lines{backoff::spec_keys_markdown(kind)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("| `")) continue;
    keys.push_back(line.substr(3, line.find('`', 3) - 3));
  }
  return keys;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct misspelling {
  std::string_view kind;
  std::string_view spec;
  std::string_view bad_part;  // the key or name the message must quote
  std::string_view hint;      // the name it must suggest
};

class MisspeltKey : public testing::TestWithParam<misspelling> {};

TEST_P(MisspeltKey, IsAnsweredWithTheClosestNameOnOneLine) {
  const misspelling& m = GetParam();
  const std::string message = error_of(reader_of(m.kind), m.spec);
  EXPECT_TRUE(
      message.starts_with("bad " + std::string(m.kind) + " \"" + std::string(m.spec) + "\": "))
      << message;
  EXPECT_NE(message.find(m.bad_part), std::string::npos) << message;
  EXPECT_TRUE(message.ends_with("; did you mean '" + std::string(m.hint) + "'?")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, MisspeltKey,
    testing::Values(misspelling{"policy", "exponential(fator=2)", "fator", "factor"},
                    misspelling{"policy", "exponential(jiter=full)", "jiter", "jitter"},
                    misspelling{"policy", "exponental(initial=1s)", "exponental", "exponential"},
                    misspelling{"policy", "exponential(jitter=ful)", "ful", "full"},
                    misspelling{"window", "aimd(decrese=0.5)", "decrese", "decrease"},
                    misspelling{"window", "aimdd(initial=2)", "aimdd", "aimd"},
                    misspelling{"budget", "token-bucket(rati=0.1)", "rati", "ratio"},
                    misspelling{"budget", "ratio(percnt=20)", "percnt", "percent"},
                    misspelling{"budget", "token-buckt(max=10)", "token-buckt", "token-bucket"},
                    misspelling{"throttle", "cubic(betta=0.5)", "betta", "beta"},
                    misspelling{"throttle", "sre(windw=1m)", "windw", "window"},
                    misspelling{"breaker", "breaker(treshold=10%)", "treshold", "threshold"},
                    misspelling{"breaker", "breaker(kind=rat)", "rat", "rate"},
                    misspelling{"breaker", "braker(failures=3)", "braker", "breaker"},
                    misspelling{"hedge", "hedge(max_attempt=2)", "max_attempt", "max_attempts"},
                    misspelling{"deadline", "deadline(per_atempt=1s)", "per_atempt",
                                "per_attempt"}));

// The known keys in an unknown-key message are the rows of the docs' table for that kind (for a
// kind with variants, the rows of the variant).
TEST(SpecKeys, TheKnownKeysOfAMessageAreTheRowsOfTheTable) {
  const auto known = [](std::string_view kind, std::string_view spec) {
    const std::string m = error_of(reader_of(kind), spec);
    const auto from = m.find("(known: ");
    return from == std::string::npos ? m : m.substr(from + 8, m.find(')', from) - from - 8);
  };
  for (const std::string_view kind : {"policy", "window", "hedge", "deadline"}) {
    const std::string spec = kind == "policy"   ? "exponential(zzz=1)"
                             : kind == "window" ? "aimd(zzz=1)"
                             : kind == "hedge"  ? "hedge(zzz=1)"
                                                : "deadline(zzz=1)";
    EXPECT_EQ(known(kind, spec), joined(keys_in_table(kind))) << kind;
  }
  EXPECT_EQ(known("breaker", "breaker(zzz=1)"), joined(keys_in_table("breaker")));
  // The budget and throttle tables hold both variants; each message lists its variant's rows.
  const std::vector<std::string> budget = keys_in_table("budget");
  EXPECT_EQ(known("budget", "token-bucket(zzz=1)") + ", " + known("budget", "ratio(zzz=1)") + ", " +
                known("budget", "quota(zzz=1)"),
            joined(budget));
  const std::vector<std::string> throttle = keys_in_table("throttle");
  EXPECT_EQ(known("throttle", "sre(zzz=1)") + ", " + known("throttle", "cubic(zzz=1)"),
            joined(throttle));
  EXPECT_EQ(joined(keys_in_table("policy")),
            "initial, factor, step, max, jitter, jitter_max, lo, hi, r, sigma, sd, cap, grow, "
            "jitter_first");
  EXPECT_EQ(backoff::spec_keys_markdown("no-such-kind"), "");
}

TEST(SpecKeys, AKeyThatDoesNotApplyToTheVariantIsStillRefused) {
  const auto message = [](std::string_view kind, std::string_view spec) {
    return error_of(reader_of(kind), spec);
  };
  EXPECT_NE(message("policy", "exponential(step=1s)")
                .find("parameter \"step\" applies only to the linear schedule"),
            std::string::npos);
  EXPECT_NE(message("policy", "linear(grow=previous)")
                .find("parameter \"grow\" applies only to the exponential schedule"),
            std::string::npos);
  EXPECT_NE(message("policy", "exponential(jitter=full, sigma=0.2)")
                .find("parameter \"sigma\" applies only to jitter=gaussian"),
            std::string::npos);
  // The jitter may come after the key that needs it.
  EXPECT_EQ(message("policy", "exponential(lo=1.5, jitter=multiplicative)"), "");
  EXPECT_EQ(message("breaker", "breaker(kind=rate, failures=5)"),
            "bad breaker \"breaker(kind=rate, failures=5)\": parameter \"failures\" does not "
            "apply to kind=rate (it takes threshold, window, min_calls, open, open_growth, "
            "open_max, half_open, trials, slow, slow_threshold, keyed, max_keys)");
  EXPECT_EQ(message("budget", "ratio(max=10)"),
            "bad budget \"ratio(max=10)\": unknown parameter \"max\" (known: percent, min_per_s, "
            "window)");
  EXPECT_EQ(message("throttle", "sre(beta=0.5)"),
            "bad throttle \"sre(beta=0.5)\": unknown parameter \"beta\" (known: k, window)");
  EXPECT_NE(message("breaker", "retry-only-10pct(open=1s)").find("does not apply"),
            std::string::npos);
}

// The canonical texts, written out: the simulator copies them into its summaries, which must
// not change when the way they are written does.
TEST(SpecKeys, CanonicalTextsArePinnedAndReadBackEqual) {
  const std::vector<std::pair<std::string, std::string>> policies = {
      {"exponential", "exponential(initial=2s, factor=2, max=30s, jitter=none)"},
      {"linear(step=250ms, max=none)", "linear(initial=1s, step=250ms, max=none, jitter=none)"},
      {"gcp-iot",
       "exponential(initial=1s, factor=2, max=1m4s, jitter=additive, jitter_max=1s, "
       "cap=after)"},
      {"smira",
       "exponential(initial=100ms, factor=2.7, max=10m, jitter=gaussian, sigma=0.1, "
       "grow=previous, jitter_first=false)"},
      {"smira-go",
       "exponential(initial=271.828ms, factor=2.71828, max=5m, jitter=gaussian, "
       "sd=100ms, grow=previous)"},
      {"ethernet",
       "exponential(initial=1s, factor=2, max=1m, jitter=multiplicative, lo=1, hi=2, "
       "cap=after)"},
      {"grpc", "exponential(initial=1s, factor=1.6, max=2m, jitter=proportional, r=0.2)"},
      {"fibonacci(jitter=full)", "fibonacci(initial=1s, max=1m, jitter=full)"},
  };
  for (const auto& [spec, text] : policies) {
    const auto p = backoff::parse_policy(spec);
    EXPECT_EQ(p.to_string(), text) << spec;
    EXPECT_EQ(backoff::parse_policy(p.to_string()), p) << spec;
  }
  const std::vector<std::pair<std::string, std::string>> breakers = {
      {"breaker", "breaker(kind=consecutive, failures=5, open=5s, half_open=1)"},
      {"breaker(kind=rate, window=100calls, min_calls=50, trials=ratio, keyed=true)",
       "breaker(kind=rate, threshold=50%, window=100calls, min_calls=50, open=5s, half_open=3, "
       "trials=ratio, keyed=true, max_keys=1000)"},
      {"retry-only-10pct", "breaker(kind=retry-only, threshold=10%, window=200ms)"},
      {"run-ratio-10pct(threshold=12.5%)", "breaker(kind=run-ratio, threshold=12.5%)"},
  };
  for (const auto& [spec, text] : breakers) {
    const auto c = backoff::parse_breaker(spec);
    EXPECT_EQ(c.to_string(), text) << spec;
    EXPECT_EQ(backoff::parse_breaker(c.to_string()), c) << spec;
  }
  const std::vector<std::pair<std::string, std::string>> budgets = {
      {"token-bucket", "token-bucket(max=10, ratio=0.1)"},
      {"token-bucket(max=30, earn=first-success, spend=retry, at_least=1)",
       "token-bucket(max=30, ratio=0.1, earn=first-success, spend=retry, at_least=1)"},
      {"token-bucket(max=5, earn=request, above=1.5)",
       "token-bucket(max=5, ratio=0.1, earn=request, above=1.5)"},
      {"ratio(window=1500ms)", "ratio(percent=20, min_per_s=10, window=1.5s)"},
  };
  for (const auto& [spec, text] : budgets) {
    const auto c = backoff::parse_budget(spec);
    EXPECT_EQ(backoff::to_string(c), text) << spec;
    EXPECT_EQ(backoff::parse_budget(backoff::to_string(c)), c) << spec;
  }
  EXPECT_EQ(backoff::to_string(backoff::parse_throttle("sre")), "sre(k=2, window=2m)");
  EXPECT_EQ(backoff::to_string(backoff::parse_throttle("cubic(beta=0.5)")),
            "cubic(beta=0.5, scale=0.4, smooth=0.8, min_rate=0.5, min_capacity=1, bucket=500ms)");
  EXPECT_EQ(backoff::parse_window("aimd(variant=reno, decrease=0.25)").to_string(),
            "aimd(initial=20, ssthresh=1024, decrease=0.25, variant=reno)");
  EXPECT_EQ(backoff::parse_hedge("hedge(max_attempts=3, non_fatal=[503, 429, 503])").to_string(),
            "hedge(max_attempts=3, delay=0s, non_fatal=[429, 503])");
  EXPECT_EQ(backoff::parse_deadline("deadline()").to_string(), "deadline()");
  EXPECT_EQ(backoff::parse_deadline("deadline(propagate=true, per_attempt=1s)").to_string(),
            "deadline(per_attempt=1s, propagate=true)");
}

TEST(SpecKeys, AppliesToTextNamesOnlyTheDimensionsAKeyIsRestrictedIn) {
  constexpr std::string_view names[] = {"a", "b", "x=1", "x=2"};
  constexpr backoff::variant_set groups[] = {0b0011, 0b1100};
  const backoff::spec_variants v{names, groups};
  EXPECT_EQ(backoff::applies_to_text(backoff::all_variants, v), "all");
  EXPECT_EQ(backoff::applies_to_text(0b1101, v), "a");
  EXPECT_EQ(backoff::applies_to_text(0b0111, v), "x=1");
  EXPECT_EQ(backoff::applies_to_text(0b0101, v), "a with x=1");
  EXPECT_EQ(backoff::applies_to_text(0b0010, backoff::spec_variants{names, {}}), "b");
}

}  // namespace
