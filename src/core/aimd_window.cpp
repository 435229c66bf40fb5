// SPDX-License-Identifier: Apache-2.0
// The AIMD window's cut, its configuration and its spec reader.
#include "backoff/aimd_window.hpp"

#include <cmath>
#include <optional>
#include <string>

#include "backoff/error.hpp"
#include "backoff/spec.hpp"
#include "backoff/spec_keys.hpp"
#include "overload_spec.hpp"

namespace backoff {

std::string_view to_string(aimd_variant v) noexcept {
  return v == aimd_variant::tahoe ? "tahoe" : "reno";
}

void aimd_config::validate() const {
  using detail::spec_number_text;
  if (!(std::isfinite(initial) && initial >= 1.0)) {
    throw parse_error("initial=" + spec_number_text(initial) + " must be a number >= 1");
  }
  if (!(std::isfinite(ssthresh) && ssthresh > 0.0)) {
    throw parse_error("ssthresh=" + spec_number_text(ssthresh) + " must be a number > 0");
  }
  if (!(decrease > 0.0 && decrease < 1.0)) {
    throw parse_error("decrease=" + spec_number_text(decrease) + " must be between 0 and 1");
  }
}

namespace {

constexpr std::string_view window_what = "window";
constexpr std::string_view window_names[] = {"aimd"};

std::optional<std::string> window_number_text(double v) {
  return detail::spec_number_text(v);
}

// The window spec's keys: one variant, aimd.
constexpr spec_key<aimd_config> window_keys[] = {
    {"initial", all_variants, "a number >= 1", "20", "cwnd at the start and after a Tahoe cut",
     [](aimd_config& c, const spec_value& v) { c.initial = v.number(); },
     [](const aimd_config& c) { return window_number_text(c.initial); }},
    {"ssthresh", all_variants, "a number > 0", "1024", "the starting slow-start threshold",
     [](aimd_config& c, const spec_value& v) { c.ssthresh = v.number(); },
     [](const aimd_config& c) { return window_number_text(c.ssthresh); }},
    {"decrease", all_variants, "a number in (0, 1)", "0.5", "on a cut, ssthresh = cwnd * decrease",
     [](aimd_config& c, const spec_value& v) { c.decrease = v.number(); },
     [](const aimd_config& c) { return window_number_text(c.decrease); }},
    {"variant", all_variants, "`tahoe` or `reno`", "`tahoe`",
     "after a cut, cwnd = initial (tahoe) or ssthresh (reno)",
     [](aimd_config& c, const spec_value& v) {
       if (v.text() == "tahoe") {
         c.variant = aimd_variant::tahoe;
       } else if (v.text() == "reno") {
         c.variant = aimd_variant::reno;
       } else {
         detail::spec_fail(v.what, v.spec, "variant=" + v.text() + " must be tahoe or reno");
       }
     },
     [](const aimd_config& c) -> std::optional<std::string> {
       return std::string(backoff::to_string(c.variant));
     }},
};

}  // namespace

std::string aimd_config::to_string() const {
  return write_spec(window_names[0], window_keys, *this);
}

aimd_config parse_window(std::string_view text) {
  return detail::read_named_spec(window_what, "window", text, window_names, window_keys);
}

std::string detail::window_keys_markdown() {
  return key_table_markdown(window_keys, spec_variants{window_names, {}});
}

aimd_window::aimd_window(const aimd_config& config)
    : config_(config), cwnd_(std::max(config.initial, 1.0)), ssthresh_(config.ssthresh) {
  // Room for the failures of a few full windows, so that resends do not allocate in the common
  // case; beyond that the stack grows geometrically and keeps its memory.
  failed_.reserve(static_cast<std::size_t>(std::min(config_.initial, 1024.0)) * 4);
}

aimd_window::aimd_window(const aimd_window& other) {
  *this = other;
}

aimd_window& aimd_window::operator=(const aimd_window& other) {
  if (this == &other) return *this;
  // std::lock's deadlock-free algorithm: two windows assigned to each other at once never wait
  // on each other.
  std::scoped_lock guard{lock_, other.lock_};
  failed_ = other.failed_;  // first: the one copy that can throw then leaves this window as it was
  config_ = other.config_;
  cwnd_ = other.cwnd_;
  ssthresh_ = other.ssthresh_;
  flying_ = other.flying_;
  cuts_ = other.cuts_;
  ignored_errors_ = other.ignored_errors_;
  next_id_ = other.next_id_;
  next_fresh_ = other.next_fresh_;
  return *this;
}

void aimd_window::on_error(const send_ticket& ticket, requeue again) {
  // Is the request in `ignored`, the copy of `flying` taken at the last cut (number cuts_)?
  //
  // Claim: with cuts numbered 1, 2, ..., C = cuts_ > 0, and S the send now failing, the request
  // r was in flying at cut C  <=>  S was made before cut C, or an earlier send of r was in
  // flight at cut C.
  //   (<=) S is answered only now; made before cut C, it was unanswered at cut C, so r was in
  //        flying then. The other case is r in flying at cut C by definition.
  //   (=>) r in flying at cut C means one of its sends was in flight then: S, which was then
  //        made before cut C, or an earlier one. (A request has at most one send in flight: it
  //        is queued, in flight, or done.)
  // "S was made before cut C" is ticket.cuts_before_ < C. For the other case the ticket carries
  // the last cut at which an earlier send was in flight; cut numbers only grow, so that earlier
  // send was in flight at cut C iff the carried number equals C. Below, `last_in_flight` is the
  // same quantity with S included, which is what the next send of r must carry; and when S
  // makes a cut, r is in that cut's copy of flying (the header says why), so it becomes C + 1.
  std::lock_guard guard{lock_};
  std::uint64_t last_in_flight =
      last_cut_seen(ticket.cuts_before_, ticket.last_cut_in_flight_, cuts_);
  const bool ignored = error_ignored(ticket.cuts_before_, ticket.last_cut_in_flight_, cuts_);
  if (ignored) {
    ++ignored_errors_;
  } else {
    ssthresh_ = cwnd_ * config_.decrease;
    cwnd_ = std::max(config_.variant == aimd_variant::tahoe ? config_.initial : ssthresh_, 1.0);
    ++cuts_;
    last_in_flight = cuts_;
  }
  if (flying_ > 0) --flying_;
  if (again == requeue::yes) failed_.push_back({ticket.request_, last_in_flight});
}

aimd_window::state aimd_window::snapshot() const noexcept {
  std::lock_guard guard{lock_};
  return {cwnd_, ssthresh_, flying_, pending_locked(), cuts_, ignored_errors_};
}

}  // namespace backoff
