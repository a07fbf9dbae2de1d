// What the CUPTI collector reads from CUPTI's activity buffers, as plain structs that do not
// depend on the CUPTI headers or on the record versions of one CUDA release (CUpti_ActivityKernel9
// on CUDA 12, CUpti_ActivityKernel10 on CUDA 13, ...). The adapter in cupti_adapter.h fills them;
// cupti_convert.h turns them into CollectedEvents. Times are CUPTI's nanoseconds.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_RECORDS_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace libreyolo::engine {

struct CuptiKernelRecord {
  std::string name;  // as CUPTI reports it (demangled by default)
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  int32_t block_x = 0, block_y = 0, block_z = 0;
  uint32_t registers_per_thread = 0;
  int32_t static_shared_memory = 0, dynamic_shared_memory = 0;
  uint32_t local_memory_per_thread = 0;
  uint64_t queued_ns = 0;  // 0 when CUPTI did not measure it
};

// The values of CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind (stable across releases).
struct CuptiMemcpyRecord {
  uint8_t copy_kind = 0;  // 1 HtoD, 2 DtoH, 3 HtoA, 4 AtoH, 5 AtoA, 6 AtoD, 7 DtoA, 8 DtoD, ...
  uint8_t src_kind = 0;   // 1 Pageable, 2 Pinned, 3 Device, 4 Array, 5 Managed, ...
  uint8_t dst_kind = 0;
  uint64_t bytes = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
};

struct CuptiMemsetRecord {
  uint32_t value = 0;
  uint16_t memory_kind = 0;
  uint64_t bytes = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
};

enum class CuptiApiDomain : uint8_t { kRuntime, kDriver };

struct CuptiApiRecord {
  CuptiApiDomain domain = CuptiApiDomain::kRuntime;
  uint32_t cbid = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t process_id = 0;
  uint32_t thread_id = 0;  // CUPTI's id of the calling OS thread
  uint32_t correlation = 0;
};

struct CuptiDeviceRecord {
  uint32_t id = 0;
  std::string name;
  uint32_t sm_count = 0;
  uint64_t global_memory_bytes = 0;
  uint32_t compute_major = 0, compute_minor = 0;
  uint32_t max_threads_per_block = 0, max_threads_per_sm = 0;
  uint32_t regs_per_block = 0, regs_per_sm = 0;
  uint32_t warp_size = 0;
  uint32_t shared_memory_per_block = 0, shared_memory_per_sm = 0;
  std::optional<uint32_t> shared_memory_per_block_optin;  // not in CUPTI's record: the driver's
};

// CUPTI_ACTIVITY_KIND_MEMORY2: one record per allocation and one per release.
enum class CuptiMemoryOperation : uint8_t { kAllocation, kRelease };

struct CuptiMemoryRecord {
  CuptiMemoryOperation operation = CuptiMemoryOperation::kAllocation;
  uint8_t memory_kind = 0;  // CUpti_ActivityMemoryKind: 3 Device, 2 Pinned, 5 Managed, ...
  uint64_t bytes = 0;
  uint64_t address = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  uint32_t process_id = 0;
  uint64_t timestamp_ns = 0;
};

// Everything one collection session read.
struct CuptiRecords {
  std::vector<CuptiKernelRecord> kernels;
  std::vector<CuptiMemcpyRecord> memcpys;
  std::vector<CuptiMemsetRecord> memsets;
  std::vector<CuptiApiRecord> api_calls;
  std::vector<CuptiDeviceRecord> devices;
  std::vector<CuptiMemoryRecord> memory;
  uint64_t dropped = 0;  // records CUPTI could not store (buffers full)
  uint64_t other = 0;    // records of kinds we do not convert
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_RECORDS_H_
