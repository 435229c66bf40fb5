# SPDX-License-Identifier: Apache-2.0
# Pieces a newcomer can read in one sitting: no source file in src/ over MAX_FILE_LINES lines and
# no function over MAX_FUNCTION_LINES (from its first line to its closing brace, lambdas inside it
# included). Functions are found by Universal Ctags (Debian's universal-ctags, installed by
# scripts/install-deps.sh), which reports where each definition starts and ends; a missing ctags
# fails the check rather than skipping it. Fails naming every file and function over its limit.
#
#   cmake -DSOURCE_DIR=<source> [-DMAX_FILE_LINES=800] [-DMAX_FUNCTION_LINES=100]
#         [-DCTAGS=<ctags>] -P tests/layering/check_sizes.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT IS_DIRECTORY "${SOURCE_DIR}/src")
  message(FATAL_ERROR "check_sizes: no src/ under SOURCE_DIR='${SOURCE_DIR}'")
endif()
if(NOT MAX_FILE_LINES)
  set(MAX_FILE_LINES 800)
endif()
if(NOT MAX_FUNCTION_LINES)
  set(MAX_FUNCTION_LINES 100)
endif()
if(NOT CTAGS)
  find_program(CTAGS NAMES ctags-universal universal-ctags ctags)
endif()
if(NOT CTAGS)
  message(FATAL_ERROR "check_sizes: Universal Ctags not found (apt install universal-ctags)")
endif()

file(GLOB_RECURSE sources "${SOURCE_DIR}/src/*.cpp" "${SOURCE_DIR}/src/*.hpp")
if(NOT sources)
  message(FATAL_ERROR "check_sizes: no sources under ${SOURCE_DIR}/src")
endif()

set(failures "")
foreach(file IN LISTS sources)
  file(READ "${file}" text)
  string(REGEX REPLACE "[^\n]" "" feeds "${text}")
  string(LENGTH "${feeds}" count)
  if(count GREATER MAX_FILE_LINES)
    file(RELATIVE_PATH shown "${SOURCE_DIR}" "${file}")
    string(APPEND failures "\n  ${shown}: ${count} lines (at most ${MAX_FILE_LINES})")
  endif()
endforeach()

# One line per function definition: "<end> <start> <name> <file>".
execute_process(
  COMMAND "${CTAGS}" --languages=C++ --kinds-C++=f --fields=+ne -x
    "--_xformat=%{end} %{line} %N %F" ${sources}
  OUTPUT_VARIABLE tags ERROR_VARIABLE ctags_errors RESULT_VARIABLE ctags_status)
if(NOT ctags_status EQUAL 0 OR NOT ctags_errors STREQUAL "")
  message(FATAL_ERROR "check_sizes: ${CTAGS} failed (${ctags_status}): ${ctags_errors}")
endif()
string(REPLACE "\n" ";" tags "${tags}")
set(functions 0)
foreach(tag IN LISTS tags)
  if(NOT tag MATCHES "^([0-9]+) ([0-9]+) ([^ ]+) (.+)$")
    continue()
  endif()
  math(EXPR functions "${functions} + 1")
  math(EXPR length "${CMAKE_MATCH_1} - ${CMAKE_MATCH_2} + 1")
  if(length GREATER MAX_FUNCTION_LINES)
    file(RELATIVE_PATH shown "${SOURCE_DIR}" "${CMAKE_MATCH_4}")
    string(APPEND failures
      "\n  ${shown}:${CMAKE_MATCH_2}: ${CMAKE_MATCH_3} is ${length} lines (at most ${MAX_FUNCTION_LINES})")
  endif()
endforeach()
if(functions EQUAL 0)
  message(FATAL_ERROR "check_sizes: ctags found no function definitions (did its output change?)")
endif()

if(failures)
  message(FATAL_ERROR "pieces over their size:${failures}")
endif()
message(STATUS "sizes: every file in src/ within ${MAX_FILE_LINES} lines, each of ${functions} "
  "functions within ${MAX_FUNCTION_LINES}")
