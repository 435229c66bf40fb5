// SPDX-License-Identifier: Apache-2.0
// `backoff forany` fails over first, as the Fault Tolerant Shell's forany inside a `try` does
// (ftsh's ast_forany_execute: one pass over the items, no delay between them; the backoff of an
// enclosing `try` between passes): a round is one attempt of each item in order, the first
// success ends the run, --times counts rounds, the policy's wait comes only between rounds, and
// --for bounds the whole run. The attempt order is read from a file every attempt appends its
// item (and BACKOFF_ATTEMPT, the round) to; stderr lines are compared whole, with the measured
// times replaced by "T".
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace {

namespace fs = std::filesystem;
// Not `json`: a unity batch of the CLI tests also holds variables of that name.
using rounds_json = nlohmann::json;

class rounds_scratch : public backoff::test::test_scratch {
 public:
  rounds_scratch() : test_scratch("forany-rounds") {}
};

// Waits between rounds short enough that they cost nothing.
const std::vector<std::string> rounds_fast{"--policy", "constant(initial=10ms)"};

std::vector<std::string> rounds_args(std::vector<std::string> head,
                                     const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

struct rounds_run {
  backoff::test::cli_result cli;
  double elapsed_s = 0;
};

rounds_run rounds_run_cli(const std::vector<std::string>& args) {
  const auto start = std::chrono::steady_clock::now();
  rounds_run r;
  r.cli = backoff::test::run_cli(args);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// stderr's lines with every measured time ("after 0.003s") written "after T".
std::vector<std::string> rounds_err_lines(const backoff::test::cli_result& r) {
  static const std::regex measured(R"(after [0-9]+\.[0-9]{3}s)");
  std::vector<std::string> lines = r.err_lines();
  for (std::string& line : lines) line = std::regex_replace(line, measured, "after T");
  return lines;
}

std::vector<std::string> rounds_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

rounds_json rounds_report(const rounds_scratch& s) {
  const std::string text = s.read("r.json");
  if (text.empty()) {
    ADD_FAILURE() << "no report";
    return rounds_json::object();
  }
  return rounds_json::parse(text);
}

// Each attempt appends "ITEM ROUND" to the file `log`, then runs `then` (with {} the item).
std::vector<std::string> rounds_command(const rounds_scratch& s, const std::string& then) {
  return s.sh("echo {} $BACKOFF_ATTEMPT >> log; " + then);
}

// The issue's case: two dead mirrors before a live one used to get every attempt of theirs (five
// each, with the default ftsh policy's waits: 1+2+4+8 s times U(1, 2) for each, 48 s in the
// report) before the live one was tried. Now the live one is tried in the first round: three
// attempts, no wait, with the default flags.
TEST(ForanyRounds, TwoDeadMirrorsCostOneRoundNotTheirWholeSchedules) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(
      rounds_args({"forany", "--report", (s / "r.json").string(), "m1", "m2", "m3", "--"},
                  rounds_command(s, "[ {} = m3 ]")));
  EXPECT_EQ(r.cli.status, 0) << r.cli.err;
  EXPECT_EQ(s.read("log"), "m1 1\nm2 1\nm3 1\n");
  EXPECT_EQ(rounds_err_lines(r.cli),
            (std::vector<std::string>{
                "backoff forany: [m1] attempt 1/5: exit status 1 after T; next: [m2] at once",
                "backoff forany: [m2] attempt 1/5: exit status 1 after T; next: [m3] at once"}));
  const rounds_json report = rounds_report(s);
  EXPECT_EQ(report["winner"], "m3");
  EXPECT_EQ(report["rounds"], 1);
  double waited = 0;
  for (const rounds_json& item : report["items"]) {
    for (const rounds_json& a : item["attempts"]) {
      if (!a["delay_s"].is_null()) waited += a["delay_s"].get<double>();
    }
  }
  EXPECT_EQ(waited, 0.0);
  // The old order spent at least 2 x (1 + 2 + 4 + 8) s waiting before m3; a generous bound.
  EXPECT_LT(r.elapsed_s, 10.0);
}

TEST(ForanyRounds, TheLiveThirdSucceedsInRoundOneAfterOneAttemptOfEachDeadOne) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args({"forany", "--times", "4", "--report", (s / "r.json").string()}, rounds_fast),
      rounds_args({"a", "b", "c", "--"}, rounds_command(s, "[ {} = c ]"))));
  EXPECT_EQ(r.cli.status, 0) << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1\nb 1\nc 1\n");
  const rounds_json report = rounds_report(s);
  EXPECT_EQ(report["outcome"], "succeeded");
  EXPECT_EQ(report["status"], 0);
  EXPECT_EQ(report["winner"], "c");
  EXPECT_EQ(report["rounds"], 1);
  const rounds_json& items = report["items"];
  ASSERT_EQ(items.size(), 3U);
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    // Failed, with rounds still to come: the winner is why it was not tried again.
    EXPECT_EQ(items[i]["outcome"], "another_item_succeeded");
    EXPECT_EQ(items[i]["status"], 1);
    ASSERT_EQ(items[i]["attempts"].size(), 1U);
    EXPECT_EQ(items[i]["attempts"][0]["attempt"], 1);
    EXPECT_EQ(items[i]["attempts"][0]["delay_s"], 0.0) << "the next item follows at once";
  }
  EXPECT_EQ(items[2]["outcome"], "succeeded");
  EXPECT_TRUE(items[2]["attempts"][0]["delay_s"].is_null());
}

