# SPDX-License-Identifier: Apache-2.0
# cmake -P script run by the CTest test consumer_fetchcontent (label packaging):
#
# 1. configures tests/consumer/fetchcontent, a parent project that brings backoff in with
#    FetchContent_Declare(SOURCE_DIR <this source tree>) + FetchContent_MakeAvailable and
#    BACKOFF_WITH_ASIO=OFF, into <build>/fetchcontent-build, with Boost made unfindable;
# 2. builds it: the parent's build tree must hold no backoff_cli (nor any other of backoff's
#    executables: tests, benchmarks), and installing it must install nothing of backoff's
#    (BACKOFF_INSTALL is off for a sub-project);
# 3. runs the parent's executable, linked with backoff::backoff.
#
# Inputs (-D): those of consumer_common.cmake.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/consumer_common.cmake")

set(parent_build "${BACKOFF_BUILD_DIR}/fetchcontent-build")
set(parent_prefix "${BACKOFF_BUILD_DIR}/fetchcontent-prefix")
file(REMOVE_RECURSE "${parent_build}" "${parent_prefix}")

# 1. Configure. FETCHCONTENT_TRY_FIND_PACKAGE_MODE=NEVER: the source tree, never an installed
# backoff. A unity build: the test checks what the parent gets, not the compile.
consumer_configure_args(args "${BACKOFF_CONSUMER_SOURCE_DIR}/fetchcontent" "${parent_build}"
  "-DBACKOFF_SOURCE_DIR=${BACKOFF_SOURCE_DIR}" -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON
  -DCMAKE_UNITY_BUILD=ON
  -DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=NEVER -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
run_step(configure "${CMAKE_COMMAND}" ${args})

# 2. Build, then look for what must not be there.
run_step(build "${CMAKE_COMMAND}" --build "${parent_build}" ${backoff_config_args})
file(GLOB_RECURSE unwanted LIST_DIRECTORIES false
  "${parent_build}/*backoff_cli*" "${parent_build}/*_tests" "${parent_build}/*_bench"
  "${parent_build}/*/bin/backoff" "${parent_build}/bin/backoff")
if(unwanted)
  message(FATAL_ERROR "the parent's build tree has backoff's CLI, tests or benchmarks: ${unwanted}")
endif()
if(EXISTS "${parent_build}/build.ninja")
  file(STRINGS "${parent_build}/build.ninja" cli_rules REGEX "backoff_cli")
  if(cli_rules)
    message(FATAL_ERROR "the parent's build.ninja builds backoff_cli:\n${cli_rules}")
  endif()
endif()
run_step(install "${CMAKE_COMMAND}" --install "${parent_build}" --prefix "${parent_prefix}"
  ${backoff_config_args})
file(GLOB_RECURSE installed "${parent_prefix}/*")
if(installed)
  message(FATAL_ERROR "a sub-project backoff installed files (BACKOFF_INSTALL should be off): "
    "${installed}")
endif()

# 3. Run.
consumer_exe(exe "${parent_build}" backoff_fetchcontent_consumer)
run_step(run "${exe}")

message(STATUS "FetchContent: OK")
