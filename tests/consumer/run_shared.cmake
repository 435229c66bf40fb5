# SPDX-License-Identifier: Apache-2.0
# cmake -P script run by the CTest test consumer_shared_library (label packaging):
#
# 1. configures the backoff source tree into <build>/shared-build with BUILD_SHARED_LIBS=ON
#    (core library only: no Asio, tests, CLI or benchmarks), builds it and installs it into
#    <build>/shared-prefix;
# 2. checks the library: libbackoff.so.<version>, its SONAME libbackoff.so.<major>, and that every
#    symbol it exports is in namespace backoff (hidden visibility, BACKOFF_EXPORT, version script);
# 3. builds tests/consumer (core, Boost unfindable) against that prefix and runs it; it must be
#    linked with libbackoff.so.<major> (readelf's NEEDED) and load it from the prefix (ldd).
#
# Inputs (-D): those of consumer_common.cmake, BACKOFF_VERSION, BACKOFF_VERSION_MAJOR,
# BACKOFF_NM, BACKOFF_READELF.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/consumer_common.cmake")

foreach(var IN ITEMS BACKOFF_VERSION BACKOFF_VERSION_MAJOR BACKOFF_NM BACKOFF_READELF)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_shared.cmake: -D${var}=... is required")
  endif()
endforeach()
find_program(BACKOFF_LDD ldd REQUIRED)

set(lib_build "${BACKOFF_BUILD_DIR}/shared-build")
set(prefix "${BACKOFF_BUILD_DIR}/shared-prefix")
set(consumer_build "${BACKOFF_BUILD_DIR}/shared-consumer-build")
file(REMOVE_RECURSE "${lib_build}" "${prefix}" "${consumer_build}")

# 1. The shared library. CMAKE_INSTALL_LIBDIR=lib, so the paths below do not depend on the
# platform's multiarch directory. A unity build and no examples: this test checks the package, not
# the compile, and a third of CI's plain test step was these library rebuilds.
consumer_configure_args(args "${BACKOFF_SOURCE_DIR}" "${lib_build}"
  -DBUILD_SHARED_LIBS=ON -DBACKOFF_WITH_ASIO=OFF -DBACKOFF_BUILD_TESTS=OFF
  -DBACKOFF_BUILD_CLI=OFF -DBACKOFF_BUILD_BENCH=OFF -DBACKOFF_BUILD_EXAMPLES=OFF
  -DCMAKE_UNITY_BUILD=ON -DBACKOFF_INSTALL=ON
  -DCMAKE_INSTALL_LIBDIR=lib)
run_step(configure-library "${CMAKE_COMMAND}" ${args})
run_step(build-library "${CMAKE_COMMAND}" --build "${lib_build}" ${backoff_config_args})
run_step(install-library "${CMAKE_COMMAND}" --install "${lib_build}" --prefix "${prefix}"
  ${backoff_config_args})

# 2. The library's name, SONAME and exported symbols.
set(soname "libbackoff.so.${BACKOFF_VERSION_MAJOR}")
set(real_lib "${prefix}/lib/libbackoff.so.${BACKOFF_VERSION}")
foreach(file IN ITEMS "${real_lib}" "${prefix}/lib/${soname}" "${prefix}/lib/libbackoff.so")
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "the shared build did not install ${file}")
  endif()
endforeach()
if(EXISTS "${prefix}/lib/libbackoff.a")
  message(FATAL_ERROR "BUILD_SHARED_LIBS=ON installed a static libbackoff.a")
endif()

execute_process(COMMAND "${BACKOFF_READELF}" -d "${real_lib}"
  OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0" OR NOT dynamic MATCHES "\\(SONAME\\)[^\n]*\\[([^]\n]*)\\]")
  message(FATAL_ERROR "no SONAME in ${real_lib}:\n${dynamic}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL soname)
  message(FATAL_ERROR "SONAME is '${CMAKE_MATCH_1}', expected '${soname}'")
endif()
message(STATUS "SONAME: ${CMAKE_MATCH_1}")

execute_process(COMMAND "${BACKOFF_NM}" -D -C --defined-only "${real_lib}"
  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${BACKOFF_NM} -DC --defined-only ${real_lib} failed")
endif()
string(REPLACE ";" "\\;" symbols "${symbols}")
string(REPLACE "\n" ";" symbols "${symbols}")
set(exported 0)
set(foreign "")
foreach(line IN LISTS symbols)
  # "<address> <type> <name>"; <name> is demangled.
  if(NOT line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.*)$")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  math(EXPR exported "${exported} + 1")
  if(NOT name MATCHES "^((typeinfo name|typeinfo|vtable|VTT|guard variable|TLS init function|TLS wrapper function) for )?backoff::")
    string(APPEND foreign "\n  ${name}")
  endif()
endforeach()
if(foreign)
  message(FATAL_ERROR "libbackoff.so exports symbols outside namespace backoff:${foreign}")
endif()
if(exported EQUAL 0 OR NOT symbols MATCHES "backoff::parse_policy\\(")
  message(FATAL_ERROR "libbackoff.so does not export the public API (backoff::parse_policy)")
endif()
message(STATUS "libbackoff.so exports ${exported} symbols, all in namespace backoff")

# 3. A consumer linked with it.
consumer_configure_args(args "${BACKOFF_CONSUMER_SOURCE_DIR}" "${consumer_build}"
  "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)
run_step(configure-consumer "${CMAKE_COMMAND}" ${args})
expect_found_under("${consumer_build}" "${prefix}")
run_step(build-consumer "${CMAKE_COMMAND}" --build "${consumer_build}" ${backoff_config_args})
consumer_exe(exe "${consumer_build}" backoff_consumer)

execute_process(COMMAND "${BACKOFF_READELF}" -d "${exe}" OUTPUT_VARIABLE dynamic)
if(NOT dynamic MATCHES "\\(NEEDED\\)[^\n]*\\[${soname}\\]")
  message(FATAL_ERROR "backoff_consumer is not linked with ${soname}:\n${dynamic}")
endif()
execute_process(COMMAND "${BACKOFF_LDD}" "${exe}" OUTPUT_VARIABLE loaded RESULT_VARIABLE rc)
file(REAL_PATH "${prefix}/lib" real_libdir)
if(NOT rc STREQUAL "0" OR NOT loaded MATCHES "${soname} => ([^ \n]*)")
  message(FATAL_ERROR "ldd does not resolve ${soname} for backoff_consumer:\n${loaded}")
endif()
file(REAL_PATH "${CMAKE_MATCH_1}" loaded_lib)
if(NOT loaded_lib STREQUAL "${real_libdir}/libbackoff.so.${BACKOFF_VERSION}")
  message(FATAL_ERROR "backoff_consumer loads ${CMAKE_MATCH_1}, not the library in ${prefix}/lib")
endif()
message(STATUS "backoff_consumer loads ${CMAKE_MATCH_1}")
run_step(run-consumer "${exe}")

message(STATUS "shared library: OK")
