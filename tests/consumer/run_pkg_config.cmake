# SPDX-License-Identifier: Apache-2.0
# cmake -P script run by the CTest test consumer_pkg_config (label packaging):
#
# 1. installs the backoff build tree into <build>/pkgconfig-prefix;
# 2. checks that pkg-config, pointed there with PKG_CONFIG_PATH only, reports backoff's version
#    and paths inside that prefix (the .pc files are relocatable), and resolves backoff-asio
#    (which Requires backoff) when it was installed;
# 3. compiles tests/consumer/main.cpp as a Makefile user would,
#      $CXX -std=c++20 $(pkg-config --cflags backoff) main.cpp -o ... $(pkg-config --libs backoff)
#    and runs it.
#
# Inputs (-D): those of consumer_common.cmake, BACKOFF_VERSION, BACKOFF_PKG_CONFIG (the
# pkg-config or pkgconf program; Debian's package pkgconf, which scripts/install-deps.sh installs).
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/consumer_common.cmake")

if(NOT BACKOFF_PKG_CONFIG OR NOT EXISTS "${BACKOFF_PKG_CONFIG}")
  message(FATAL_ERROR "no pkg-config program: install Debian's pkgconf (scripts/install-deps.sh)")
endif()

set(prefix "${BACKOFF_BUILD_DIR}/pkgconfig-prefix")
set(work "${BACKOFF_BUILD_DIR}/pkgconfig-consumer")
file(REMOVE_RECURSE "${prefix}" "${work}")
file(MAKE_DIRECTORY "${work}")

# 1. Install.
run_step(install "${CMAKE_COMMAND}" --install "${BACKOFF_BUILD_DIR}" --prefix "${prefix}"
  ${backoff_config_args})
file(GLOB_RECURSE pc_files "${prefix}/*/backoff.pc")
list(LENGTH pc_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one backoff.pc under ${prefix}, found: ${pc_files}")
endif()
get_filename_component(pc_dir "${pc_files}" DIRECTORY)
file(REAL_PATH "${prefix}" real_prefix)

# pkg-config sees only our prefix: PKG_CONFIG_PATH, and no system directory.
set(pkg_config "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${pc_dir}" "PKG_CONFIG_LIBDIR=${pc_dir}"
  "${BACKOFF_PKG_CONFIG}")
function(pkg_config out)
  execute_process(COMMAND ${pkg_config} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE text
    ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "pkg-config ${ARGN} failed (${rc}): ${err}")
  endif()
  message(STATUS "pkg-config ${ARGN}: ${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# 2. What pkg-config says.
pkg_config(version --modversion backoff)
if(NOT version STREQUAL BACKOFF_VERSION)
  message(FATAL_ERROR "pkg-config says backoff ${version}, the project is ${BACKOFF_VERSION}")
endif()
pkg_config(cflags --cflags backoff)
pkg_config(libs --libs backoff)
foreach(flags IN ITEMS cflags libs)
  # The paths are relative to the .pc file, so they point into the prefix it was installed to.
  string(REGEX MATCHALL "-[IL][^ ]+" paths "${${flags}}")
  if(NOT paths)
    message(FATAL_ERROR "pkg-config --${flags} backoff gives no -I/-L path: ${${flags}}")
  endif()
  foreach(path IN LISTS paths)
    string(SUBSTRING "${path}" 2 -1 dir)
    file(REAL_PATH "${dir}" real_dir)
    string(FIND "${real_dir}/" "${real_prefix}/" pos)
    if(NOT pos EQUAL 0)
      message(FATAL_ERROR "pkg-config --${flags} backoff: ${path} is outside ${prefix}")
    endif()
  endforeach()
endforeach()
if(NOT libs MATCHES "(^| )-lbackoff( |$)")
  message(FATAL_ERROR "pkg-config --libs backoff has no -lbackoff: ${libs}")
endif()
file(GLOB static_lib "${prefix}/*/libbackoff.a" "${prefix}/*/*/libbackoff.a")
if(static_lib AND NOT cflags MATCHES "-DBACKOFF_STATIC_DEFINE")
  message(FATAL_ERROR "a static libbackoff.a, but no -DBACKOFF_STATIC_DEFINE in --cflags: ${cflags}")
endif()
if(EXISTS "${pc_dir}/backoff-asio.pc")
  pkg_config(asio_libs --libs backoff-asio)
  if(NOT asio_libs MATCHES "-lbackoff_asio" OR NOT asio_libs MATCHES "-lbackoff( |$)")
    message(FATAL_ERROR "pkg-config --libs backoff-asio lacks -lbackoff_asio or -lbackoff: ${asio_libs}")
  endif()
endif()

# 3. Compile, link and run main.cpp with those flags, through the shell, as a user would.
find_program(BACKOFF_SH sh REQUIRED)
set(exe "${work}/backoff_pkg_config_consumer")
set(script "\"${BACKOFF_CXX_COMPILER}\" -std=c++20 ${BACKOFF_CXX_FLAGS} \
$(\"${BACKOFF_PKG_CONFIG}\" --cflags backoff) \"${BACKOFF_CONSUMER_SOURCE_DIR}/main.cpp\" \
-o \"${exe}\" ${BACKOFF_EXE_LINKER_FLAGS} $(\"${BACKOFF_PKG_CONFIG}\" --libs backoff)")
run_step(compile "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${pc_dir}" "PKG_CONFIG_LIBDIR=${pc_dir}"
  "${BACKOFF_SH}" -c "${script}")
run_step(run "${exe}")

message(STATUS "pkg-config: OK")
