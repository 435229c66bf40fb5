# SPDX-License-Identifier: Apache-2.0
# Every target lists its sources by name (no globbing, so a stray file never joins a layer by
# being dropped into its folder). The other side of that rule: a source that no CMakeLists.txt
# names is compiled by nothing, and this check fails naming it. A source counts as listed when a
# CMakeLists.txt in its folder or a folder above names its path relative to that CMakeLists.txt.
#
#   cmake -DSOURCE_DIR=<source> -P tests/layering/check_sources_listed.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT IS_DIRECTORY "${SOURCE_DIR}/src")
  message(FATAL_ERROR "check_sources_listed: no src/ under SOURCE_DIR='${SOURCE_DIR}'")
endif()

file(GLOB_RECURSE sources "${SOURCE_DIR}/src/*.cpp")
set(unlisted "")
foreach(source IN LISTS sources)
  get_filename_component(folder "${source}" DIRECTORY)
  set(listed FALSE)
  while(NOT listed)
    if(EXISTS "${folder}/CMakeLists.txt")
      file(RELATIVE_PATH relative "${folder}" "${source}")
      file(READ "${folder}/CMakeLists.txt" lists)
      string(FIND "${lists}" "${relative}" at)
      if(NOT at EQUAL -1)
        set(listed TRUE)
      endif()
    endif()
    if(folder STREQUAL "${SOURCE_DIR}" OR NOT folder MATCHES "^${SOURCE_DIR}/")
      break()
    endif()
    get_filename_component(folder "${folder}" DIRECTORY)
  endwhile()
  if(NOT listed)
    file(RELATIVE_PATH shown "${SOURCE_DIR}" "${source}")
    string(APPEND unlisted "\n  ${shown}")
  endif()
endforeach()

# Globs of sources in the CMakeLists.txt that build src/ (globs of data, like the built-in
# scenarios, are not sources).
file(GLOB_RECURSE globbing "${SOURCE_DIR}/src/CMakeLists.txt")
list(APPEND globbing "${SOURCE_DIR}/CMakeLists.txt")
set(globs "")
foreach(lists IN LISTS globbing)
  file(STRINGS "${lists}" lines REGEX "file\\(GLOB")
  foreach(line IN LISTS lines)
    if(line MATCHES "\\*\\.[ch]pp")
      string(APPEND globs "\n  ${lists}: ${line}")
    endif()
  endforeach()
endforeach()

if(unlisted OR globs)
  message(FATAL_ERROR "sources not listed by name:${unlisted}${globs}")
endif()
list(LENGTH sources count)
message(STATUS "sources: all ${count} sources of src/ listed by name in a CMakeLists.txt")
