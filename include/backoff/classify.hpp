// SPDX-License-Identifier: Apache-2.0
// Classifiers: what an attempt's result, or the exception it threw, means for the retry loop.
// A classifier is any callable that takes the operation's result and returns a verdict; these
// are the ones a loop gets without writing one. Sources: tenacity's retry_if_exception_type
// (jd/tenacity, tenacity/retry.py, 2026) for retry_on; http.hpp for the HTTP conventions.
//
//   default_classifier          bool, verdict, void (std::monostate), std::optional, any
//                               expected-like type (has_value()/error(): std::expected,
//                               tl::expected, boost::outcome...), std::error_code and anything
//                               convertible to it (boost::system::error_code), an HTTP response
//                               (as http_status_classifier); any other type does not compile
//   http_status_classifier      an HTTP status (int), or a response with result_int() and a
//                               Retry-After field (a Boost.Beast response); with count(name)
//                               too, it reads the pushback headers (http.hpp, classify_http_reply)
//   retry_on<E...>              retries the exception types E..., lets every other propagate;
//                               a result goes to default_classifier when it has a rule for its
//                               type (a false, an empty optional, an error are still retried),
//                               and any other returned value (a string, your struct) succeeds;
//                               retry_on<E...>::with(c) gives results to `c` instead
//
//   const backoff::default_classifier classify;
//   classify(std::optional<int>{});                                   // retryable
//   classify(make_error_code(std::errc::connection_refused));         // retryable, not_sent
//   classify(make_error_code(std::errc::permission_denied));          // permanent
//   backoff::http_status_classifier{}(503);                           // retryable
//   backoff::retry_on<std::ios_base::failure> on_io;  // in retry_options: .classify = on_io
//   on_io(std::string("any value"));                                  // success
//
// Error codes (classify_error_code): success when the code is 0; retryable when it is
// equivalent to a condition that usually clears by itself (a refused, reset or aborted
// connection, a timeout, EAGAIN, EINTR, an unreachable network or host, no buffer space, a
// broken pipe, too many open files); permanent otherwise, operation_canceled included (someone
// asked the work to stop). Asio's `eof` (the peer closed) is permanent too: whether a closed
// connection may be retried is the protocol's call, so classify it yourself when it may.
// A timeout sets verdict.timeout. Two codes prove that the attempt sent nothing and set
// verdict.not_sent: a refused connection (nothing listened: connect() failed, or a datagram was
// turned away) and an address not available (bind() or connect() found no local address or
// port). Others do not: an unreachable host or network, a reset or a timeout may also end a
// connection that had carried the request. That proof holds for an operation that makes one
// connection per attempt; one that reconnects inside an attempt knows better, and so does a
// gRPC client told UNAVAILABLE before the call left: return a verdict with not_sent set.
// Classifiers hold no state: call them from any thread.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <exception>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "backoff/export.hpp"
#include "backoff/http.hpp"
#include "backoff/verdict.hpp"

namespace backoff {

BACKOFF_EXPORT verdict classify_error_code(const std::error_code& ec) noexcept;

namespace detail {

template <class T>
concept expected_like = requires(const T& r) {
  { r.has_value() } -> std::convertible_to<bool>;
  r.error();
};

template <class T>
concept optional_like = !expected_like<T> && requires(const T& r) {
  { r.has_value() } -> std::convertible_to<bool>;
  *r;
};

template <class T>
concept error_code_like =
    !std::same_as<T, bool> && std::is_convertible_v<const T&, std::error_code>;

template <class T>
concept http_response_like = requires(const T& r) {
  { r.result_int() } -> std::convertible_to<unsigned>;
  { r["Retry-After"] } -> std::convertible_to<std::string_view>;
};

// A response that tells an absent field from an empty one (Boost.Beast's count(name)): the
// pushback headers need it, since an empty grpc-retry-pushback-ms means "do not retry".
template <class T>
concept http_fields_like = http_response_like<T> && requires(const T& r) {
  { r.count("Retry-After") } -> std::convertible_to<std::size_t>;
};

}  // namespace detail

// The retry headers of a response that has count(name). A field given more than once reads as
// their combined list (RFC 9110 section 5.3), which is no valid value of any of them.
template <detail::http_fields_like Response>
retry_headers retry_headers_of(const Response& r) {
  return retry_headers::from([&r](const char* name) -> std::optional<std::string_view> {
    const auto lines = static_cast<std::size_t>(r.count(name));
    if (lines == 0) return std::nullopt;
    if (lines > 1) return std::string_view(",");
    return std::string_view(r[name]);
  });
}

// HTTP statuses as http.hpp's classify_http_status says (1xx-3xx succeed, 429 and 5xx retry,
// other 4xx are permanent), with the response's Retry-After when it has one. A response with
// count(name) is read whole by classify_http_reply: the pushback headers, their precedence and
// not_sent; one without it keeps to its status and Retry-After. The HTTP-date form of
// Retry-After is read against the system clock, as the header means.
struct http_status_classifier {
  verdict operator()(int status) const { return classify_http_status(status); }
  template <detail::http_response_like Response>
  verdict operator()(const Response& r) const {
    const auto now = std::chrono::system_clock::now();
    const int status = static_cast<int>(r.result_int());
    if constexpr (detail::http_fields_like<Response>) {
      return classify_http_reply(status, retry_headers_of(r), now);
    } else {
      const std::string_view after = r["Retry-After"];
      return classify_http_status(status,
                                  after.empty() ? std::nullopt : parse_retry_after(after, now));
    }
  }
};

// The classifier a loop uses when it is given none. A type it does not know fails to compile
// with the candidates listed: write a classifier for it (any callable returning a verdict).
struct default_classifier {
  constexpr verdict operator()(bool ok) const noexcept {
    return ok ? verdict::success() : verdict::retryable();
  }
  constexpr verdict operator()(const verdict& v) const noexcept { return v; }
  // A number could be a count, a status or an exit code: say which with a classifier of your
  // own or http_status_classifier, rather than have it taken for a bool.
  template <std::integral I>
  requires(!std::same_as<I, bool>) verdict operator()(I) const = delete;
  // What an operation returning void gives: it returned, so it succeeded.
  constexpr verdict operator()(std::monostate) const noexcept { return verdict::success(); }

