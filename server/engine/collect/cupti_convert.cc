#include "server/engine/collect/cupti_convert.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/trace/chrome_trace_writer.h"

namespace libreyolo::engine {
namespace {

constexpr uint32_t kInvalidStream = 0xFFFFFFFFu;  // CUPTI_INVALID_STREAM_ID
constexpr uint8_t kMemoryKindDevice = 3;          // CUPTI_ACTIVITY_MEMORY_KIND_DEVICE

int64_t Ns(uint64_t v) { return static_cast<int64_t>(v); }
int64_t Dur(uint64_t start, uint64_t end) { return end > start ? Ns(end - start) : 0; }

const char* MemcpyKindString(uint8_t k) {
  static constexpr std::array<const char*, 11> kNames = {
      "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < kNames.size() ? kNames[k] : "<unknown>";
}

const char* MemoryKindString(uint32_t k) {
  static constexpr std::array<const char*, 8> kNames = {"Unknown",       "Pageable",      "Pinned",
                                                        "Device",        "Array",         "Managed",
                                                        "Device Static", "Managed Static"};
  return k < kNames.size() ? kNames[k] : "<unknown>";
}

// A JSON number: finite doubles with up to 6 significant digits, like Kineto's.
std::string Num(double v) {
  if (!std::isfinite(v)) return "0";
  return absl::StrFormat("%.6g", v);
}

std::string GpuArgs(uint32_t device, uint32_t context, uint32_t stream) {
  return absl::StrCat("\"device\": ", device, ", \"context\": ", context, ", \"stream\": ", stream);
}

CollectedEvent GpuEvent(CollectedKind kind, std::string name, uint64_t start, uint64_t end,
                        uint32_t device, uint32_t stream, uint32_t correlation) {
  CollectedEvent e;
  e.kind = kind;
  e.name = std::move(name);
  e.start_ns = Ns(start);
  e.dur_ns = Dur(start, end);
  e.thread = stream;
  e.device_index = static_cast<int>(device);
  if (correlation != 0) e.correlation = correlation;
  return e;
}

CollectedEvent KernelEvent(const CuptiKernelRecord& k, const CuptiDeviceRecord* dev) {
  CollectedEvent e = GpuEvent(CollectedKind::kKernel, k.name, k.start_ns, k.end_ns, k.device,
                              k.stream, k.correlation);
  std::string& a = e.extra_args_json;
  if (k.queued_ns != 0) absl::StrAppend(&a, "\"queued\": ", k.queued_ns, ", ");
  absl::StrAppend(&a, GpuArgs(k.device, k.context, k.stream),
                  ", \"registers per thread\": ", k.registers_per_thread, ", \"shared memory\": ",
                  static_cast<int64_t>(k.static_shared_memory) + k.dynamic_shared_memory);
  if (dev != nullptr && dev->sm_count > 0 && dev->warp_size > 0) {
    const double blocks = static_cast<double>(k.grid_x) * k.grid_y * k.grid_z;
    const double threads = static_cast<double>(k.block_x) * k.block_y * k.block_z;
    const double blocks_per_sm = blocks / dev->sm_count;
    absl::StrAppend(&a, ", \"blocks per SM\": ", Num(blocks_per_sm),
                    ", \"warps per SM\": ", Num(blocks_per_sm * threads / dev->warp_size));
  }
  absl::StrAppend(&a, ", \"grid\": [", k.grid_x, ", ", k.grid_y, ", ", k.grid_z, "]",
                  ", \"block\": [", k.block_x, ", ", k.block_y, ", ", k.block_z, "]");
  return e;
}

CollectedEvent MemcpyEvent(const CuptiMemcpyRecord& m) {
  CollectedEvent e = GpuEvent(CollectedKind::kMemcpy, MemcpyName(m), m.start_ns, m.end_ns, m.device,
                              m.stream, m.correlation);
  // bytes per ns = GB/s
  const double gbps =
      e.dur_ns > 0 ? static_cast<double>(m.bytes) / static_cast<double>(e.dur_ns) : 0.0;
  e.extra_args_json = absl::StrCat(GpuArgs(m.device, m.context, m.stream), ", \"bytes\": ", m.bytes,
                                   ", \"memory bandwidth (GB/s)\": ", Num(gbps));
  return e;
}

CollectedEvent MemsetEvent(const CuptiMemsetRecord& m) {
  CollectedEvent e = GpuEvent(CollectedKind::kMemset, MemsetName(m), m.start_ns, m.end_ns, m.device,
                              m.stream, m.correlation);
  const double gbps =
      e.dur_ns > 0 ? static_cast<double>(m.bytes) / static_cast<double>(e.dur_ns) : 0.0;
  e.extra_args_json = absl::StrCat(GpuArgs(m.device, m.context, m.stream), ", \"bytes\": ", m.bytes,
                                   ", \"memory bandwidth (GB/s)\": ", Num(gbps));
  return e;
}

// Per thread, the sorted [start, end] of runtime calls, to find the driver calls they made.
class RuntimeIntervals {
 public:
  explicit RuntimeIntervals(const std::vector<CuptiApiRecord>& calls) {
    for (const CuptiApiRecord& c : calls) {
      if (c.domain == CuptiApiDomain::kRuntime)
        by_thread_[c.thread_id].emplace_back(c.start_ns, c.end_ns);
    }
    for (auto& [thread, v] : by_thread_) std::sort(v.begin(), v.end());
  }

  bool Contains(uint32_t thread, uint64_t start, uint64_t end) const {
    auto it = by_thread_.find(thread);
    if (it == by_thread_.end()) return false;
    const auto& v = it->second;
    // Runtime calls on one thread do not overlap: only the last one starting at or before
    // `start` can contain the call.
    auto pos = std::upper_bound(v.begin(), v.end(), std::make_pair(start, UINT64_MAX));
    if (pos == v.begin()) return false;
    --pos;
    return pos->second >= end;
  }

 private:
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> by_thread_;
};

CollectedEvent ApiEvent(const CuptiApiRecord& c, const CuptiApiNameFn& api_name) {
  CollectedEvent e;
  e.kind = CollectedKind::kRuntime;
  std::string name = api_name ? api_name(c.domain, c.cbid) : std::string();
  if (name.empty()) {
    name = absl::StrCat(c.domain == CuptiApiDomain::kRuntime ? "cudaRuntimeApi#" : "cuDriverApi#",
                        c.cbid);
  }
  e.name = ApiNameWithoutVersion(name);
  e.start_ns = Ns(c.start_ns);
  e.dur_ns = Dur(c.start_ns, c.end_ns);
  e.thread = c.thread_id;
  if (c.correlation != 0) e.correlation = c.correlation;
  e.extra_args_json = absl::StrCat("\"cbid\": ", c.cbid);
  return e;
}

// Union of [start, end) intervals, sorted and merged.
using Intervals = std::vector<std::pair<int64_t, int64_t>>;

void MergeIntervals(Intervals& v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  v = std::move(out);
}

bool Covers(const Intervals& v, int64_t start, int64_t end) {
  auto pos = std::upper_bound(v.begin(), v.end(), std::make_pair(start, INT64_MAX));
  if (pos == v.begin()) return false;
  --pos;
  return pos->second >= end;
}

std::string ArrayBody(const std::string& json_array) {
  const size_t open = json_array.find('[');
  const size_t close = json_array.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close <= open) return "";
  std::string body = json_array.substr(open + 1, close - open - 1);
  const size_t first = body.find_first_not_of(" \n\t\r");
  if (first == std::string::npos) return "";
  const size_t last = body.find_last_not_of(" \n\t\r");
  return body.substr(first, last - first + 1);
}

}  // namespace

std::string MemcpyName(const CuptiMemcpyRecord& r) {
  return absl::StrCat("Memcpy ", MemcpyKindString(r.copy_kind), " (", MemoryKindString(r.src_kind),
                      " -> ", MemoryKindString(r.dst_kind), ")");
}

std::string MemsetName(const CuptiMemsetRecord& r) {
  return absl::StrCat("Memset (", MemoryKindString(r.memory_kind), ")");
}

std::string ApiNameWithoutVersion(const std::string& name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string::npos || pos == 0 || pos + 2 >= name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, pos);
}

