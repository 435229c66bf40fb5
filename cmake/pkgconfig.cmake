# SPDX-License-Identifier: Apache-2.0
# pkg-config files for the installed library, included by the top-level CMakeLists.txt inside its
# `if(BACKOFF_INSTALL)`: backoff.pc always, backoff-asio.pc with backoff::asio. Both come from
# cmake/backoff.pc.in and go to <libdir>/pkgconfig. They are relocatable: prefix is computed from
# ${pcfiledir}, so `cmake --install build --prefix ANYWHERE` gives working files.
#
#   c++ -std=c++20 $(pkg-config --cflags backoff) main.cpp $(pkg-config --libs backoff)
include_guard(GLOBAL)

set(backoff_pkgconfig_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# prefix, seen from <prefix>/<libdir>/pkgconfig: one ".." per component of the libdir, plus one
# for pkgconfig/. An absolute libdir (-DCMAKE_INSTALL_LIBDIR=/opt/lib) cannot be relocated: then
# prefix is CMAKE_INSTALL_PREFIX as configured.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(BACKOFF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(BACKOFF_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(BACKOFF_PC_PREFIX "\${pcfiledir}/..")
  string(REPLACE "/" ";" backoff_libdir_parts "${CMAKE_INSTALL_LIBDIR}")
  foreach(part IN LISTS backoff_libdir_parts)
    if(NOT part STREQUAL "" AND NOT part STREQUAL ".")
      string(APPEND BACKOFF_PC_PREFIX "/..")
    endif()
  endforeach()
  set(BACKOFF_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(BACKOFF_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(BACKOFF_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

# backoff.pc. A shared library links Threads itself (Libs.private, for --static); a static one
# needs it in every link, and its users need BACKOFF_STATIC_DEFINE (export.hpp).
set(BACKOFF_PC_NAME backoff)
set(BACKOFF_PC_DESCRIPTION "Retry and backoff policies, retry loops and overload control (C++20)")
set(BACKOFF_PC_REQUIRES "")
set(BACKOFF_PC_LIB backoff)
set(BACKOFF_PC_LIBS_PRIVATE " -pthread")
if(backoff_type STREQUAL "STATIC_LIBRARY")
  set(BACKOFF_PC_CFLAGS " -DBACKOFF_STATIC_DEFINE")
  set(BACKOFF_PC_LIBS " -pthread")
  set(BACKOFF_PC_LIBS_PRIVATE "")
else()
  set(BACKOFF_PC_CFLAGS "")
  set(BACKOFF_PC_LIBS "")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/backoff.pc.in" "${PROJECT_BINARY_DIR}/pkgconfig/backoff.pc"
  @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/backoff.pc" DESTINATION "${backoff_pkgconfig_dir}")

# backoff-asio.pc: Requires backoff. Boost ships no pkg-config file; its include directory is added
# when it is not one the compiler searches anyway.
if(BACKOFF_WITH_ASIO)
  set(BACKOFF_PC_NAME backoff-asio)
  set(BACKOFF_PC_DESCRIPTION "backoff's Asio coroutine retry loop (async_retry, async_window)")
  set(BACKOFF_PC_REQUIRES "Requires: backoff = ${PROJECT_VERSION}")
  set(BACKOFF_PC_LIB backoff_asio)
  set(BACKOFF_PC_LIBS "")
  set(BACKOFF_PC_LIBS_PRIVATE "")
  set(BACKOFF_PC_CFLAGS "")
  if(backoff_asio_type STREQUAL "STATIC_LIBRARY")
    string(APPEND BACKOFF_PC_CFLAGS " -DBACKOFF_ASIO_STATIC_DEFINE")
  endif()
  get_target_property(backoff_boost_includes Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
  foreach(dir IN LISTS backoff_boost_includes)
    if(dir AND NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
      string(APPEND BACKOFF_PC_CFLAGS " -I${dir}")
    endif()
  endforeach()
  configure_file("${PROJECT_SOURCE_DIR}/cmake/backoff.pc.in"
    "${PROJECT_BINARY_DIR}/pkgconfig/backoff-asio.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/backoff-asio.pc"
    DESTINATION "${backoff_pkgconfig_dir}")
endif()