  verdict operator()(const std::error_code& ec) const noexcept { return classify_error_code(ec); }
  template <detail::error_code_like E>
  requires(!std::same_as<E, std::error_code>) verdict operator()(const E& ec) const noexcept {
    return classify_error_code(static_cast<std::error_code>(ec));
  }

  // An expected-like value: its error is classified when this classifier knows the error's
  // type (an error_code inside: a refused connection retries, a bad argument does not), and is
  // retryable otherwise.
  template <detail::expected_like X>
  verdict operator()(const X& r) const {
    if (r.has_value()) return verdict::success();
    using error_type = std::decay_t<decltype(r.error())>;
    if constexpr (std::is_invocable_r_v<verdict, const default_classifier&, const error_type&> &&
                  !detail::expected_like<error_type>) {
      const verdict v = (*this)(r.error());
      // An error that says "no error" is still a failure of this attempt.
      return v.kind == verdict_kind::success ? verdict::retryable() : v;
    } else {
      return verdict::retryable();
    }
  }

  // An empty optional is a retryable failure.
  template <detail::optional_like O>
  constexpr verdict operator()(const O& r) const noexcept(noexcept(r.has_value())) {
    return r.has_value() ? verdict::success() : verdict::retryable();
  }

  // An HTTP response: its status and retry headers, as http_status_classifier reads them.
  template <detail::http_response_like Response>
  requires(!detail::expected_like<Response> && !detail::optional_like<Response>) verdict operator()(
      const Response& r) const {
    return http_status_classifier{}(r);
  }
};

// retry_on's classifier for results: default_classifier's rule for a type it has one for, and
// success for any other class type (the operation returned: as tenacity's retry_if_exception_type
// reads a return). A number or an enumeration without a rule does not compile: a status or a
// count taken for a success would hide a failure, so say which it is with retry_on<E...>::with(c).
struct default_or_success_classifier {
  template <class R>
  requires(std::is_invocable_r_v<verdict, const default_classifier&, const R&> ||
           !std::is_scalar_v<R>) constexpr verdict
  operator()(const R& r) const {
    if constexpr (std::is_invocable_r_v<verdict, const default_classifier&, const R&>) {
      return default_classifier{}(r);
    } else {
      return verdict::success();
    }
  }
};

// Lets a loop catch exceptions: retries the types E... (and types derived from them) as
// retryable failures and lets every other exception propagate from the loop. Results, when the
// operation returns, go to `results`. When the loop gives up after an exception, its result's
// `error` holds it.
template <class Results, class... E>
struct exception_classifier {
  static_assert(sizeof...(E) > 0, "name at least one exception type to retry");
  Results results{};

  template <class R>
  constexpr verdict operator()(
      const R& r) const requires std::is_invocable_r_v<verdict, const Results&, const R&> {
    return results(r);
  }
  // `results` cannot classify this type (a number under retry_on<E...>, or a type your
  // classifier does not take): give retry_on<E...>::with(c) a classifier that does.
  template <class R>
  requires(!std::is_invocable_r_v<verdict, const Results&, const R&>) verdict operator()(
      const R&) const = delete;

  // nullopt: not one of E..., let it propagate.
  std::optional<verdict> on_exception(const std::exception_ptr& e) const {
    if (matches<E...>(e)) return verdict::retryable();
    return std::nullopt;
  }

  // retry_on<E...>::with(c): the same exceptions, with `c` for results.
  template <class C>
  static exception_classifier<std::decay_t<C>, E...> with(C&& c) {
    return {std::forward<C>(c)};
  }

 private:
  template <class First, class... Rest>
  static bool matches(const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const First&) {
      return true;
    } catch (...) {
      if constexpr (sizeof...(Rest) > 0) {
        return matches<Rest...>(e);
      } else {
        return false;
      }
    }
  }
};

template <class... E>
using retry_on = exception_classifier<default_or_success_classifier, E...>;

// Whether a classifier takes exceptions (then the loop catches around each attempt).
template <class C>
concept exception_aware = requires(const C& c, const std::exception_ptr& e) {
  { c.on_exception(e) } -> std::same_as<std::optional<verdict>>;
};

}  // namespace backoff