// --times 3, every item dead: three rounds, the items in order in each; the waits (the lines'
// "next round", the report's delay_s) come only after a round's last item, and none after the
// last round.
TEST(ForanyRounds, AllDeadMakesExactlyTimesRoundsWaitingOnlyBetweenThem) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args({"forany", "--times", "3", "--report", (s / "r.json").string()}, rounds_fast),
      rounds_args({"a", "b", "c", "--"},
                  rounds_command(s, "case {} in a) exit 3;; b) exit 4;; *) exit 5;; esac"))));
  EXPECT_EQ(r.cli.status, 5) << "the last item tried: " << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1\nb 1\nc 1\na 2\nb 2\nc 2\na 3\nb 3\nc 3\n");
  EXPECT_EQ(
      rounds_err_lines(r.cli),
      (std::vector<std::string>{
          "backoff forany: [a] attempt 1/3: exit status 3 after T; next: [b] at once",
          "backoff forany: [b] attempt 1/3: exit status 4 after T; next: [c] at once",
          "backoff forany: [c] attempt 1/3: exit status 5 after T; next round (2/3) in 0.010s",
          "backoff forany: [a] attempt 2/3: exit status 3 after T; next: [b] at once",
          "backoff forany: [b] attempt 2/3: exit status 4 after T; next: [c] at once",
          "backoff forany: [c] attempt 2/3: exit status 5 after T; next round (3/3) in 0.010s",
          "backoff forany: [a] attempt 3/3: exit status 3 after T; next: [b] at once",
          "backoff forany: [b] attempt 3/3: exit status 4 after T; next: [c] at once",
          "backoff forany: giving up: no rounds left"}));
  const rounds_json report = rounds_report(s);
  EXPECT_EQ(report["outcome"], "attempts_exhausted");
  EXPECT_EQ(report["status"], 5);
  EXPECT_TRUE(report["winner"].is_null());
  EXPECT_EQ(report["rounds"], 3);
  const rounds_json& items = report["items"];
  ASSERT_EQ(items.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(items[i]["outcome"], "attempts_exhausted");
    EXPECT_EQ(items[i]["status"], 3 + static_cast<int>(i));
    const rounds_json& attempts = items[i]["attempts"];
    ASSERT_EQ(attempts.size(), 3U);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(attempts[k]["attempt"], k + 1);
      const bool last_of_run = i == 2 && k == 2;
      if (last_of_run) {
        EXPECT_TRUE(attempts[k]["delay_s"].is_null());
      } else {
        EXPECT_EQ(attempts[k]["delay_s"], i == 2 ? 0.01 : 0.0) << k;
      }
    }
  }
}

TEST(ForanyRounds, BackoffAttemptIsTheRoundAndMaxAttemptsTheRounds) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args({"forany", "--times", "3"}, rounds_fast),
      rounds_args({"a", "b", "--"}, s.sh("echo {} $BACKOFF_ATTEMPT/$BACKOFF_MAX_ATTEMPTS >> log; "
                                         "[ {} = b ] && [ $BACKOFF_ATTEMPT = 2 ]"))));
  EXPECT_EQ(r.cli.status, 0) << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1/3\nb 1/3\na 2/3\nb 2/3\n");
}

TEST(ForanyRounds, VerboseSaysTheSuccessAndTheRoundOfTheWinner) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(
      rounds_args(rounds_args({"forany", "-v", "--times", "3"}, rounds_fast),
                  rounds_args({"a", "b", "--"}, s.sh("[ {} = b ] && [ $BACKOFF_ATTEMPT = 2 ]"))));
  EXPECT_EQ(r.cli.status, 0) << r.cli.err;
  EXPECT_EQ(
      rounds_err_lines(r.cli),
      (std::vector<std::string>{
          "backoff forany: [a] attempt 1/3: exit status 1 after T; next: [b] at once",
          "backoff forany: [b] attempt 1/3: exit status 1 after T; next round (2/3) in 0.010s",
          "backoff forany: [a] attempt 2/3: exit status 1 after T; next: [b] at once",
          "backoff forany: [b] attempt 2/3: exit status 0 after T: done",
          "backoff forany: b succeeded in round 2"}));
}

