# Helper functions to declare test and benchmark executables consistently.
include_guard(GLOBAL)

include(GoogleTest)

# backoff_add_test(NAME <name> SOURCES <files...> [LIBS <libs...>])
# A GoogleTest executable in <build>/tests-bin, registered with CTest test by test.
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
  set_target_properties(${arg_NAME} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests-bin")
  gtest_discover_tests(${arg_NAME} DISCOVERY_TIMEOUT 60)
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
