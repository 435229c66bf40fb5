# SPDX-License-Identifier: Apache-2.0
# The layering rules of STYLE.md and issue 17, checked on the link graph that the configure step
# wrote (cmake/backoff_helpers.cmake, backoff_write_link_graph): the report layer depends on the
# library at most; the fault layer (fault specs, schedules and decisions, src/faults) sits below
# the drivers, shared by the simulator and the network harness, and reaches neither them nor
# report; the system files' reader (src/systems) sits there too, above faults and report; the
# simulator, the network harness and the retry tool never reach one another;
# experiments that use several drivers sit above them. A target missing from the graph fails too,
# so a rename cannot make the check pass by accident.
#
#   cmake -DGRAPH=<build>/link-graph.txt -DSOURCE_DIR=<source> -P tests/layering/check_layers.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT EXISTS "${GRAPH}")
  message(FATAL_ERROR "no link graph at ${GRAPH}")
endif()
file(STRINGS "${GRAPH}" lines)
foreach(line IN LISTS lines)
  string(REGEX MATCH "^([A-Za-z0-9_]+): ?(.*)$" _ "${line}")
  set(links_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  set(known_${CMAKE_MATCH_1} TRUE)
endforeach()

set(failures "")
# check(<target> MUST <dep>... NEVER <dep>...)
function(check target)
  cmake_parse_arguments(arg "" "" "MUST;NEVER" ${ARGN})
  if(NOT known_${target})
    set(failures "${failures}\n  ${target} is not in the graph" PARENT_SCOPE)
    return()
  endif()
  set(found "${failures}")
  foreach(dep IN LISTS arg_MUST)
    if(NOT dep IN_LIST links_${target})
      string(APPEND found "\n  ${target} should link ${dep} (links: ${links_${target}})")
    endif()
  endforeach()
  foreach(dep IN LISTS arg_NEVER)
    if(dep IN_LIST links_${target})
      string(APPEND found "\n  ${target} links ${dep}, which it must not (links: ${links_${target}})")
    endif()
  endforeach()
  set(failures "${found}" PARENT_SCOPE)
endfunction()

set(drivers backoff_sim backoff_net backoff_tool backoff_experiments backoff_cli)
check(backoff NEVER backoff_asio backoff_report ${drivers})
check(backoff_report MUST backoff NEVER ${drivers})
check(backoff_faults MUST backoff NEVER backoff_asio backoff_report ${drivers})
check(backoff_systems MUST backoff backoff_faults NEVER backoff_asio ${drivers})
check(backoff_sim MUST backoff_report backoff_systems NEVER backoff_net backoff_tool backoff_experiments backoff_cli)
check(backoff_net MUST backoff_report backoff_asio backoff_systems
  NEVER backoff_sim backoff_tool backoff_experiments backoff_cli)
check(backoff_tool MUST backoff_asio
  NEVER backoff_sim backoff_net backoff_report backoff_experiments backoff_cli)
check(backoff_experiments MUST backoff_net backoff_sim backoff_report NEVER backoff_cli)
# backoff-try is the retry tool alone (issue 24: start-up as cheap as `retry`).
check(backoff_cli_retry MUST backoff_tool NEVER backoff_sim backoff_net backoff_experiments)
check(backoff_try_cli MUST backoff_cli_retry backoff_tool
  NEVER backoff_sim backoff_net backoff_experiments backoff_cli)

if(failures)
  message(FATAL_ERROR "layering broken:${failures}")
endif()
message(STATUS "layering: every part links only downwards")
