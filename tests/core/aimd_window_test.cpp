// SPDX-License-Identifier: Apache-2.0
// The AIMD window (aimd_window.hpp): scripted sends, successes and errors with cwnd and ssthresh
// asserted after each step (slow start, congestion avoidance, Tahoe and Reno cuts, a burst of
// errors counted once, the floor at 1), the queue order (failed requests back at the front),
// the readings where seed 003 is silent, a differential run against a literal transcription of
// the seed with real sets, and the spec reader.
#include "backoff/aimd_window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "backoff/error.hpp"
#include "backoff/random.hpp"

namespace {

using backoff::aimd_config;
using backoff::aimd_variant;
using backoff::aimd_window;
using backoff::parse_window;
using backoff::request_id;
using backoff::send_ticket;

aimd_config config(double initial, double ssthresh, double decrease, aimd_variant variant) {
  aimd_config c;
  c.initial = initial;
  c.ssthresh = ssthresh;
  c.decrease = decrease;
  c.variant = variant;
  return c;
}

// Sends until the window or the queue says no.
std::vector<send_ticket> send_all(aimd_window& w) {
  std::vector<send_ticket> sent;
  while (auto t = w.try_send()) sent.push_back(*t);
  return sent;
}

std::vector<request_id> ids(const std::vector<send_ticket>& tickets) {
  std::vector<request_id> out;
  for (const send_ticket& t : tickets) out.push_back(t.request());
  return out;
}

TEST(AimdWindow, StartsWithTheSeedsValues) {
  aimd_window w;
  EXPECT_EQ(w.cwnd(), 20.0);
  EXPECT_EQ(w.ssthresh(), 1024.0);
  EXPECT_EQ(w.flying(), 0U);
  EXPECT_EQ(w.pending(), 0U);
  EXPECT_FALSE(w.try_send().has_value()) << "nothing queued";
}

TEST(AimdWindow, SendsWhileFlyingIsBelowCwnd) {
  aimd_window w;
  EXPECT_EQ(w.enqueue(100), 0U);
  const auto sent = send_all(w);
  ASSERT_EQ(sent.size(), 20U);
  EXPECT_EQ(sent.front().request(), 0U);
  EXPECT_EQ(sent.back().request(), 19U);
  EXPECT_EQ(w.flying(), 20U);
  EXPECT_EQ(w.pending(), 80U);
  EXPECT_EQ(w.enqueue(), 100U) << "ids continue where the last block ended";
}

TEST(AimdWindow, SlowStartGrowsByOnePerSuccessWhenTheWindowIsFull) {
  aimd_window w;
  w.enqueue(1000);
  auto sent = send_all(w);  // 20 in flight
  // f = 20 (counted before removal) < ssthresh: cwnd = max(20, min(21, 21)) = 21.
  w.on_success(sent[0]);
  EXPECT_EQ(w.cwnd(), 21.0);
  EXPECT_EQ(w.flying(), 19U);
  EXPECT_EQ(send_all(w).size(), 2U) << "19 -> 21 in flight";
  w.on_success(sent[1]);  // f = 21
  EXPECT_EQ(w.cwnd(), 22.0);
  w.on_success(sent[2]);  // f = 20 < cwnd: min(f + 1, cwnd + 1) = 21, max with 22 keeps 22
  EXPECT_EQ(w.cwnd(), 22.0);
}

TEST(AimdWindow, DoesNotGrowWhenFewRequestsFly) {
  // The seed's bound on growth: a client sending below its window does not inflate it.
  aimd_window w;
  for (int i = 0; i < 50; ++i) {
    w.enqueue();
    const auto t = w.try_send();
    ASSERT_TRUE(t.has_value());
    w.on_success(*t);  // f = 1 each time: min(2, 21) = 2 < 20
  }
  EXPECT_EQ(w.cwnd(), 20.0);
}

TEST(AimdWindow, CongestionAvoidanceAddsOneOverCwnd) {
  aimd_window w{config(4, 4, 0.5, aimd_variant::tahoe)};
  w.enqueue(100);
  auto sent = send_all(w);
  ASSERT_EQ(sent.size(), 4U);
  // f = 4 >= ssthresh = 4: cwnd = max(4, min(5, 4 + 1/4)) = 4.25.
  w.on_success(sent[0]);
  EXPECT_EQ(w.cwnd(), 4.25);
  // Send while size(flying) < cwnd: 3 -> 4 -> 5 (4 < 4.25 still lets one more go).
  const auto more = send_all(w);
  EXPECT_EQ(more.size(), 2U);
  EXPECT_EQ(w.flying(), 5U);
  w.on_success(sent[1]);  // f = 5: min(6, 4.25 + 1/4.25)
  EXPECT_DOUBLE_EQ(w.cwnd(), 4.25 + 1.0 / 4.25);
}

TEST(AimdWindow, TahoeCutResetsToInitialAndHalvesSsthreshFromCwnd) {
  aimd_window w{config(20, 1024, 0.5, aimd_variant::tahoe)};
  w.enqueue(1000);
  auto sent = send_all(w);
  for (int i = 0; i < 10; ++i) {
    w.on_success(sent[static_cast<std::size_t>(i)]);
    auto more = send_all(w);
    sent.insert(sent.end(), more.begin(), more.end());
  }
  EXPECT_EQ(w.cwnd(), 30.0);
  w.on_error(sent[10]);
  EXPECT_EQ(w.ssthresh(), 15.0);
  EXPECT_EQ(w.cwnd(), 20.0);
  EXPECT_EQ(w.snapshot().cuts, 1U);
}

TEST(AimdWindow, RenoCutSetsCwndToTheNewSsthresh) {
  aimd_window w{config(20, 1024, 0.9, aimd_variant::reno)};
  w.enqueue(1000);
  auto sent = send_all(w);
  w.on_success(sent[0]);  // 21
  w.on_success(sent[1]);  // f = 19 < 21: stays 21
  EXPECT_EQ(w.cwnd(), 21.0);
  w.on_error(sent[2]);
  EXPECT_DOUBLE_EQ(w.ssthresh(), 21.0 * 0.9);
  EXPECT_DOUBLE_EQ(w.cwnd(), 21.0 * 0.9);
}

TEST(AimdWindow, ABurstOfErrorsFromOneWindowCountsOnce) {
  aimd_window w{config(20, 1024, 0.5, aimd_variant::tahoe)};
  w.enqueue(20);
  const auto sent = send_all(w);
  ASSERT_EQ(sent.size(), 20U);
  for (const send_ticket& t : sent) w.on_error(t);
  const auto s = w.snapshot();
  EXPECT_EQ(s.cuts, 1U);
  EXPECT_EQ(s.ignored, 19U);
  EXPECT_EQ(s.ssthresh, 10.0) << "halved once, not 20 times";
  EXPECT_EQ(s.cwnd, 20.0);
  EXPECT_EQ(s.flying, 0U);
  EXPECT_EQ(s.pending, 20U) << "every failed request is queued again";
}

TEST(AimdWindow, AnErrorOfARequestSentAfterTheCutCutsAgain) {
  aimd_window w{config(4, 1024, 0.5, aimd_variant::reno)};
  w.enqueue(10);
  auto sent = send_all(w);  // 0..3
  w.on_error(sent[0]);      // cut 1: ssthresh = 2, cwnd = 2; requests 0..3 ignored
  EXPECT_EQ(w.cwnd(), 2.0);
  EXPECT_EQ(w.ssthresh(), 2.0);
  w.on_success(sent[1]);  // f = 3 >= ssthresh: min(4, 2 + 1/2) = 2.5
  EXPECT_EQ(w.cwnd(), 2.5);
  w.on_success(sent[2]);  // f = 2 >= ssthresh: min(3, 2.5 + 1/2.5)
  EXPECT_DOUBLE_EQ(w.cwnd(), 2.9);
  w.on_success(sent[3]);  // f = 1 < ssthresh: min(2, 3.9) = 2, below cwnd
  EXPECT_DOUBLE_EQ(w.cwnd(), 2.9);
  auto next = send_all(w);
  ASSERT_EQ(ids(next), (std::vector<request_id>{0, 4, 5}));
  w.on_error(next[1]);  // request 4 was never in flight at cut 1
  EXPECT_EQ(w.snapshot().cuts, 2U);
  EXPECT_DOUBLE_EQ(w.ssthresh(), 2.9 * 0.5);
  EXPECT_DOUBLE_EQ(w.cwnd(), 2.9 * 0.5);
}

TEST(AimdWindow, FailedRequestsGoBackToTheFrontOfTheQueue) {
  aimd_window w{config(3, 1024, 0.5, aimd_variant::tahoe)};
  w.enqueue(6);
  auto sent = send_all(w);  // 0, 1, 2
  w.on_error(sent[0]);      // cut: cwnd back to 3, 0 is queued at the front
  w.on_error(sent[1]);      // ignored; 1 goes in front of 0
  EXPECT_EQ(ids(send_all(w)), (std::vector<request_id>{1, 0}));
  EXPECT_EQ(w.pending(), 3U);
  w.on_success(sent[2]);  // f = 3 >= ssthresh 1.5: cwnd = 3 + 1/3, so two more fit
  EXPECT_EQ(ids(send_all(w)), (std::vector<request_id>{3, 4}));
}

TEST(AimdWindow, ADroppedRequestStillCutsButIsNotSentAgain) {
  aimd_window w{config(2, 1024, 0.5, aimd_variant::reno)};
  w.enqueue(3);
  auto sent = send_all(w);  // 0, 1
  w.on_error(sent[0], aimd_window::requeue::no);
  EXPECT_EQ(w.snapshot().cuts, 1U);
  EXPECT_EQ(w.cwnd(), 1.0);
  EXPECT_EQ(w.pending(), 1U) << "only request 2 waits";
  w.on_error(sent[1], aimd_window::requeue::no);  // in flight at the cut: ignored, dropped
  EXPECT_EQ(w.snapshot().cuts, 1U);
  EXPECT_EQ(w.flying(), 0U);
  EXPECT_EQ(ids(send_all(w)), (std::vector<request_id>{2}));
}

TEST(AimdWindow, TheCuttingRequestIsInTheCopyOfFlying) {
  // Seed reading: ignored = flying as it is while the error is handled, before the id leaves.
  aimd_window w{config(2, 1024, 0.5, aimd_variant::tahoe)};
  w.enqueue(3);
  auto first = send_all(w);  // 0, 1
  w.on_error(first[0]);      // cut 1; ignored = {0, 1}
  w.on_success(first[1]);
  auto again = send_all(w);  // 0 (resent), 2
  ASSERT_EQ(ids(again), (std::vector<request_id>{0, 2}));
  w.on_error(again[0]);  // 0 is still in ignored: no cut
  EXPECT_EQ(w.snapshot().cuts, 1U);
  w.on_error(again[1]);  // 2 was never in flight at a cut
  EXPECT_EQ(w.snapshot().cuts, 2U);
}

TEST(AimdWindow, IgnoredIsACopyNotAView) {
  // A request in flight at the cut stays ignored on a later send, until the next cut.
  aimd_window w{config(3, 1024, 0.5, aimd_variant::tahoe)};
  w.enqueue(4);
  auto sent = send_all(w);  // 0, 1, 2
  w.on_error(sent[0]);      // cut 1; ignored = {0, 1, 2}
  w.on_error(sent[1]);      // ignored
  w.on_success(sent[2]);
  auto again = send_all(w);  // 1, 0, 3
  ASSERT_EQ(ids(again), (std::vector<request_id>{1, 0, 3}));
  w.on_error(again[0]);  // request 1: sent after the cut, but in the copy
  EXPECT_EQ(w.snapshot().cuts, 1U);
  EXPECT_EQ(w.snapshot().ignored, 2U);
  w.on_error(again[2]);  // request 3: new; cut 2, whose copy is {0, 3}
  EXPECT_EQ(w.snapshot().cuts, 2U);
  auto third = send_all(w);  // 3, 1 (0 still flies)
  ASSERT_EQ(ids(third), (std::vector<request_id>{3, 1}));
  w.on_error(third[1]);  // request 1 was not flying at cut 2: cut 3
  EXPECT_EQ(w.snapshot().cuts, 3U);
}

TEST(AimdWindow, CwndNeverFallsBelowOne) {
  aimd_window w{config(1.5, 1024, 0.5, aimd_variant::reno)};
  w.enqueue(10);
  auto sent = send_all(w);  // 0 < 1.5 and 1 < 1.5: two fly
  ASSERT_EQ(sent.size(), 2U);
  w.on_error(sent[0]);  // ssthresh = 0.75; the seed's cwnd would be 0.75, ours is 1
  EXPECT_EQ(w.ssthresh(), 0.75);
  EXPECT_EQ(w.cwnd(), 1.0);
  EXPECT_FALSE(w.try_send().has_value()) << "one still flies, as with cwnd = 0.75";
  w.on_success(sent[1]);  // f = 1 >= ssthresh: min(2, 1 + 1/1) = 2
  EXPECT_EQ(w.cwnd(), 2.0);
}

TEST(AimdWindow, CopiesTakeTheState) {
  aimd_window w{config(5, 1024, 0.5, aimd_variant::tahoe)};
  w.enqueue(10);
  auto sent = send_all(w);
  w.on_error(sent[0]);
  aimd_window copy{w};
  EXPECT_EQ(copy.snapshot().cuts, 1U);
  EXPECT_EQ(copy.flying(), 4U);
  EXPECT_EQ(copy.pending(), 6U);
  EXPECT_EQ(copy.try_send()->request(), 0U);
  EXPECT_EQ(w.pending(), 6U) << "the original is untouched";
}

// ---------------------------------------------------------------------------------------------
// The seed, transcribed literally with real sets, as the reference for the O(1) window.

class literal_seed_window {
 public:
  explicit literal_seed_window(const aimd_config& c)
      : c_(c), cwnd_(c.initial), ssthresh_(c.ssthresh) {}

