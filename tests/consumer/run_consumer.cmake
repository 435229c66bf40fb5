# SPDX-License-Identifier: Apache-2.0
# cmake -P script run by the CTest test consumer_builds_against_installed_package.
#
# 1. installs the backoff build tree into <build>/consumer-prefix,
# 2. configures tests/consumer into <build>/consumer-build against that prefix (same generator,
#    compiler and flags as the backoff build),
# 3. builds it and 4. runs the consumer executable.
# Any failing step ends the script with FATAL_ERROR, which fails the test.
#
# Inputs (-D): BACKOFF_BUILD_DIR, BACKOFF_CONSUMER_SOURCE_DIR, BACKOFF_GENERATOR,
# BACKOFF_MAKE_PROGRAM, BACKOFF_CXX_COMPILER, BACKOFF_CXX_FLAGS, BACKOFF_EXE_LINKER_FLAGS,
# BACKOFF_CONFIG, BACKOFF_MULTI_CONFIG.
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS BACKOFF_BUILD_DIR BACKOFF_CONSUMER_SOURCE_DIR BACKOFF_GENERATOR
                     BACKOFF_CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix "${BACKOFF_BUILD_DIR}/consumer-prefix")
set(consumer_build "${BACKOFF_BUILD_DIR}/consumer-build")

# Start from scratch every time, so a stale cache or install cannot hide a packaging bug.
file(REMOVE_RECURSE "${prefix}" "${consumer_build}")

function(run_step name)
  message(STATUS "consumer: ${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "consumer: step '${name}' failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(config_args)
if(BACKOFF_CONFIG)
  set(config_args --config "${BACKOFF_CONFIG}")
endif()

# 1. Install.
run_step(install "${CMAKE_COMMAND}" --install "${BACKOFF_BUILD_DIR}" --prefix "${prefix}"
  ${config_args})

# 2. Configure.
set(configure_args
  -S "${BACKOFF_CONSUMER_SOURCE_DIR}"
  -B "${consumer_build}"
  -G "${BACKOFF_GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${BACKOFF_CXX_COMPILER}"
  "-DCMAKE_CXX_FLAGS=${BACKOFF_CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${BACKOFF_EXE_LINKER_FLAGS}"
  "-DCMAKE_PREFIX_PATH=${prefix}"
  # Only the prefix we just installed may provide backoff.
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(BACKOFF_MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${BACKOFF_MAKE_PROGRAM}")
endif()
if(BACKOFF_CONFIG AND NOT BACKOFF_MULTI_CONFIG)
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${BACKOFF_CONFIG}")
endif()
run_step(configure "${CMAKE_COMMAND}" ${configure_args})

# The package must have come from the prefix, not from somewhere else on the system.
file(STRINGS "${consumer_build}/CMakeCache.txt" backoff_dir_line REGEX "^backoff_DIR:")
string(REGEX REPLACE "^backoff_DIR:[A-Z]+=" "" backoff_dir "${backoff_dir_line}")
file(REAL_PATH "${prefix}" real_prefix)
file(REAL_PATH "${backoff_dir}" real_backoff_dir)
string(FIND "${real_backoff_dir}" "${real_prefix}/" pos)
if(NOT pos EQUAL 0)
  message(FATAL_ERROR "consumer: backoff was found in '${backoff_dir}', not under '${prefix}'")
endif()

# 3. Build.
run_step(build "${CMAKE_COMMAND}" --build "${consumer_build}" ${config_args})

# 4. Run.
foreach(program backoff_consumer backoff_asio_consumer)
  if(BACKOFF_MULTI_CONFIG AND BACKOFF_CONFIG)
    set(exe "${consumer_build}/${BACKOFF_CONFIG}/${program}")
  else()
    set(exe "${consumer_build}/${program}")
  endif()
  run_step(run "${exe}")
endforeach()

message(STATUS "consumer: OK")
