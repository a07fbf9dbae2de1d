# LIBREYOLO_CUPTI selects the CUPTI collector (GPU kernels, copies, API calls, device memory):
#   AUTO (default)  build it where find_package(CUDAToolkit) finds CUPTI, else the variant whose
#                   collections carry a "not in this build" note;
#   ON              require CUPTI (configure fails without it);
#   OFF             never build it.
# Sets LIBREYOLO_CUPTI_ENABLED (TRUE/FALSE; also in the cache, so tests/ sees it); CUDA::cupti
# exists in the including directory when TRUE.
set(LIBREYOLO_CUPTI AUTO CACHE STRING "Build the CUPTI GPU-activity collector: AUTO, ON or OFF")
set_property(CACHE LIBREYOLO_CUPTI PROPERTY STRINGS AUTO ON OFF)

string(TOUPPER "${LIBREYOLO_CUPTI}" _libreyolo_cupti_mode)
if(NOT _libreyolo_cupti_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR
    "LIBREYOLO_CUPTI is '${LIBREYOLO_CUPTI}'; allowed values are AUTO, ON and OFF")
endif()

set(LIBREYOLO_CUPTI_ENABLED FALSE)
if(NOT _libreyolo_cupti_mode STREQUAL "OFF")
  # Looks in CUDAToolkit_ROOT, $CUDA_PATH, the nvcc on PATH and /usr/local/cuda.
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::cupti AND CUDAToolkit_CUPTI_INCLUDE_DIR)
    set(LIBREYOLO_CUPTI_ENABLED TRUE)
  elseif(_libreyolo_cupti_mode STREQUAL "ON")
    message(FATAL_ERROR
      "LIBREYOLO_CUPTI=ON but CUPTI was not found (no CUDA::cupti from find_package(CUDAToolkit)). "
      "Install the CUDA toolkit with CUPTI (e.g. /usr/local/cuda) and, if it is elsewhere, pass "
      "-DCUDAToolkit_ROOT=/path/to/cuda; or configure with -DLIBREYOLO_CUPTI=AUTO or OFF.")
  endif()
endif()

set(LIBREYOLO_CUPTI_ENABLED ${LIBREYOLO_CUPTI_ENABLED} CACHE INTERNAL "the CUPTI collector is built")

if(LIBREYOLO_CUPTI_ENABLED)
  get_target_property(_libreyolo_cupti_lib CUDA::cupti IMPORTED_LOCATION)
  message(STATUS "LibreYOLO CUPTI collector: built (LIBREYOLO_CUPTI=${LIBREYOLO_CUPTI}, "
                 "CUDA ${CUDAToolkit_VERSION}, ${_libreyolo_cupti_lib})")
elseif(_libreyolo_cupti_mode STREQUAL "OFF")
  message(STATUS "LibreYOLO CUPTI collector: not built (LIBREYOLO_CUPTI=OFF)")
else()
  message(STATUS "LibreYOLO CUPTI collector: not built (LIBREYOLO_CUPTI=AUTO and no CUPTI found; "
                 "install the CUDA toolkit or set CUDAToolkit_ROOT)")
endif()