  void enqueue(request_id id) { queue_.push_back(id); }
  std::optional<request_id> try_send() {
    if (!(static_cast<double>(flying_.size()) < cwnd_) || queue_.empty()) return std::nullopt;
    const request_id id = queue_.front();
    queue_.pop_front();
    flying_.insert(id);
    return id;
  }
  void on_success(request_id id) {
    const double f = static_cast<double>(flying_.size());
    if (f < ssthresh_) {
      cwnd_ = std::max(cwnd_, std::min(f + 1, cwnd_ + 1));
    } else {
      cwnd_ = std::max(cwnd_, std::min(f + 1, cwnd_ + 1.0 / cwnd_));
    }
    flying_.erase(id);
  }
  void on_error(request_id id) {
    if (!ignored_.contains(id)) {
      ssthresh_ = cwnd_ * c_.decrease;
      cwnd_ = c_.variant == aimd_variant::tahoe ? c_.initial : ssthresh_;
      cwnd_ = std::max(cwnd_, 1.0);  // the library's documented floor
      ignored_ = flying_;            // a deep copy, id included
      ++cuts_;
    }
    flying_.erase(id);
    queue_.push_front(id);
  }
  double cwnd() const { return cwnd_; }
  double ssthresh() const { return ssthresh_; }
  std::size_t flying() const { return flying_.size(); }
  std::size_t pending() const { return queue_.size(); }
  std::uint64_t cuts() const { return cuts_; }

