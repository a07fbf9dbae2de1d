# One precompiled <torch/torch.h> for every translation unit that includes LibTorch (CI time).
#
# Parsing LibTorch's headers is most of such a unit's compile time: a file holding only
# `#include <torch/torch.h>` takes 25 s at -O2 -g1 on a 2-core box, blocks.cc 24 s in all; with
# the header precompiled, ~12 s of each goes. About 50 units include it (the engine's libraries,
# its tests, one bench tool), so the header is compiled once for the libraries and once for
# the tests (libreyolo_torch_pch and _test, ~60 s each) and
# every target below reuses it (REUSE_FROM: the same compile flags, which these targets share;
# GCC checks the rest with -Winvalid-pch and falls back to parsing the header, never to a
# wrong build). Files of those targets that do not include LibTorch skip it: the precompiled
# header's own load costs a unit that never needed it several seconds.
#
# -DLIBREYOLO_TORCH_PCH=OFF builds without it (to check that every unit includes what it uses).
option(LIBREYOLO_TORCH_PCH "precompile <torch/torch.h> once for the engine's units" ON)

# TARGET -> its sources that include no LibTorch (absolute paths), or nothing.
set(_LIBREYOLO_TORCH_PCH_TARGETS
  libreyolo_model libreyolo_loss
  libreyolo_engine "server/engine/runtime/engine_info.cc;server/engine/job/job_files.cc"
  libreyolo_infer "server/engine/infer/export_family.cc;server/engine/infer/task_family.cc"
  engine_cuda_runtime_test engine_head_transfer_test engine_job_pipeline_test
  engine_kineto_crosscheck_test engine_model_loader_test engine_train_job_test
  engine_collect_test "tests/engine/collect/trace_export_test.cc"
  engine_flops_torchscript_test engine_data_loader_test engine_postprocess_test
  engine_task_export_test engine_torchscript_model_test engine_torchscript_registry_test
  fixture_loss_test loss_test pgi_step_test model_fixture_test model_test
  profiler_switch_cost)

# Called once, at the end of the top-level CMakeLists.txt, when every target exists.
function(libreyolo_torch_pch)
  if(NOT LIBREYOLO_TORCH_PCH OR NOT TARGET libreyolo_model)
    return()
  endif()
  # Two: GoogleTest's targets compile with -pthread (_REENTRANT), and GCC refuses a header
  # precompiled without it ("not used because `_REENTRANT' is defined"), and the reverse.
  # CONFIGURE writes only when the text changes: a re-run of CMake leaves both headers built.
  file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/torch_pch.cc"
       CONTENT "// the unit behind the precompiled LibTorch header\n")
  add_library(libreyolo_torch_pch OBJECT "${CMAKE_BINARY_DIR}/torch_pch.cc")
  target_link_libraries(libreyolo_torch_pch PRIVATE ${TORCH_LIBRARIES} libreyolo_warnings)
  target_precompile_headers(libreyolo_torch_pch PRIVATE <torch/torch.h>)
  if(TARGET GTest::gtest)
    add_library(libreyolo_torch_pch_test OBJECT "${CMAKE_BINARY_DIR}/torch_pch.cc")
    target_link_libraries(libreyolo_torch_pch_test PRIVATE ${TORCH_LIBRARIES} GTest::gtest
                          libreyolo_warnings)
    target_compile_options(libreyolo_torch_pch_test PRIVATE -pthread)  # as the tests' (gRPC's)
    if(NOT LIBREYOLO_TESTS_OPTIMIZED)
      target_compile_options(libreyolo_torch_pch_test PRIVATE -O0)  # as the tests' (tests/)
    endif()
    target_precompile_headers(libreyolo_torch_pch_test PRIVATE <torch/torch.h>)
  endif()
  set(_target "")
  foreach(item ${_LIBREYOLO_TORCH_PCH_TARGETS})
    if(TARGET ${item})
      set(_target ${item})
      get_target_property(_libs ${_target} LINK_LIBRARIES)
      if("GTest::gtest_main" IN_LIST _libs AND TARGET libreyolo_torch_pch_test)
        target_precompile_headers(${_target} REUSE_FROM libreyolo_torch_pch_test)
      else()
        target_precompile_headers(${_target} REUSE_FROM libreyolo_torch_pch)
      endif()
    elseif(item MATCHES "\\.cc$")
      if(NOT EXISTS "${CMAKE_SOURCE_DIR}/${item}")
        message(FATAL_ERROR "cmake/TorchPch.cmake: ${item} is not a source file of the tree")
      endif()
      if(_target)
        set_source_files_properties("${CMAKE_SOURCE_DIR}/${item}" TARGET_DIRECTORY ${_target}
                                    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    else()
      set(_target "")  # a target this configuration does not build
    endif()
  endforeach()
endfunction()
