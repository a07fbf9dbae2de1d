# Test tiers (issue 22 §5): every ctest test carries exactly one of these labels, and
# scripts/test.sh runs `unit` first, stopping at its first failure, then the others.
#   unit            in-process and fast: no engine job, no daemon process, no Python peer
#   engine          real LibTorch jobs in-process or in our own engine binaries (seconds each)
#   daemon_process  real libreyolod processes driven by the client, stubs or scripts
#   python_peer     the Python LibreYOLO, torch's Python DDP or HTA checking our work
#   browser         the report in headless Chromium
# scripts/test.sh refuses a test without a tier (scripts/check-test-tiers.sh).
set(LIBREYOLO_TEST_TIERS unit engine daemon_process python_peer browser)

function(_libreyolo_check_tier tier)
  if(NOT tier IN_LIST LIBREYOLO_TEST_TIERS)
    message(FATAL_ERROR "test tier '${tier}' is not one of: ${LIBREYOLO_TEST_TIERS}")
  endif()
endfunction()

# Tests that run LibTorch (or the Python torch) in their own process wait for work the way the
# engine worker does (server/engine/runtime/cpu_threads.h: OMP_WAIT_POLICY=PASSIVE, which libreyolod's
# workers and libreyolo-engine set for themselves): with libgomp's default, idle OpenMP threads
# spin, and two such tests side by side on a 2-core box took 2x-40x longer (the engine tier:
# 87 s -> 41 s). Daemon processes are left as they start, so their tests see the workers set it.
function(_libreyolo_tier_environment tier out)
  if(tier STREQUAL "daemon_process")
    set(${out} "" PARENT_SCOPE)
  else()
    set(${out} ENVIRONMENT_MODIFICATION OMP_WAIT_POLICY=set:PASSIVE PARENT_SCOPE)
  endif()
endfunction()

# libreyolo_add_test(<name> SOURCES <files...> [LIBS <targets...>] [TIMEOUT <seconds>]
#                    [TIER <tier>] [PROPERTIES <ctest properties...>])
# One GoogleTest binary linked with gtest_main and the project libraries; the fixture root and
# the repository root are passed in as compile definitions so tests never guess paths.
# TIMEOUT is each test case's ctest timeout (default 300 s); TIER its tier label (default
# unit); PROPERTIES are further ctest properties of every test case (RUN_SERIAL TRUE, ...).
function(libreyolo_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;TIER" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT ARG_TIER)
    set(ARG_TIER unit)
  endif()
  _libreyolo_check_tier(${ARG_TIER})
  _libreyolo_tier_environment(${ARG_TIER} _env)
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
                       PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS ${ARG_TIER} ${_env}
                                  ${ARG_PROPERTIES})
endfunction()

# libreyolo_test_tier(<tier> <test>...): the tier of tests registered with add_test.
function(libreyolo_test_tier tier)
  _libreyolo_check_tier(${tier})
  set_property(TEST ${ARGN} APPEND PROPERTY LABELS ${tier})
  if(NOT tier STREQUAL "daemon_process")
    set_property(TEST ${ARGN} APPEND PROPERTY ENVIRONMENT_MODIFICATION OMP_WAIT_POLICY=set:PASSIVE)
  endif()
endfunction()
