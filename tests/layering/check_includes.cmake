# SPDX-License-Identifier: Apache-2.0
# The layers of SPEC 7.1, checked on every #include of every source and header, so a part cannot
# use a header of a layer above or beside it even where nothing is linked (a header-only use).
# Every internal target puts all of src/ on the include path, so the compiler does not stop such an
# include; this check does. Each folder of src/ (and include/backoff) may include the folders of
# its allow-list only:
#   - the library (include/backoff, src/core, src/asio): "backoff/..." and, from third-party code,
#     Boost alone (no fmt, spdlog, nlohmann-json, toml++, CLI11, zlib);
#   - config and seed_models (header-only pieces shared by parts that may not reach one another):
#     the library;
#   - report: the library, config;
#   - faults (the fault specs, schedules and decisions, below the drivers so that the simulator
#     and the network harness share them): the library, config;
#   - systems (the system files' reader and their distributions, below the drivers for the same
#     reason): the library, config, seed_models, report, faults;
#   - the drivers sim, net and tool: the library, report (tool excepted: the statically linked
#     backoff-try carries no report layer), config, seed_models, faults and systems (tool
#     excepted), and their own folder, never each other;
#   - experiments (runs several drivers, SPEC 7.1: "an experiment that runs two drivers lives
#     above the drivers"): sim, net, report, faults and systems;
#   - cli: everything.
# An include is placed by where it resolves: a path relative to the including file first (so
# "../dispatch.hpp" or "model.hpp" count as the folder they land in), then the folder it names
# ("report/summary.hpp"), in quotes or angle brackets alike.
#
#   cmake -DSOURCE_DIR=<source> -P tests/layering/check_includes.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT IS_DIRECTORY "${SOURCE_DIR}/src")
  message(FATAL_ERROR "check_includes: no src/ under SOURCE_DIR='${SOURCE_DIR}'")
endif()

set(project_folders backoff core asio config seed_models report faults systems sim net tool
  experiments cli)
set(third_party_banned_in_library fmt spdlog nlohmann toml++ CLI zlib.h gtest gmock benchmark
  rapidcheck)

set(library backoff core asio)
set(allowed_backoff ${library})
set(allowed_core ${library})
set(allowed_asio ${library})
set(allowed_config ${library} config)
set(allowed_seed_models ${library} seed_models)
set(allowed_report ${library} config report)
set(allowed_faults ${library} config faults)
set(allowed_systems ${library} config seed_models report faults systems)
set(allowed_sim ${library} config seed_models report faults systems sim)
set(allowed_net ${library} config seed_models report faults systems net)
set(allowed_tool ${library} config tool)
set(allowed_experiments ${library} config seed_models report faults systems sim net experiments)
set(allowed_cli ${project_folders})

# The layer a path of the tree is in: include/backoff/... -> backoff, src/<layer>/... -> layer;
# empty outside them.
function(layer_of path out)
  file(RELATIVE_PATH relative "${SOURCE_DIR}" "${path}")
  if(relative MATCHES "^include/backoff/")
    set(${out} backoff PARENT_SCOPE)
  elseif(relative MATCHES "^src/([A-Za-z0-9_]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

set(failures "")
set(checked 0)
file(GLOB_RECURSE sources
  "${SOURCE_DIR}/include/backoff/*.hpp" "${SOURCE_DIR}/src/*.cpp" "${SOURCE_DIR}/src/*.hpp")
foreach(file IN LISTS sources)
  layer_of("${file}" layer)
  if(NOT layer IN_LIST project_folders)
    string(APPEND failures "\n  ${file}: src/${layer} is no layer this check knows (add its rule)")
    continue()
  endif()
  get_filename_component(folder "${file}" DIRECTORY)
  file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  foreach(line IN LISTS includes)
    math(EXPR checked "${checked} + 1")
    string(REGEX MATCH "[\"<]([^\">]+)[\">]" _ "${line}")
    set(header "${CMAKE_MATCH_1}")
    set(target "")
    cmake_path(ABSOLUTE_PATH header BASE_DIRECTORY "${folder}" NORMALIZE OUTPUT_VARIABLE beside)
    if(line MATCHES "\"" AND EXISTS "${beside}")
      layer_of("${beside}" target)
      if(target STREQUAL "")
        string(APPEND failures "\n  ${file}: ${line} (reaches outside include/ and src/)")
        continue()
      endif()
    elseif(header MATCHES "^([A-Za-z0-9_+]+)/")
      if(CMAKE_MATCH_1 IN_LIST project_folders)
        set(target "${CMAKE_MATCH_1}")
      endif()
    endif()
    if(NOT target STREQUAL "")
      if(NOT target IN_LIST allowed_${layer})
        string(APPEND failures "\n  ${file}: ${line} (${layer} must not use ${target})")
      endif()
    elseif(layer IN_LIST library)
      string(REGEX MATCH "^[^/]+" top "${header}")
      if(top IN_LIST third_party_banned_in_library)
        string(APPEND failures
          "\n  ${file}: ${line} (the library uses the standard library and Boost only)")
      endif()
    endif()
  endforeach()
endforeach()

if(failures)
  message(FATAL_ERROR "includes cross the layers:${failures}")
endif()
if(checked EQUAL 0)
  message(FATAL_ERROR "check_includes: no #include lines found under ${SOURCE_DIR}")
endif()
message(STATUS "layering: ${checked} includes, each within its layer's allow-list")
