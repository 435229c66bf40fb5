# SPDX-License-Identifier: Apache-2.0
# Every find_package() of the project lives here. Nothing is downloaded: all dependencies come from
# the system (scripts/install-deps.sh installs them on Debian 12). CONFIG mode is used wherever the
# package ships a CMake config file; Threads has none and uses CMake's FindThreads module.
include_guard(GLOBAL)

# The library itself needs only Threads.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

if(BACKOFF_WITH_ASIO)
  # Header-only use (asio/beast): no components; link Boost::headers. 1.81 or newer.
  find_package(Boost 1.81 CONFIG REQUIRED)
endif()

# Application-level dependencies: for the CLI, and available to tests and benchmarks.
if(BACKOFF_BUILD_CLI OR BACKOFF_BUILD_TESTS OR BACKOFF_BUILD_BENCH)
  find_package(fmt CONFIG REQUIRED)
  find_package(spdlog CONFIG REQUIRED)
  find_package(nlohmann_json CONFIG REQUIRED)
  find_package(CLI11 CONFIG REQUIRED)
  find_package(tomlplusplus CONFIG REQUIRED)
  find_package(Boost 1.81 CONFIG REQUIRED)
  # HdrHistogram's compressed histograms (report/hdr_log.hpp) are zlib streams; no config file,
  # CMake's FindZLIB module.
  find_package(ZLIB REQUIRED)
endif()

# The examples log with spdlog.
if(BACKOFF_BUILD_EXAMPLES)
  find_package(spdlog CONFIG REQUIRED)
endif()

if(BACKOFF_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  find_package(rapidcheck CONFIG REQUIRED)
  # Debian's rapidcheck config provides the gtest integration target (header rapidcheck/gtest.h).
  if(TARGET rapidcheck_gtest)
    set(BACKOFF_RAPIDCHECK_LIBS rapidcheck rapidcheck_gtest)
  else()
    message(STATUS "backoff: no rapidcheck_gtest target, property tests link rapidcheck only")
    set(BACKOFF_RAPIDCHECK_LIBS rapidcheck)
  endif()
endif()

if(BACKOFF_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
