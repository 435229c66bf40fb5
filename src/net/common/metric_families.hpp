// SPDX-License-Identifier: Apache-2.0
// The shape of /metrics families that serve and the proxy both write: a counter with one sample
// per kind of something (a fault, a toxic, an upstream error), labelled with the kind's name.
//
//   counter_by_kind<fault_counter>(out, "backoff_faults_total", "Requests ...", "fault",
//                                  fault_counter_count, fault_counter_name,
//                                  [&](fault_counter c) { return m.faults(c); });
#pragma once

#include <cstdint>
#include <string_view>

#include "backoff/prometheus_text.hpp"

namespace backoff::net {

// The family `name`, then name{label="<name_of(kind)>"} count_of(kind) for each kind, in order.
template <class Kind, class NameOf, class CountOf>
void counter_by_kind(prometheus_writer& out, std::string_view name, std::string_view help,
                     std::string_view label, unsigned kinds, NameOf name_of, CountOf count_of) {
  out.family(name, prometheus_type::counter, help);
  for (unsigned k = 0; k < kinds; ++k) {
    const auto kind = static_cast<Kind>(k);
    out.sample(name, {{label, name_of(kind)}}, std::uint64_t{count_of(kind)});
  }
}

}  // namespace backoff::net
