# Helper functions to declare test and benchmark executables consistently.
include_guard(GLOBAL)

include(GoogleTest)

# backoff_add_test(NAME <name> SOURCES <files...> [LIBS <libs...>])
# A GoogleTest executable in <build>/tests-bin, registered with CTest test by test.
#
# Tests whose suite name ends in "WallClock" (TEST(OutageExperimentWallClock, ...)) need many
# seconds of real time whatever the build: they get the CTest label `walltime`, which the sanitizer
# test presets exclude, so they run once, in the plain build (docs/PERFORMANCE.md, "CI and build").
function(backoff_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME" "SOURCES;LIBS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "backoff_add_test: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "backoff_add_test: NAME and SOURCES are required")
  endif()

  add_executable(${arg_NAME} ${arg_SOURCES})
  target_link_libraries(${arg_NAME} PRIVATE
    backoff::backoff GTest::gtest_main GTest::gmock backoff_warnings ${arg_LIBS})
  target_include_directories(${arg_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/tests/support")
  backoff_precompile(${arg_NAME} <gtest/gtest.h> <chrono> <filesystem> <string> <vector>)
  set_target_properties(${arg_NAME} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests-bin")
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "-*WallClock.*")
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "*WallClock.*"
    PROPERTIES LABELS walltime)
endfunction()

# backoff_add_bench(NAME <name> SOURCES <files...> [LIBS <libs...>])
# A Google Benchmark executable in <build>/bin. Not registered as a test.
function(backoff_add_bench)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME" "SOURCES;LIBS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "backoff_add_bench: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "backoff_add_bench: NAME and SOURCES are required")
  endif()

  add_executable(${arg_NAME} ${arg_SOURCES})
  target_link_libraries(${arg_NAME} PRIVATE
    backoff::backoff benchmark::benchmark_main backoff_warnings ${arg_LIBS})
endfunction()

# backoff_precompile(<target> <header>...)
# With BACKOFF_PCH, the target's sources are compiled against a precompiled header of these
# (third-party or standard) headers, parsed once per target instead of once per source file.
function(backoff_precompile target)
  if(BACKOFF_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
