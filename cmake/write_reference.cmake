# SPDX-License-Identifier: Apache-2.0
# Writes the man page and the shell completions from the built `backoff` (src/cli/reference.hpp),
# so that they come from the same CLI11 app as --help:
#   cmake -DBACKOFF=<exe> -DOUT=<dir> -P cmake/write_reference.cmake
foreach(item "man1/backoff.1|--man" "completions/backoff|--completion;bash"
             "zsh/_backoff|--completion;zsh")
  string(REPLACE "|" ";" parts "${item}")
  list(GET parts 0 file)
  list(SUBLIST parts 1 -1 args)
  get_filename_component(dir "${OUT}/${file}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND "${BACKOFF}" ${args} OUTPUT_FILE "${OUT}/${file}.tmp"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${BACKOFF} ${args} failed (${rc}): ${err}")
  endif()
  file(RENAME "${OUT}/${file}.tmp" "${OUT}/${file}")
endforeach()
