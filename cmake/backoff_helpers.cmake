# SPDX-License-Identifier: Apache-2.0
# Helper functions to declare test and benchmark executables consistently.
include_guard(GLOBAL)

include(GoogleTest)

# The GoogleTest filter of every case but the labelled suites below (WallClock, FullSize,
# Exhausted), which are registered apart with their labels, and those the build leaves out
# (BACKOFF_TEST_CASES_LEFT_OUT: more negative patterns).
set(BACKOFF_UNLABELLED_CASES "-*WallClock.*:*FullSize.*:*Exhausted.*")
if(BACKOFF_TEST_CASES_LEFT_OUT)
  if(NOT BACKOFF_TEST_CASES_LEFT_OUT MATCHES "^[A-Za-z0-9_*./]+(:[A-Za-z0-9_*./]+)*$")
    message(FATAL_ERROR "BACKOFF_TEST_CASES_LEFT_OUT must be GoogleTest patterns joined by ':' "
      "(Suite.*:Other.Case), not '${BACKOFF_TEST_CASES_LEFT_OUT}'")
  endif()
  string(APPEND BACKOFF_UNLABELLED_CASES ":${BACKOFF_TEST_CASES_LEFT_OUT}")
endif()

# backoff_add_test(NAME <name> SOURCES <files...> [LIBS <libs...>] [COST <seconds>])
# A GoogleTest executable in <build>/tests-bin, registered with CTest test by test. COST, for an
# executable whose shards (below) take longest, makes ctest start them first: without it, on a
# fresh clone (no timings kept from a previous run), ctest runs tests in the order declared, and
# the longest shard, started last, ran alone on one core for half a minute.
#
# Tests whose suite name ends in "WallClock" (TEST(OutageExperimentWallClock, ...)) need many
# seconds of real time whatever the build: they get the CTest label `walltime`, which the sanitizer
# test presets exclude, so they run once, in the plain build (docs/PERFORMANCE.md, "CI and build").
# Suites ending in "FullSize" (TEST(BuiltinSuiteFullSize, ...)) check numbers of full-size runs:
# seconds in the plain build, minutes under a sanitizer, which adds nothing to a number check (the
# same code runs under the sanitizers at test sizes). They get the label `fullsize`, excluded the
# same way. Suites ending in "Exhausted" (TEST(DescriptorShortageExhausted, ...)) run the tool with
# (almost) no file descriptor left; the sanitizers' runtimes need descriptors of their own (UBSan's
# vptr check opens a pipe to probe memory, and reports "invalid vptr" when it cannot), so those
# tests get the label `exhausted` and run in the plain build only.
function(backoff_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;COST" "SOURCES;LIBS")
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
  if(BACKOFF_TEST_OPTIMIZATION)
    # After the build type's flags on the command line, so these win (-O2 ... -Og: -Og).
    separate_arguments(test_optimization UNIX_COMMAND "${BACKOFF_TEST_OPTIMIZATION}")
    target_compile_options(${arg_NAME} PRIVATE ${test_optimization})
  endif()
  backoff_precompile(${arg_NAME} <gtest/gtest.h> <chrono> <filesystem> <string> <vector>)
  set_target_properties(${arg_NAME} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests-bin")
  if(BACKOFF_TEST_SHARDS)
    _backoff_add_test_shards(${arg_NAME} "${arg_COST}")
    return()
  endif()
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "${BACKOFF_UNLABELLED_CASES}")
  # Seconds of real time each, mostly waiting: started first, beside the others.
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "*WallClock.*"
    PROPERTIES LABELS walltime COST 100)
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "*FullSize.*"
    PROPERTIES LABELS fullsize)
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "*Exhausted.*"
    PROPERTIES LABELS exhausted)
endfunction()

# With BACKOFF_TEST_SHARDS=N (the sanitizer presets), a test executable is N CTest tests instead
# of one per test case: <name>_shard_<i>_of_<N>, each running every N-th case in one process
# (GoogleTest's sharding, GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX), plus <name>_walltime,
# <name>_fullsize and <name>_exhausted with the labels above. Under AddressSanitizer a process
# costs about 50 ms of CPU to start and to check for leaks at its exit: 1,500 test cases, one
# process each, spent more CPU starting than testing (docs/PERFORMANCE.md, "CI and build"). A
# failure still names its test case in the output; a leak is reported at the shard's exit, with
# the stack of its allocation.
function(_backoff_add_test_shards name cost)
  if(NOT BACKOFF_TEST_SHARDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR
      "BACKOFF_TEST_SHARDS must be a positive whole number (or empty), not '${BACKOFF_TEST_SHARDS}'")
  endif()
  set(count ${BACKOFF_TEST_SHARDS})
  math(EXPR last "${count} - 1")
  foreach(index RANGE ${last})
    math(EXPR number "${index} + 1")
    set(test ${name}_shard_${number}_of_${count})
    add_test(NAME ${test} COMMAND ${name} "--gtest_filter=${BACKOFF_UNLABELLED_CASES}")
    set_tests_properties(${test} PROPERTIES
      ENVIRONMENT "GTEST_TOTAL_SHARDS=${count};GTEST_SHARD_INDEX=${index}")
    if(cost)
      set_tests_properties(${test} PROPERTIES COST ${cost})
    endif()
  endforeach()
  add_test(NAME ${name}_walltime COMMAND ${name} "--gtest_filter=*WallClock.*")
  add_test(NAME ${name}_fullsize COMMAND ${name} "--gtest_filter=*FullSize.*")
  add_test(NAME ${name}_exhausted COMMAND ${name} "--gtest_filter=*Exhausted.*")
  set_tests_properties(${name}_walltime PROPERTIES LABELS walltime)
  set_tests_properties(${name}_fullsize PROPERTIES LABELS fullsize)
  set_tests_properties(${name}_exhausted PROPERTIES LABELS exhausted)
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

# backoff_write_link_graph(<file> <target>...)
# Writes one line per target, "target: dep;dep;...", with every project target it links, directly
# or through others (LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES, aliases resolved). The layering
# test (tests/layering) reads it: a driver must never reach another driver.
function(_backoff_link_closure target seen_var)
  set(seen ${${seen_var}})
  foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(deps ${target} ${property})
    if(NOT deps)
      continue()
    endif()
    foreach(dep IN LISTS deps)
      # $<BUILD_INTERFACE:x> and the like: the name inside.
      string(REGEX REPLACE "^\\$<[A-Z_]+:(.*)>$" "\\1" dep "${dep}")
      if(NOT TARGET "${dep}")
        continue()
      endif()
      get_target_property(aliased "${dep}" ALIASED_TARGET)
      if(aliased)
        set(dep "${aliased}")
      endif()
      if(NOT dep IN_LIST seen)
        list(APPEND seen "${dep}")
        _backoff_link_closure("${dep}" seen)
      endif()
    endforeach()
  endforeach()
  set(${seen_var} ${seen} PARENT_SCOPE)
endfunction()

function(backoff_write_link_graph file)
  set(text "")
  foreach(target IN LISTS ARGN)
    if(TARGET ${target})
      set(closure "")
      _backoff_link_closure(${target} closure)
      list(SORT closure)
      string(APPEND text "${target}: ${closure}\n")
    endif()
  endforeach()
  file(WRITE "${file}" "${text}")
endfunction()
