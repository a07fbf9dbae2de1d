# libreyolo_add_test(<name> SOURCES <files...> [LIBS <targets...>] [TIMEOUT <seconds>]
#                    [PROPERTIES <ctest properties...>])
# One GoogleTest binary linked with gtest_main and the project libraries; the fixture root and
# the repository root are passed in as compile definitions so tests never guess paths.
# TIMEOUT is each test case's ctest timeout (default 300 s); PROPERTIES are further ctest
# properties of every test case (RUN_SERIAL TRUE, LABELS ...).
function(libreyolo_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE GTest::gtest_main GTest::gmock libreyolo_cli
                        libreyolo_warnings ${ARG_LIBS})
  target_compile_definitions(${name} PRIVATE
    LIBREYOLO_FIXTURES_DIR="${LIBREYOLO_FIXTURES_DIR}"
    LIBREYOLO_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    LIBREYOLO_BINARY_DIR="${CMAKE_BINARY_DIR}"
    LIBREYOLO_SHARED_DIR="${LIBREYOLO_SHARED_DIR}")
  # gtest macros trip a few of our stricter warnings; keep the rest on.
  target_compile_options(${name} PRIVATE -Wno-sign-conversion -Wno-conversion)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT ${ARG_TIMEOUT} ${ARG_PROPERTIES})
endfunction()
