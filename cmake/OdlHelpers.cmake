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
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest_main GTest::gmock
                        odl::warnings odl::sanitize)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()
