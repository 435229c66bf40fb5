# SPDX-License-Identifier: Apache-2.0
# cmake -P script run by the CTest test consumer_builds_against_installed_package (every preset,
# sanitizers included, so it stays cheap):
#
# 1. installs the backoff build tree into <build>/consumer-prefix;
# 2. configures tests/consumer against that prefix (same generator, compiler and flags as the
#    backoff build) asking for the core library only, with Boost made unfindable
#    (CMAKE_DISABLE_FIND_PACKAGE_Boost): find_package(backoff) must still succeed; builds and runs
#    backoff_consumer;
# 3. the same with COMPONENTS asio (when the build has backoff::asio): backoff_asio_consumer;
# 4. configures it with COMPONENTS nonsense, which must fail and name the component.
# Any failing step ends the script with FATAL_ERROR, which fails the test.
#
# Inputs (-D): those of consumer_common.cmake, and BACKOFF_WITH_ASIO.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/consumer_common.cmake")

set(prefix "${BACKOFF_BUILD_DIR}/consumer-prefix")
set(core_build "${BACKOFF_BUILD_DIR}/consumer-build")
set(asio_build "${BACKOFF_BUILD_DIR}/consumer-build-asio")
set(bad_build "${BACKOFF_BUILD_DIR}/consumer-build-nonsense")

# Start from scratch every time, so a stale cache or install cannot hide a packaging bug.
file(REMOVE_RECURSE "${prefix}" "${core_build}" "${asio_build}" "${bad_build}")

# 1. Install.
run_step(install "${CMAKE_COMMAND}" --install "${BACKOFF_BUILD_DIR}" --prefix "${prefix}"
  ${backoff_config_args})

# The executables, when the build has them: both installed, and backoff-try runs on its own.
if(EXISTS "${BACKOFF_BUILD_DIR}/bin/backoff")
  foreach(exe_name backoff backoff-try)
    if(NOT EXISTS "${prefix}/bin/${exe_name}")
      message(FATAL_ERROR "cmake --install did not install bin/${exe_name}")
    endif()
  endforeach()
  run_step(run-backoff-try "${prefix}/bin/backoff-try" --times 1 -- true)
  foreach(file share/man/man1/backoff.1 share/bash-completion/completions/backoff
      share/zsh/site-functions/_backoff)
    if(NOT EXISTS "${prefix}/${file}")
      message(FATAL_ERROR "cmake --install did not install ${file}")
    endif()
  endforeach()
endif()

# 2. The core library, Boost unfindable.
consumer_configure_args(args "${BACKOFF_CONSUMER_SOURCE_DIR}" "${core_build}"
  "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)
run_step(configure-core "${CMAKE_COMMAND}" ${args})
expect_found_under("${core_build}" "${prefix}")
run_step(build-core "${CMAKE_COMMAND}" --build "${core_build}" ${backoff_config_args})
consumer_exe(exe "${core_build}" backoff_consumer)
run_step(run-core "${exe}")

# 3. The asio component.
if(BACKOFF_WITH_ASIO)
  consumer_configure_args(args "${BACKOFF_CONSUMER_SOURCE_DIR}" "${asio_build}"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DBACKOFF_CONSUMER_COMPONENTS=asio)
  run_step(configure-asio "${CMAKE_COMMAND}" ${args})
  expect_found_under("${asio_build}" "${prefix}")
  run_step(build-asio "${CMAKE_COMMAND}" --build "${asio_build}" ${backoff_config_args})
  consumer_exe(exe "${asio_build}" backoff_asio_consumer)
  run_step(run-asio "${exe}")
endif()

# 4. An unknown component: the configure fails, and says which component.
consumer_configure_args(args "${BACKOFF_CONSUMER_SOURCE_DIR}" "${bad_build}"
  "-DCMAKE_PREFIX_PATH=${prefix}" -DBACKOFF_CONSUMER_COMPONENTS=nonsense)
message(STATUS "configure-nonsense (must fail): ${CMAKE_COMMAND} ${args}")
execute_process(COMMAND "${CMAKE_COMMAND}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc STREQUAL "0")
  message(FATAL_ERROR "find_package(backoff COMPONENTS nonsense) succeeded:\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "unknown component \"nonsense\"")
  message(FATAL_ERROR "find_package(backoff COMPONENTS nonsense) failed without naming the "
    "component:\n${out}${err}")
endif()
message(STATUS "configure-nonsense: failed as expected, naming the component")

message(STATUS "consumer: OK")