// With a seed, --shuffle starts at a random item and goes round in order; every round keeps the
// order of the first.
TEST(ForanyRounds, ShuffleStartsAtARandomItemAndEveryRoundGoesRoundTheSame) {
  const std::vector<std::string> items{"a", "b", "c", "d", "e"};
  std::set<std::string> firsts;
  for (int seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    const rounds_scratch s;
    const auto r = rounds_run_cli(rounds_args(
        rounds_args({"forany", "--times", "2", "--shuffle", "--seed", std::to_string(seed)},
                    rounds_fast),
        rounds_args({"a", "b", "c", "d", "e", "--"}, s.sh("echo {} >> log; exit 1"))));
    EXPECT_EQ(r.cli.status, 1) << r.cli.err;
    const std::vector<std::string> order = rounds_lines(s.read("log"));
    ASSERT_EQ(order.size(), 2 * items.size()) << "every item once in each of two rounds";
    const auto start = std::find(items.begin(), items.end(), order[0]);
    ASSERT_NE(start, items.end());
    const auto offset = static_cast<std::size_t>(start - items.begin());
    for (std::size_t k = 0; k < order.size(); ++k) {
      EXPECT_EQ(order[k], items[(offset + k) % items.size()]) << k;
    }
    firsts.insert(order[0]);
  }
  EXPECT_GE(firsts.size(), 2U) << "six seeds, always the same first item";
}

// An item whose failure is not retryable (a shell's 127) is dropped from later rounds; the others
// go on.
TEST(ForanyRounds, AnItemThatIsNotRetryableIsDroppedFromLaterRounds) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args({"forany", "--times", "2", "--report", (s / "r.json").string()}, rounds_fast),
      rounds_args({"a", "b", "--"}, rounds_command(s, "[ {} = a ] && exit 127; exit 1"))));
  EXPECT_EQ(r.cli.status, 1) << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1\nb 1\nb 2\n");
  EXPECT_EQ(
      rounds_err_lines(r.cli),
      (std::vector<std::string>{
          "backoff forany: [a] attempt 1/2: exit status 127 after T; not retryable; next: [b] at "
          "once",
          "backoff forany: [b] attempt 1/2: exit status 1 after T; next round (2/2) in 0.010s",
          "backoff forany: giving up: no rounds left"}));
  const rounds_json report = rounds_report(s);
  EXPECT_EQ(report["items"][0]["outcome"], "not_retryable");
  EXPECT_EQ(report["items"][1]["outcome"], "attempts_exhausted");
  EXPECT_EQ(report["rounds"], 2);
}

TEST(ForanyRounds, WhenNoItemIsRetryableTheRunEndsWithTheLastStatus) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args({"forany", "--times", "3", "--report", (s / "r.json").string()}, rounds_fast),
      rounds_args({"a", "b", "--"}, rounds_command(s, "[ {} = a ] && exit 126; exit 127"))));
  EXPECT_EQ(r.cli.status, 127) << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1\nb 1\n");
  EXPECT_EQ(rounds_err_lines(r.cli).back(),
            "backoff forany: giving up: no item left whose failure is retryable");
  const rounds_json report = rounds_report(s);
  EXPECT_EQ(report["outcome"], "not_retryable");
  EXPECT_EQ(report["rounds"], 1);
}

// --for bounds the whole run: the attempt running at the deadline is stopped (124) and no later
// item of the round starts.
TEST(ForanyRounds, ForStopsTheRunMidRoundWithTheStoppedAttemptsStatus) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args(
          {"forany", "--for", "400ms", "--grace", "100ms", "--report", (s / "r.json").string()},
          rounds_fast),
      rounds_args({"a", "b", "c", "--"},
                  rounds_command(s, "[ {} = a ] && exit 1; [ {} = b ] && exec sleep 30; true"))));
  EXPECT_EQ(r.cli.status, 124) << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1\nb 1\n");
  EXPECT_EQ(rounds_err_lines(r.cli),
            (std::vector<std::string>{
                "backoff forany: [a] attempt 1: exit status 1 after T; next: [b] at once",
                "backoff forany: giving up: the deadline has come"}));
  const rounds_json report = rounds_report(s);
  EXPECT_EQ(report["outcome"], "deadline_exceeded");
  EXPECT_EQ(report["status"], 124);
  EXPECT_EQ(report["rounds"], 1);
  ASSERT_EQ(report["items"].size(), 2U);
  EXPECT_EQ(report["items"][1]["attempts"][0]["ended"], "timed_out");
  EXPECT_LT(r.elapsed_s, 10.0);
}