std::string DevicePropertiesJson(const std::vector<CuptiDeviceRecord>& devices) {
  std::vector<std::string> items;
  for (const CuptiDeviceRecord& d : devices) {
    std::string s = absl::StrCat(
        "{\"id\": ", d.id, ", \"name\": ", JsonQuote(d.name),
        ", \"totalGlobalMem\": ", d.global_memory_bytes, ", \"computeMajor\": ", d.compute_major,
        ", \"computeMinor\": ", d.compute_minor,
        ", \"maxThreadsPerBlock\": ", d.max_threads_per_block,
        ", \"maxThreadsPerMultiprocessor\": ", d.max_threads_per_sm,
        ", \"regsPerBlock\": ", d.regs_per_block, ", \"regsPerMultiprocessor\": ", d.regs_per_sm,
        ", \"warpSize\": ", d.warp_size, ", \"sharedMemPerBlock\": ", d.shared_memory_per_block,
        ", \"sharedMemPerMultiprocessor\": ", d.shared_memory_per_sm, ", \"numSms\": ", d.sm_count);
    if (d.shared_memory_per_block_optin) {
      absl::StrAppend(&s, ", \"sharedMemPerBlockOptin\": ", *d.shared_memory_per_block_optin);
    }
    items.push_back(s + "}");
  }
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

CollectedTrace ConvertCuptiRecords(const CuptiRecords& records, const CuptiApiNameFn& api_name) {
  CollectedTrace t;
  std::map<uint32_t, const CuptiDeviceRecord*> devices;
  for (const CuptiDeviceRecord& d : records.devices) devices.emplace(d.id, &d);
  t.events.reserve(records.kernels.size() + records.memcpys.size() + records.memsets.size() +
                   records.api_calls.size() + records.memory.size());
  for (const CuptiKernelRecord& k : records.kernels) {
    auto it = devices.find(k.device);
    t.events.push_back(KernelEvent(k, it == devices.end() ? nullptr : it->second));
  }
  for (const CuptiMemcpyRecord& m : records.memcpys) t.events.push_back(MemcpyEvent(m));
  for (const CuptiMemsetRecord& m : records.memsets) t.events.push_back(MemsetEvent(m));
  const RuntimeIntervals runtime(records.api_calls);
  for (const CuptiApiRecord& c : records.api_calls) {
    if (c.domain == CuptiApiDomain::kDriver &&
        runtime.Contains(c.thread_id, c.start_ns, c.end_ns)) {
      continue;
    }
    t.events.push_back(ApiEvent(c, api_name));
  }
  for (const CuptiMemoryRecord& m : records.memory) {
    if (m.memory_kind != kMemoryKindDevice) continue;
    CollectedEvent e;
    e.kind = CollectedKind::kMemory;
    e.name = "[memory]";
    e.start_ns = Ns(m.timestamp_ns);
    e.thread = m.stream == kInvalidStream ? 0 : m.stream;
    e.device_type = 1;
    e.device_index = static_cast<int>(m.device);
    const auto bytes = static_cast<int64_t>(m.bytes);
    e.bytes = m.operation == CuptiMemoryOperation::kAllocation ? bytes : -bytes;
    e.reservation = true;
    if (m.correlation != 0) e.correlation = m.correlation;
    t.events.push_back(std::move(e));
  }
  if (!records.devices.empty()) t.device_properties_json = DevicePropertiesJson(records.devices);
  if (records.dropped > 0) {
    t.notes.push_back(absl::StrCat("CUPTI: ", records.dropped,
                                   " activity records dropped (buffers full); GPU activity is "
                                   "incomplete"));
  }
  return t;
}

std::optional<int64_t> ClockOffsetNs(const std::vector<ClockSample>& samples) {
  const ClockSample* best = nullptr;
  for (const ClockSample& s : samples) {
    if (s.cpu_after_ns < s.cpu_before_ns) continue;
    if (best == nullptr ||
        s.cpu_after_ns - s.cpu_before_ns < best->cpu_after_ns - best->cpu_before_ns) {
      best = &s;
    }
  }
  if (best == nullptr) return std::nullopt;
  const int64_t mid = best->cpu_before_ns + (best->cpu_after_ns - best->cpu_before_ns) / 2;
  return best->other_ns - mid;
}

std::map<uint64_t, uint64_t> AlignRuntimeThreads(const std::vector<CollectedEvent>& cpu,
                                                 const std::vector<CollectedEvent>& gpu) {
  // Per CPU thread: the union of its operators, and of its operators and ranges.
  std::map<uint64_t, std::pair<Intervals, Intervals>> spans;
  for (const CollectedEvent& e : cpu) {
    if (e.kind != CollectedKind::kCpuOp && e.kind != CollectedKind::kUserAnnotation) continue;
    auto& [ops, all] = spans[e.thread];
    if (e.kind == CollectedKind::kCpuOp) ops.emplace_back(e.start_ns, e.start_ns + e.dur_ns);
    all.emplace_back(e.start_ns, e.start_ns + e.dur_ns);
  }
  for (auto& [thread, v] : spans) {
    MergeIntervals(v.first);
    MergeIntervals(v.second);
  }
  // Per CUPTI thread: its calls' total time, and per CPU thread the time inside its spans.
  struct Votes {
    int64_t total = 0;
    std::map<uint64_t, std::pair<int64_t, int64_t>> inside;  // cpu thread -> (in ops, in any)
  };
  std::map<uint64_t, Votes> votes;
  for (const CollectedEvent& e : gpu) {
    if (e.kind != CollectedKind::kRuntime) continue;
    const int64_t w = std::max<int64_t>(e.dur_ns, 1);  // instant calls still count
    Votes& v = votes[e.thread];
    v.total += w;
    const int64_t end = e.start_ns + e.dur_ns;
    for (const auto& [thread, iv] : spans) {
      const bool in_op = Covers(iv.first, e.start_ns, end);
      const bool in_any = in_op || Covers(iv.second, e.start_ns, end);
      if (!in_any) continue;
      auto& [op_time, any_time] = v.inside[thread];
      if (in_op) op_time += w;
      any_time += w;
    }
  }
  // Candidates with more than half of their time inside, best share first.
  struct Candidate {
    double op_share, any_share;
    int64_t any_time;
    uint64_t gpu_thread, cpu_thread;
  };
  std::vector<Candidate> candidates;
  for (const auto& [gpu_thread, v] : votes) {
    for (const auto& [cpu_thread, in] : v.inside) {
      if (in.second * 2 <= v.total) continue;
      const auto total = static_cast<double>(v.total);
      candidates.push_back({static_cast<double>(in.first) / total,
                            static_cast<double>(in.second) / total, in.second, gpu_thread,
                            cpu_thread});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(b.op_share, b.any_share, b.any_time, a.gpu_thread, a.cpu_thread) <
           std::tie(a.op_share, a.any_share, a.any_time, b.gpu_thread, b.cpu_thread);
  });
  std::map<uint64_t, uint64_t> mapping;
  std::map<uint64_t, bool> taken;
  for (const Candidate& c : candidates) {
    if (mapping.contains(c.gpu_thread) || taken[c.cpu_thread]) continue;
    mapping[c.gpu_thread] = c.cpu_thread;
    taken[c.cpu_thread] = true;
  }
  return mapping;
}

void MergeGpuActivity(CollectedTrace& cpu, CollectedTrace gpu) {
  if (const std::optional<int64_t> offset = ClockOffsetNs(gpu.clock_samples)) {
    for (CollectedEvent& e : gpu.events) e.start_ns -= *offset;
  }
  const std::map<uint64_t, uint64_t> threads = AlignRuntimeThreads(cpu.events, gpu.events);
  for (CollectedEvent& e : gpu.events) {
    if (e.kind != CollectedKind::kRuntime) continue;
    auto it = threads.find(e.thread);
    if (it != threads.end()) e.thread = it->second;
  }
  cpu.events.reserve(cpu.events.size() + gpu.events.size());
  std::move(gpu.events.begin(), gpu.events.end(), std::back_inserter(cpu.events));
  std::move(gpu.notes.begin(), gpu.notes.end(), std::back_inserter(cpu.notes));
  const std::string a = ArrayBody(cpu.device_properties_json);
  const std::string b = ArrayBody(gpu.device_properties_json);
  if (!b.empty()) {
    cpu.device_properties_json =
        a.empty() ? absl::StrCat("[", b, "]") : absl::StrCat("[", a, ", ", b, "]");
  }
}

}  // namespace libreyolo::engine
