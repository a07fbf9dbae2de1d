// CUPTI's activity records -> our version-independent records (cupti_records.h). The only code
// that knows CUpti_Activity* layouts. Built only with the CUDA toolkit (LIBREYOLO_CUPTI).
//
// Each CUDA release adds fields at the end of a record and renames the struct (Kernel9 on CUDA 12,
// Kernel10 on CUDA 13, ...); the fields we read keep their names and offsets, so the adapters are
// templates over the record type and the newest type of the headers we build with is used.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_ADAPTER_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_ADAPTER_H_

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "server/engine/collect/cupti_records.h"

namespace libreyolo::engine {

#if CUPTI_API_VERSION >= 130000  // CUDA 13
using CuptiKernelActivity = CUpti_ActivityKernel10;
using CuptiMemcpyActivity = CUpti_ActivityMemcpy6;
using CuptiMemoryActivity = CUpti_ActivityMemory4;
using CuptiDeviceActivity = CUpti_ActivityDevice5;
#elif CUPTI_API_VERSION >= 19  // CUDA 12
using CuptiKernelActivity = CUpti_ActivityKernel9;
#if CUPTI_API_VERSION >= 26    // 12.8
using CuptiMemcpyActivity = CUpti_ActivityMemcpy6;
#else
using CuptiMemcpyActivity = CUpti_ActivityMemcpy5;
#endif
#if CUPTI_API_VERSION >= 24  // 12.6
using CuptiMemoryActivity = CUpti_ActivityMemory4;
#else
using CuptiMemoryActivity = CUpti_ActivityMemory3;
#endif
using CuptiDeviceActivity = CUpti_ActivityDevice4;
#else
#error "the CUPTI collector needs CUDA 12 or newer (CUPTI_API_VERSION >= 19)"
#endif
using CuptiMemsetActivity = CUpti_ActivityMemset4;

template <typename K>
CuptiKernelRecord KernelRecordOf(const K& k) {
  CuptiKernelRecord r;
  r.name = k.name != nullptr ? k.name : "";
  r.start_ns = k.start;
  r.end_ns = k.end;
  r.device = k.deviceId;
  r.context = k.contextId;
  r.stream = k.streamId;
  r.correlation = k.correlationId;
  r.grid_x = k.gridX;
  r.grid_y = k.gridY;
  r.grid_z = k.gridZ;
  r.block_x = k.blockX;
  r.block_y = k.blockY;
  r.block_z = k.blockZ;
  r.registers_per_thread = k.registersPerThread;
  r.static_shared_memory = k.staticSharedMemory;
  r.dynamic_shared_memory = k.dynamicSharedMemory;
  r.local_memory_per_thread = k.localMemoryPerThread;
  r.queued_ns = k.queued;  // CUPTI_TIMESTAMP_UNKNOWN (0) when not measured
  return r;
}

template <typename M>
CuptiMemcpyRecord MemcpyRecordOf(const M& m) {
  CuptiMemcpyRecord r;
  r.copy_kind = m.copyKind;
  r.src_kind = m.srcKind;
  r.dst_kind = m.dstKind;
  r.bytes = m.bytes;
  r.start_ns = m.start;
  r.end_ns = m.end;
  r.device = m.deviceId;
  r.context = m.contextId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
  return r;
}

template <typename M>
CuptiMemsetRecord MemsetRecordOf(const M& m) {
  CuptiMemsetRecord r;
  r.value = m.value;
  r.memory_kind = m.memoryKind;
  r.bytes = m.bytes;
  r.start_ns = m.start;
  r.end_ns = m.end;
  r.device = m.deviceId;
  r.context = m.contextId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
  return r;
}

inline CuptiApiRecord ApiRecordOf(const CUpti_ActivityAPI& a) {
  CuptiApiRecord r;
  r.domain =
      a.kind == CUPTI_ACTIVITY_KIND_DRIVER ? CuptiApiDomain::kDriver : CuptiApiDomain::kRuntime;
  r.cbid = a.cbid;
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.process_id = a.processId;
  r.thread_id = a.threadId;
  r.correlation = a.correlationId;
  return r;
}

template <typename D>
CuptiDeviceRecord DeviceRecordOf(const D& d) {
  CuptiDeviceRecord r;
  r.id = d.id;
  r.name = d.name != nullptr ? d.name : "";
  r.sm_count = d.numMultiprocessors;
  r.global_memory_bytes = d.globalMemorySize;
  r.compute_major = d.computeCapabilityMajor;
  r.compute_minor = d.computeCapabilityMinor;
  r.max_threads_per_block = d.maxThreadsPerBlock;
  r.max_threads_per_sm = d.maxWarpsPerMultiprocessor * d.numThreadsPerWarp;
  r.regs_per_block = d.maxRegistersPerBlock;
  r.regs_per_sm = d.maxRegistersPerMultiprocessor;
  r.warp_size = d.numThreadsPerWarp;
  r.shared_memory_per_block = d.maxSharedMemoryPerBlock;
  r.shared_memory_per_sm = d.maxSharedMemoryPerMultiprocessor;
  return r;
}

template <typename M>
CuptiMemoryRecord MemoryRecordOf(const M& m) {
  CuptiMemoryRecord r;
  r.operation = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                    ? CuptiMemoryOperation::kRelease
                    : CuptiMemoryOperation::kAllocation;
  r.memory_kind = static_cast<uint8_t>(m.memoryKind);
  r.bytes = m.bytes;
  r.address = m.address;
  r.device = m.deviceId;
  r.context = m.contextId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
  r.process_id = m.processId;
  r.timestamp_ns = m.timestamp;
  return r;
}

// Appends one record of a kind we convert (else counts it in `other`).
void AppendActivityRecord(const CUpti_Activity& record, CuptiRecords* out);

// Walks a completed activity buffer with cuptiActivityGetNextRecord. Returns the number of
// records read; `end`, when given, gets the result that ended the walk
// (CUPTI_ERROR_MAX_LIMIT_REACHED at the buffer's end; anything else left records unread).
size_t AppendActivityBuffer(uint8_t* buffer, size_t valid_size, CuptiRecords* out,
                            CUptiResult* end = nullptr);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_ADAPTER_H_
