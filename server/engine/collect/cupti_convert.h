// Pure functions from CUPTI's records (cupti_records.h) to collected events, and the merge of a
// GPU trace into the CPU trace of LibTorch's profiler. No CUPTI header: built and tested on every
// machine, with or without the CUDA toolkit.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_CONVERT_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_CONVERT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/cupti_records.h"

namespace libreyolo::engine {

// The name of a runtime or driver API callback id, e.g. "cudaLaunchKernel_v7000" (CUPTI's
// cuptiGetCallbackName in the collector, a table in tests); empty when unknown.
using CuptiApiNameFn = std::function<std::string(CuptiApiDomain domain, uint32_t cbid)>;

// Kineto's names: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)".
std::string MemcpyName(const CuptiMemcpyRecord& r);
std::string MemsetName(const CuptiMemsetRecord& r);

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (Kineto names API calls without the suffix).
std::string ApiNameWithoutVersion(const std::string& name);

// Kineto's "deviceProperties" array: [{"id": 0, "name": ..., "totalGlobalMem": ..., ...}].
std::string DevicePropertiesJson(const std::vector<CuptiDeviceRecord>& devices);

// Converts one session's records, in CUPTI's clock (MergeGpuActivity aligns them):
//  - kernels, memcpys, memsets: kKernel / kMemcpy / kMemset on their device, `thread` = the
//    stream, args as Kineto writes them ("device", "context", "stream", "registers per thread",
//    "shared memory", "grid", "block", "bytes", "memory bandwidth (GB/s)", ...); the correlation id
//    is in CollectedEvent::correlation, which the exporter writes as args.correlation;
//  - runtime and driver API calls: kRuntime on CUPTI's thread id, named through `api_name`
//    (version suffix dropped; "cudaRuntimeApi#<cbid>" / "cuDriverApi#<cbid>" when it has none).
//    Driver calls made inside a runtime call on the same thread (the runtime's own work) are
//    left out, so a cudaMalloc is not counted twice as cudaMalloc and cuMemAlloc;
//  - device memory allocations and releases (MEMORY2): kMemory reservation events (+bytes,
//    -bytes) on the device's track; the exporter's running sum of them is "Total Reserved";
//    other memory kinds (pinned host, managed) are not converted;
//  - devices: device_properties_json; dropped records: a note.
CollectedTrace ConvertCuptiRecords(const CuptiRecords& records, const CuptiApiNameFn& api_name);

// (CUPTI clock - CPU clock) in ns from back-to-back samples, using the sample whose CPU bracket
// is tightest; nullopt when there is no usable sample.
std::optional<int64_t> ClockOffsetNs(const std::vector<ClockSample>& samples);

// Maps CUPTI's thread ids of kRuntime events in `gpu` onto the CPU thread ids LibTorch uses in
// `cpu`: a CUPTI thread goes to the CPU thread whose ops and ranges contain most of its calls'
// time (more than half of it; calls inside kCpuOp events count before calls inside ranges only),
// one CUPTI thread per CPU thread. Threads that match nothing are not in the map.
std::map<uint64_t, uint64_t> AlignRuntimeThreads(const std::vector<CollectedEvent>& cpu,
                                                 const std::vector<CollectedEvent>& gpu);

// Moves GPU activity into the CPU trace: shifts `gpu` onto the CPU clock with its clock samples
// (none: already in the CPU clock), renames its runtime threads with AlignRuntimeThreads, and
// appends its events, notes and device properties.
void MergeGpuActivity(CollectedTrace& cpu, CollectedTrace gpu);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_CONVERT_H_