// Less than 100 ms left when an item ends: the next item of the round is not started (a retry's
// rule under --for), and the run ends with that item's status. Where the machine is too slow
// for the item to end before the deadline, it is stopped there instead (124): either way the
// third item never runs.
TEST(ForanyRounds, ForStartsNoItemWithLessThanTheMinimumLeft) {
  const rounds_scratch s;
  const auto r = rounds_run_cli(
      rounds_args(rounds_args({"forany", "--for", "1s", "--grace", "100ms"}, rounds_fast),
                  rounds_args({"a", "b", "--"}, rounds_command(s, "sleep 0.95; exit 3"))));
  EXPECT_EQ(s.read("log"), "a 1\n");
  const std::vector<std::string> err = rounds_err_lines(r.cli);
  ASSERT_FALSE(err.empty());
  if (r.cli.status == 3) {
    // a's attempt ended before the deadline (the usual case), or, on a loaded machine, in the
    // moment between the deadline and its stop: either way b never started.
    EXPECT_TRUE(std::regex_match(err.back(),
                                 std::regex(R"(backoff forany: giving up: only 0\.0[0-9]{2}s left )"
                                            R"(before the deadline, less than the 0\.100s an )"
                                            R"(attempt needs; round 1 not finished)")) ||
                err.back() == "backoff forany: giving up: the deadline has come")
        << err.back();
  } else {
    EXPECT_EQ(r.cli.status, 124) << r.cli.err;
    EXPECT_EQ(err.back(), "backoff forany: giving up: the deadline has come");
  }
}

// Between rounds, --for keeps try's rule: no round starts with less than 100 ms left once its
// wait is over.
TEST(ForanyRounds, ForStartsNoRoundThatTheWaitWouldPushPastTheDeadline) {
  const rounds_scratch s;
  const auto r =
      rounds_run_cli(rounds_args({"forany", "--for", "2s", "--policy", "constant(initial=5s)"},
                                 rounds_args({"a", "b", "--"}, rounds_command(s, "exit 2"))));
  EXPECT_EQ(r.cli.status, 2) << r.cli.err;
  EXPECT_EQ(s.read("log"), "a 1\nb 1\n");
  const std::vector<std::string> err = rounds_err_lines(r.cli);
  ASSERT_EQ(err.size(), 2U) << r.cli.err;
  EXPECT_EQ(err[0], "backoff forany: [a] attempt 1: exit status 2 after T; next: [b] at once");
  EXPECT_TRUE(
      err[1].starts_with("backoff forany: giving up: the next wait would reach the deadline, "))
      << err[1];
  EXPECT_LT(r.elapsed_s, 4.5) << "the 5 s wait was not begun";
}

// Replays ftsh's own forany test (cctools ftsh/test/forany.ftsh, forany.expect): over 1 2 3 4 5
// the item whose product with 5 is 15 wins; over 1 2 4 5 inside `try for 5 seconds` nothing
// wins, and the try fails when its time is up (here 300 ms rather than 5 s). The rounds go on in
// order until the deadline ends the run, with the last item's status (1) or, when the deadline
// stopped a running attempt, 124.
TEST(ForanyRounds, ReplaysFtshsForanyTest) {
  const rounds_scratch s;
  const auto found = rounds_run_cli(
      rounds_args({"forany", "--report", (s / "r.json").string(), "1", "2", "3", "4", "5", "--"},
                  rounds_command(s, "[ $(({} * 5)) -eq 15 ]")));
  EXPECT_EQ(found.cli.status, 0) << found.cli.err;
  EXPECT_EQ(s.read("log"), "1 1\n2 1\n3 1\n");
  EXPECT_EQ(rounds_report(s)["winner"], "3");

  const rounds_scratch missing;
  const auto r = rounds_run_cli(rounds_args(
      rounds_args({"forany", "--for", "300ms", "--grace", "100ms"}, rounds_fast),
      rounds_args({"1", "2", "4", "5", "--"}, rounds_command(missing, "[ $(({} * 5)) -eq 15 ]"))));
  EXPECT_TRUE(r.cli.status == 1 || r.cli.status == 124) << r.cli.status << r.cli.err;
  const std::vector<std::string> tried = rounds_lines(missing.read("log"));
  ASSERT_GE(tried.size(), 4U) << "at least the first round";
  const std::vector<std::string> cycle{"1", "2", "4", "5"};
  for (std::size_t k = 0; k < tried.size(); ++k) {
    EXPECT_EQ(tried[k], cycle[k % 4] + " " + std::to_string(k / 4 + 1)) << k;
  }
}

}  // namespace
