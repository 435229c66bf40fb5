# SPDX-License-Identifier: Apache-2.0
# Helpers shared by the packaging tests' cmake -P scripts (run_consumer.cmake, run_shared.cmake,
# run_pkg_config.cmake, run_fetchcontent.cmake): run a step or fail, configure a project with the
# generator, compiler and flags of the backoff build that runs the test, find a built executable.
#
# Inputs (-D), set by tests/CMakeLists.txt: BACKOFF_BUILD_DIR, BACKOFF_SOURCE_DIR,
# BACKOFF_GENERATOR, BACKOFF_MAKE_PROGRAM, BACKOFF_CXX_COMPILER, BACKOFF_CXX_FLAGS,
# BACKOFF_EXE_LINKER_FLAGS, BACKOFF_CONFIG, BACKOFF_MULTI_CONFIG.
include_guard(GLOBAL)

foreach(var IN ITEMS BACKOFF_BUILD_DIR BACKOFF_SOURCE_DIR BACKOFF_GENERATOR BACKOFF_CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: -D${var}=... is required")
  endif()
endforeach()

set(BACKOFF_CONSUMER_SOURCE_DIR "${BACKOFF_SOURCE_DIR}/tests/consumer")

# --config for `cmake --build` and `cmake --install`.
set(backoff_config_args)
if(BACKOFF_CONFIG)
  set(backoff_config_args --config "${BACKOFF_CONFIG}")
endif()

# run_step(<name> <command>...): runs the command; any exit status but 0 fails the test.
function(run_step name)
  message(STATUS "${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "step '${name}' failed (${rc}): ${ARGN}")
  endif()
endfunction()

# consumer_configure_args(<out-var> <source> <build> <cmake-args>...): the arguments of a configure
# of <source> into <build> with this build's generator, compiler and flags; the package registry
# is off, so only the prefixes given in <cmake-args> can provide backoff.
function(consumer_configure_args out source build)
  set(args
    -S "${source}" -B "${build}" -G "${BACKOFF_GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${BACKOFF_CXX_COMPILER}"
    "-DCMAKE_CXX_FLAGS=${BACKOFF_CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${BACKOFF_EXE_LINKER_FLAGS}"
    "-DCMAKE_SHARED_LINKER_FLAGS=${BACKOFF_EXE_LINKER_FLAGS}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    # CMAKE_DISABLE_FIND_PACKAGE_Boost is unused exactly when all is well.
    --no-warn-unused-cli
    ${ARGN})
  if(BACKOFF_MAKE_PROGRAM)
    list(APPEND args "-DCMAKE_MAKE_PROGRAM=${BACKOFF_MAKE_PROGRAM}")
  endif()
  if(BACKOFF_CONFIG AND NOT BACKOFF_MULTI_CONFIG)
    list(APPEND args "-DCMAKE_BUILD_TYPE=${BACKOFF_CONFIG}")
  endif()
  set(${out} ${args} PARENT_SCOPE)
endfunction()

# consumer_exe(<out-var> <build> <name>): the path of executable <name> built in <build>.
function(consumer_exe out build name)
  if(BACKOFF_MULTI_CONFIG AND BACKOFF_CONFIG)
    set(${out} "${build}/${BACKOFF_CONFIG}/${name}" PARENT_SCOPE)
  else()
    set(${out} "${build}/${name}" PARENT_SCOPE)
  endif()
endfunction()

# expect_found_under(<build> <prefix>): backoff_DIR in <build>'s cache is inside <prefix>, so the
# package came from there and not from somewhere else on the system.
function(expect_found_under build prefix)
  file(STRINGS "${build}/CMakeCache.txt" line REGEX "^backoff_DIR:")
  string(REGEX REPLACE "^backoff_DIR:[A-Z]+=" "" dir "${line}")
  file(REAL_PATH "${prefix}" real_prefix)
  file(REAL_PATH "${dir}" real_dir)
  string(FIND "${real_dir}" "${real_prefix}/" pos)
  if(NOT pos EQUAL 0)
    message(FATAL_ERROR "backoff was found in '${dir}', not under '${prefix}'")
  endif()
endfunction()
