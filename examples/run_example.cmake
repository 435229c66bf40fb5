# SPDX-License-Identifier: Apache-2.0
# cmake -P script: runs the example EXE, fails unless it exits 0 and its output (stdout and
# stderr) matches the regular expression EXPECT.
foreach(var IN ITEMS EXE EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_example.cmake: -D${var}=... is required")
  endif()
endforeach()
execute_process(COMMAND "${EXE}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT 50)
message(STATUS "${out}${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "example ${EXE} exited with ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "example ${EXE}: the output does not match '${EXPECT}'")
endif()