 private:
  aimd_config c_;
  double cwnd_;
  double ssthresh_;
  std::set<request_id> flying_;
  std::set<request_id> ignored_;
  std::deque<request_id> queue_;
  std::uint64_t cuts_ = 0;
};

void run_against_literal_seed(const aimd_config& c, std::uint64_t seed, double error_rate) {
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + c.to_string());
  backoff::random_generator rng{seed};
  aimd_window w{c};
  literal_seed_window ref{c};
  std::vector<send_ticket> in_flight;
  request_id next = 0;
  for (int step = 0; step < 20000; ++step) {
    const double u = backoff::uniform01(rng);
    if (u < 0.05) {  // new work
      const auto n = 1 + (rng() % 8);
      EXPECT_EQ(w.enqueue(n), next);
      for (std::uint64_t i = 0; i < n; ++i) ref.enqueue(next++);
    } else if (u < 0.45) {  // send what the window allows
      for (;;) {
        const auto t = w.try_send();
        const auto r = ref.try_send();
        ASSERT_EQ(t.has_value(), r.has_value()) << "step " << step;
        if (!t) break;
        ASSERT_EQ(t->request(), *r) << "step " << step;
        in_flight.push_back(*t);
      }
    } else if (!in_flight.empty()) {  // a response to a random outstanding send
      const std::size_t i = static_cast<std::size_t>(rng() % in_flight.size());
      const send_ticket t = in_flight[i];
      in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
      if (backoff::uniform01(rng) < error_rate) {
        w.on_error(t);
        ref.on_error(t.request());
      } else {
        w.on_success(t);
        ref.on_success(t.request());
      }
    }
    const auto s = w.snapshot();
    ASSERT_EQ(s.cwnd, ref.cwnd()) << "step " << step;
    ASSERT_EQ(s.ssthresh, ref.ssthresh()) << "step " << step;
    ASSERT_EQ(s.flying, ref.flying()) << "step " << step;
    ASSERT_EQ(s.pending, ref.pending()) << "step " << step;
    ASSERT_EQ(s.cuts, ref.cuts()) << "step " << step;
  }
}

