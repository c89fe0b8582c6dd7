# SPDX-License-Identifier: MIT
# Shared build helpers: warnings, sanitizers and one function per test.

add_library(odl_warnings INTERFACE)
add_library(odl::warnings ALIAS odl_warnings)
target_compile_options(odl_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wformat=2 -Wundef
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
  $<$<BOOL:${ODL_WERROR}>:-Werror>)

# Sanitizers apply to every OdinLink target through this interface target,
# never through global flags.
add_library(odl_sanitize INTERFACE)
add_library(odl::sanitize ALIAS odl_sanitize)
if(ODL_SANITIZE)
  target_compile_options(odl_sanitize INTERFACE
    -fsanitize=${ODL_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(odl_sanitize INTERFACE -fsanitize=${ODL_SANITIZE})
  # clang links its C++ sanitizer runtime parts (UBSan's vptr checks) only
  # into C++ programs; C programs that use libodl (C++ inside) need them,
  # and the C++ library under them, too.
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    target_link_options(odl_sanitize INTERFACE "$<$<LINK_LANGUAGE:C>:-fsanitize-link-c++-runtime;-lstdc++>")
  endif()
endif()
# Fuzzing: every OdinLink target gets libFuzzer's coverage counters, so the
# fuzzers see inside the libraries they call; only the fuzz targets link
# libFuzzer itself (tests/fuzz).
if(ODL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ODL_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  target_compile_options(odl_sanitize INTERFACE -fsanitize=fuzzer-no-link)
endif()

# odl_add_test(NAME n SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# One executable per test unit, run through ctest with a label and a timeout.
function(odl_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  # C++17 whatever the compiler's default (clang 14's is C++14).
  target_compile_features(${T_NAME} PRIVATE cxx_std_17)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest_main GTest::gmock
                        odl::warnings odl::sanitize)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()

# odl_man_page(TARGET t NAME n COMPONENT c DESCRIPTION "...")
# Section 1 page n.1.gz made by help2man from t's --help, installed with
# component c. Without help2man (./odl installs it) no page is made and the
# package test says so.
find_program(ODL_HELP2MAN help2man)
function(odl_man_page)
  cmake_parse_arguments(M "" "TARGET;NAME;COMPONENT;DESCRIPTION" "" ${ARGN})
  if(NOT ODL_HELP2MAN)
    return()
  endif()
  set(page ${PROJECT_BINARY_DIR}/man/${M_NAME}.1)
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${ODL_HELP2MAN} --no-info --no-discard-stderr --section 1
            --name "${M_DESCRIPTION}" --version-string "${PROJECT_VERSION}"
            --output ${page} $<TARGET_FILE:${M_TARGET}>
    COMMAND gzip -9nf ${page}
    DEPENDS ${M_TARGET}
    COMMENT "man page ${M_NAME}(1)" VERBATIM)
  add_custom_target(man_${M_NAME} ALL DEPENDS ${page}.gz)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${M_COMPONENT})
endfunction()
