// SPDX-License-Identifier: Apache-2.0
// The fault and toxic specs read through their key tables (spec_keys.hpp): a misspelt key or kind
// gets a did-you-mean, a key of another kind or distribution is still refused, canonical fault
// texts are pinned and read back the same, and docs/NETWORK.md carries both key tables verbatim.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backoff/error.hpp"
#include "faults/faults.hpp"
#include "net/proxy/toxics.hpp"
#include "source_doc.hpp"

namespace {

using namespace backoff::net;
using namespace backoff::faults;

template <class Parse>
std::string error_of(Parse parse, std::string_view text) {
  try {
    (void)parse(text);
  } catch (const backoff::parse_error& e) {
    return e.what();
  }
  return "";
}

std::string fault_error(std::string_view text) {
  return error_of([](std::string_view t) { return parse_fault(t); }, text);
}
std::string toxic_error(std::string_view text) {
  return error_of([](std::string_view t) { return parse_toxic(t); }, text);
}

TEST(SpecKeysNet, AMisspeltFaultKeyOrKindGetsTheClosestName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"errors(stauts=503)",
       "'stauts' does not apply to errors (its keys: status, fade, rate); did you "
       "mean 'status'?"},
      {"latency(distribution=paretto, scale=1ms, shape=2)", "; did you mean 'pareto'?"},
      {"outage(acton=reset)", "; did you mean 'action'?"},
      {"slow_body(size=1KiB, sped=1KiB/s)", "; did you mean 'speed'?"},
      {"latncy(delay=1s)",
       "unknown fault 'latncy' (known: errors, latency, partial, outage, "
       "slow_body, capacity, cold_start); did you mean 'latency'?"},
  };
  for (const auto& [spec, part] : cases) {
    const std::string m = fault_error(spec);
    EXPECT_TRUE(m.starts_with("bad fault \"" + spec + "\": ")) << m;
    EXPECT_NE(m.find(part), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(SpecKeysNet, FaultKeysOfAnotherKindOrDistributionAreStillRefused) {
  EXPECT_NE(fault_error("errors(delay=5ms)").find("'delay' does not apply to errors"),
            std::string::npos);
  EXPECT_NE(fault_error("latency(distribution=exponential, mean=1ms, lo=1ms)")
                .find("'lo' does not apply to exponential latency"),
            std::string::npos);
  EXPECT_NE(fault_error("latency(distribution=uniform, lo=1ms)")
                .find("missing 'hi' (uniform latency takes 'lo' and 'hi')"),
            std::string::npos);
  EXPECT_NE(fault_error("outage(action=hang, status=503)").find("'status' applies to"),
            std::string::npos);
}

TEST(SpecKeysNet, CanonicalFaultTextsArePinnedAndReadBackTheSame) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"errors(rate=5%)", "errors(status=503, rate=5%)"},
      {"latency(delay=100ms)", "latency(distribution=fixed, delay=100ms, rate=100%)"},
      {"latency(rate=50%, distribution=uniform, hi=20ms, lo=10ms)",
       "latency(distribution=uniform, lo=10ms, hi=20ms, rate=50%)"},
      {"latency(distribution=lognormal, median=20ms, sigma=1)",
       "latency(distribution=lognormal, median=20ms, sigma=1, rate=100%)"},
      {"latency(distribution=pareto, scale=10ms, shape=1.5)",
       "latency(distribution=pareto, scale=10ms, shape=1.5, rate=100%)"},
      {"partial(header=X-Shard, value=[3, 7])",
       "partial(header=x-shard, value=[3, 7], status=503, rate=100%)"},
      {"partial(path=/api, status=502)", "partial(path=/api, status=502, rate=100%)"},
      {"outage(action=reset)", "outage(action=reset, rate=100%)"},
      {"outage(status=500)", "outage(status=500, rate=100%)"},
      {"slow_body(size=16384, speed=4KiB/s)", "slow_body(size=16KiB, speed=4096B/s, rate=100%)"},
  };
  for (const auto& [spec, text] : cases) {
    EXPECT_EQ(parse_fault(spec).spec, text) << spec;
    EXPECT_EQ(parse_fault(text).spec, text) << spec;
  }
}

TEST(SpecKeysNet, AMisspeltToxicKeyOrKindGetsTheClosestName) {
  EXPECT_EQ(toxic_error("latency(jiter=1ms)"),
            "bad toxic \"latency(jiter=1ms)\": unknown parameter \"jiter\" for latency (known: "
            "latency, jitter, toxicity, stream); did you mean 'jitter'?");
  EXPECT_NE(toxic_error("slicer(average_sise=8)").find("; did you mean 'average_size'?"),
            std::string::npos);
  EXPECT_NE(toxic_error("bandwith(rate=1KiB/s)").find("; did you mean 'bandwidth'?"),
            std::string::npos);
  // A key of another kind is refused, with the kind's own keys.
  EXPECT_EQ(toxic_error("timeout(bytes=1KiB)"),
            "bad toxic \"timeout(bytes=1KiB)\": unknown parameter \"bytes\" for timeout (known: "
            "timeout, toxicity, stream)");
}

using backoff::testing::read_doc;

TEST(SpecKeysNet, NetworkMdCarriesTheFaultAndToxicKeyTablesVerbatim) {
  const std::string doc = read_doc("NETWORK.md");
  ASSERT_FALSE(doc.empty()) << "cannot read docs/NETWORK.md";
  for (const std::string& table : {fault_keys_markdown(), toxic_keys_markdown()}) {
    EXPECT_NE(doc.find("\n\n" + table + "\n"), std::string::npos)
        << "docs/NETWORK.md lacks a key table; it should read:\n"
        << table;
  }
}

}  // namespace