TEST(AimdWindow, MatchesTheSeedWithRealSets) {
  const aimd_config configs[] = {
      config(20, 1024, 0.5, aimd_variant::tahoe), config(20, 1024, 0.9, aimd_variant::reno),
      config(3, 8, 0.5, aimd_variant::reno), config(2, 4, 0.9, aimd_variant::tahoe)};
  std::uint64_t seed = 1;
  for (const aimd_config& c : configs) {
    for (const double error_rate : {0.05, 0.3, 0.8})
      run_against_literal_seed(c, seed++, error_rate);
  }
}

// ---------------------------------------------------------------------------------------------
// Specs.

void window_should_fail(std::string_view text, std::string_view fragment,
                        std::source_location where = std::source_location::current()) {
  const auto fail_at = [&](const std::string& why) {
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << why;
  };
  try {
    const aimd_config c = parse_window(text);
    fail_at("\"" + std::string(text) + "\" parsed as " + c.to_string());
  } catch (const backoff::parse_error& e) {
    const std::string message = e.what();
    if (message.find(fragment) == std::string::npos) {
      fail_at("message: " + message + "\nexpected to contain: " + std::string(fragment));
    }
    if (message.find('\n') != std::string::npos) fail_at("not one line: " + message);
    if (message.find(std::string(text)) == std::string::npos)
      fail_at("spec not quoted: " + message);
  }
}

