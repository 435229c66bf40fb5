// SPDX-License-Identifier: Apache-2.0
// Randomness with a specified output. The generator is xoshiro256** (Blackman & Vigna 2018), whose
// output is defined bit for bit, like std::mt19937_64's, but which draws in about 1 ns from 32
// bytes of state (mt19937_64: about 5 ns here, from 2.5 KB), so a simulation can give each of a
// million clients its own stream. The std::*_distribution classes differ between standard
// libraries, so the transforms from bits to numbers live here too. Same seed, same delays, on
// every platform.
//
//   backoff::random_generator rng{42};                 // xoshiro256**, seeded by SplitMix64
//   double u = backoff::uniform01(rng);                // [0, 1)
//   double z = backoff::standard_normal(rng);          // N(0, 1)
//   auto stream = backoff::random_generator{backoff::derive_seed(42, /*stream=*/7)};
//
// Any generator whose output covers the 64 bits exactly (the bit_generator64 concept) works, and
// random_ref type-erases one for code that must not be a template.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>

namespace backoff {

template <class G>
concept bit_generator64 = std::uniform_random_bit_generator<G> &&(G::min() == 0) &&
                          (G::max() == std::numeric_limits<std::uint64_t>::max());

// Uniform on [0, 1): the top 53 bits of one draw, so every double is equally spaced.
template <bit_generator64 G>
double uniform01(G& g) {
  return static_cast<double>(g() >> 11) * 0x1.0p-53;
}

// Uniform on [lo, hi).
template <bit_generator64 G>
double uniform(G& g, double lo, double hi) {
  return lo + (hi - lo) * uniform01(g);
}

// Standard normal by Marsaglia's polar method (Marsaglia & Bray 1964). The second variate of
// each pair is dropped so that a draw depends only on the generator's state.
template <bit_generator64 G>
double standard_normal(G& g) {
  for (;;) {
    const double u = 2.0 * uniform01(g) - 1.0;
    const double v = 2.0 * uniform01(g) - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

// Exponential with the given mean, by inversion: -mean * ln(1 - u).
template <bit_generator64 G>
double exponential_variate(G& g, double mean) {
  // u is a multiple of 2^-53 below 1, so 1 - u is exact (in (0, 1]: the log is finite) and
  // log(1 - u) is log1p(-u) without its cost: glibc's log1p takes about twice log's time, which
  // was 40 % of an M/M/1 run.
  return -mean * std::log(1.0 - uniform01(g));
}

// SplitMix64 (Steele, Lea & Flood 2014): a fast bijective mixer, used to derive seeds.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// xoshiro256** 1.0 (https://prng.di.unimi.it/), a 64-bit generator with 256 bits of state; the
// state is filled from the seed by SplitMix64, as its authors recommend. Satisfies
// std::uniform_random_bit_generator, so it also works with the standard library's algorithms.
class xoshiro256ss {
 public:
  using result_type = std::uint64_t;

  constexpr explicit xoshiro256ss(std::uint64_t seed = 1) noexcept { this->seed(seed); }

  constexpr void seed(std::uint64_t seed) noexcept {
    std::uint64_t x = seed;
    for (std::uint64_t& word : s_) {
      word = splitmix64(x);
      x += 0x9e3779b97f4a7c15ULL;
    }
  }

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  constexpr result_type operator()() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  friend constexpr bool operator==(const xoshiro256ss&, const xoshiro256ss&) = default;

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }
  std::uint64_t s_[4]{};
};

using random_generator = xoshiro256ss;

// An independent seed for stream `stream` of a run seeded with `seed`: components of one
// simulation (each client, the server, the workload) draw from their own streams, so adding a
// draw in one does not shift the numbers of another.
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) noexcept {
  return splitmix64(splitmix64(seed) ^ splitmix64(stream + 0x632be59bd9b4e019ULL));
}

// A non-owning, type-erased reference to a bit_generator64, itself a bit_generator64. It costs
// one indirect call per draw; the referenced generator must outlive it.
class random_ref {
 public:
  using result_type = std::uint64_t;

  template <bit_generator64 G>
  requires(!std::same_as<G, random_ref>) random_ref(G& g)
  noexcept  // NOLINT(google-explicit-constructor): a reference, like std::ref
      : object_(std::addressof(g)),
        draw_([](void* o) -> std::uint64_t { return (*static_cast<G*>(o))(); }) {}

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return draw_(object_); }

 private:
  void* object_;
  std::uint64_t (*draw_)(void*);
};

}  // namespace backoff
