# SPDX-License-Identifier: Apache-2.0
# Every source file of the project says its licence in its first line (after a script's `#!`
# line): `SPDX-License-Identifier: Apache-2.0` (README, "License"). Fails naming the files that
# do not, so a new file cannot land without it.
#
#   cmake -DSOURCE_DIR=<source> -P tests/licence/check_spdx.cmake
cmake_minimum_required(VERSION 3.25)
set(patterns "")
foreach(dir include src tests bench fuzz examples cmake scripts .ci)
  list(APPEND patterns
    "${SOURCE_DIR}/${dir}/*.cpp" "${SOURCE_DIR}/${dir}/*.hpp" "${SOURCE_DIR}/${dir}/*.h"
    "${SOURCE_DIR}/${dir}/*.cmake" "${SOURCE_DIR}/${dir}/*.sh" "${SOURCE_DIR}/${dir}/CMakeLists.txt")
endforeach()
file(GLOB_RECURSE files LIST_DIRECTORIES false ${patterns})
list(APPEND files "${SOURCE_DIR}/CMakeLists.txt" "${SOURCE_DIR}/Makefile" "${SOURCE_DIR}/.ci/run")
set(missing "")
set(checked 0)
foreach(file IN LISTS files)
  file(STRINGS "${file}" head LIMIT_COUNT 2)
  list(LENGTH head lines)
  set(first "")
  if(lines GREATER 0)
    list(GET head 0 first)
  endif()
  if(first MATCHES "^#!" AND lines GREATER 1)
    list(GET head 1 first)
  endif()
  if(NOT first MATCHES "SPDX-License-Identifier: Apache-2.0$")
    file(RELATIVE_PATH shown "${SOURCE_DIR}" "${file}")
    string(APPEND missing "\n  ${shown}")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked LESS 100)
  message(FATAL_ERROR "only ${checked} source files found under ${SOURCE_DIR}: wrong folder?")
endif()
if(missing)
  message(FATAL_ERROR "no 'SPDX-License-Identifier: Apache-2.0' first line in:${missing}")
endif()
message(STATUS "${checked} source files carry the SPDX line")
