// Hand-made CUPTI records for the collector's tests (an H100-like device, a few kernels).
#ifndef LIBREYOLO_TESTS_ENGINE_COLLECT_CUPTI_TEST_RECORDS_H_
#define LIBREYOLO_TESTS_ENGINE_COLLECT_CUPTI_TEST_RECORDS_H_

#include <string>

#include "server/engine/collect/cupti_convert.h"
#include "server/engine/collect/cupti_records.h"

namespace libreyolo::engine::testing_records {

inline CuptiDeviceRecord Device() {
  CuptiDeviceRecord d;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.sm_count = 132;
  d.global_memory_bytes = 85'000'000'000;
  d.compute_major = 9;
  d.compute_minor = 0;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.warp_size = 32;
  d.shared_memory_per_block = 49152;
  d.shared_memory_per_sm = 233472;
  d.shared_memory_per_block_optin = 232448;
  return d;
}

// A kernel on device 0, context 1, stream 7: grid 264x2x1, block 256x1x1.
inline CuptiKernelRecord Kernel(const std::string& name, uint64_t start, uint64_t end,
                                uint32_t correlation) {
  CuptiKernelRecord k;
  k.name = name;
  k.start_ns = start;
  k.end_ns = end;
  k.device = 0;
  k.context = 1;
  k.stream = 7;
  k.correlation = correlation;
  k.grid_x = 264;
  k.grid_y = 2;
  k.grid_z = 1;
  k.block_x = 256;
  k.block_y = 1;
  k.block_z = 1;
  k.registers_per_thread = 128;
  k.static_shared_memory = 1024;
  k.dynamic_shared_memory = 4096;
  return k;
}

inline CuptiApiRecord Api(CuptiApiDomain domain, uint32_t cbid, uint64_t start, uint64_t end,
                          uint32_t thread, uint32_t correlation) {
  CuptiApiRecord a;
  a.domain = domain;
  a.cbid = cbid;
  a.start_ns = start;
  a.end_ns = end;
  a.process_id = 4321;
  a.thread_id = thread;
  a.correlation = correlation;
  return a;
}

inline CuptiMemoryRecord Memory(CuptiMemoryOperation op, uint8_t kind, uint64_t bytes,
                                uint64_t ts) {
  CuptiMemoryRecord m;
  m.operation = op;
  m.memory_kind = kind;
  m.bytes = bytes;
  m.address = 0x7f0000000000;
  m.device = 0;
  m.stream = 0xFFFFFFFFu;
  m.timestamp_ns = ts;
  return m;
}

// cuptiGetCallbackName's answers for the ids the tests use (CUDA 12/13 numbering).
inline CuptiApiNameFn NameTable() {
  return [](CuptiApiDomain domain, uint32_t cbid) -> std::string {
    if (domain == CuptiApiDomain::kRuntime) {
      switch (cbid) {
        case 20:
          return "cudaMalloc_v3020";
        case 22:
          return "cudaFree_v3020";
        case 41:
          return "cudaMemcpyAsync_v3020";
        case 131:
          return "cudaStreamSynchronize_v3020";
        case 211:
          return "cudaLaunchKernel_v7000";
        default:
          return "";
      }
    }
    switch (cbid) {
      case 243:
        return "cuMemAlloc_v2";
      case 307:
        return "cuLaunchKernel";
      default:
        return "";
    }
  };
}

}  // namespace libreyolo::engine::testing_records

#endif  // LIBREYOLO_TESTS_ENGINE_COLLECT_CUPTI_TEST_RECORDS_H_