TEST(WindowSpec, ReadsTheScenarioFileExample) {
  const aimd_config c = parse_window("aimd(initial=20, ssthresh=1024, decrease=0.9, variant=reno)");
  EXPECT_EQ(c, config(20, 1024, 0.9, aimd_variant::reno));
  EXPECT_EQ(parse_window("aimd"), aimd_config{});
  EXPECT_EQ(parse_window("aimd()"), aimd_config{});
  EXPECT_EQ(parse_window(" aimd( decrease = 0.9 ) ").decrease, 0.9);
}

TEST(WindowSpec, CanonicalTextRoundTrips) {
  const aimd_config c = config(12.5, 64, 0.75, aimd_variant::reno);
  EXPECT_EQ(c.to_string(), "aimd(initial=12.5, ssthresh=64, decrease=0.75, variant=reno)");
  EXPECT_EQ(parse_window(c.to_string()), c);
  EXPECT_EQ(aimd_config{}.to_string(),
            "aimd(initial=20, ssthresh=1024, decrease=0.5, variant=tahoe)");
}

TEST(WindowSpec, RejectsBadSpecsWithOneLine) {
  window_should_fail("vegas(initial=20)", "unknown window \"vegas\" (known: aimd)");
  window_should_fail("aimd(cwnd=20)", "unknown parameter \"cwnd\"");
  window_should_fail("aimd(decrease=1)", "decrease=1 must be between 0 and 1");
  window_should_fail("aimd(decrease=0)", "decrease=0 must be between 0 and 1");
  window_should_fail("aimd(initial=0.5)", "initial=0.5 must be a number >= 1");
  window_should_fail("aimd(ssthresh=0)", "ssthresh=0 must be a number > 0");
  window_should_fail("aimd(variant=vegas)", "variant=vegas must be tahoe or reno");
  window_should_fail("aimd(initial=ten)", "initial=ten is not a number");
  window_should_fail("aimd(initial=1, initial=2)", "given twice");
}

}  // namespace

namespace {

// The ignore rule is one function (issue 18): on_error uses it, and the Asio window's mirror
// calls it. Its table, then on_error agreeing with it on a real window.
TEST(AimdWindowIgnoreRule, IsTheRequestInFlightAtTheLastCut) {
  using backoff::aimd_window;
  static_assert(!aimd_window::error_ignored(0, 0, 0));  // no cut yet: every error cuts
  static_assert(aimd_window::error_ignored(0, 0, 1));   // sent before the cut: in flight at it
  static_assert(!aimd_window::error_ignored(1, 0, 1));  // sent after the only cut
  static_assert(aimd_window::error_ignored(2, 2, 2));   // an earlier send was in flight at cut 2
  static_assert(!aimd_window::error_ignored(2, 1, 2));  // ... only at cut 1: not ignored
  static_assert(aimd_window::last_cut_seen(1, 0, 3) == 3);
  static_assert(aimd_window::last_cut_seen(3, 2, 3) == 2);

  aimd_window w;
  w.enqueue(2);
  auto a = w.try_send();
  auto b = w.try_send();
  ASSERT_TRUE(a && b);
  w.on_error(*a, aimd_window::requeue::no);  // the first error cuts
  EXPECT_EQ(w.snapshot().cuts, 1u);
  w.on_error(*b, aimd_window::requeue::no);  // b was in flight at that cut: ignored
  EXPECT_EQ(w.snapshot().cuts, 1u);
  EXPECT_EQ(w.snapshot().ignored, 1u);
}

}  // namespace
