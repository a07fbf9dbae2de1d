#include "server/engine/collect/trace_export.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "common/trace/chrome_trace_writer.h"
#include "common/trace/trace_data_builder.h"

namespace libreyolo::engine {
namespace {

const char* CategoryOf(CollectedKind k) {
  switch (k) {
    case CollectedKind::kCpuOp: return "cpu_op";
    case CollectedKind::kUserAnnotation: return "user_annotation";
    case CollectedKind::kKernel: return "kernel";
    case CollectedKind::kMemcpy: return "gpu_memcpy";
    case CollectedKind::kMemset: return "gpu_memset";
    case CollectedKind::kRuntime: return "cuda_runtime";
    case CollectedKind::kMemory: return "cpu_instant_event";
  }
  return "cpu_op";
}

bool OnDevice(CollectedKind k) {
  return k == CollectedKind::kKernel || k == CollectedKind::kMemcpy || k == CollectedKind::kMemset;
}

// Kineto's header: times are microseconds relative to baseTimeNanoseconds (whole seconds
// below the first event), so a double keeps every nanosecond.
std::string HeaderMembers(const TraceExportOptions& o, int64_t base_ns, const std::string& path) {
  const std::string name =
      o.trace_name.empty() ? std::filesystem::path(path).filename().string() : o.trace_name;
  std::string members = absl::StrCat(
      "\"baseTimeNanoseconds\": ", base_ns, ",\n  \"traceName\": ", JsonQuote(name),
      ",\n  \"distributedInfo\": {",
      o.backend.empty() ? std::string() : absl::StrCat("\"backend\": ", JsonQuote(o.backend), ", "),
      "\"rank\": ", o.rank, ", \"world_size\": ", o.world_size, "}");
  if (!o.extra_members_json.empty()) absl::StrAppend(&members, ",\n  ", o.extra_members_json);
  return members;
}

// The time base: whole seconds below the first event (Kineto's baseTimeNanoseconds).
int64_t BaseNs(const CollectedTrace& trace) {
  bool any = false;
  int64_t first_ns = 0;
  for (const CollectedEvent& e : trace.events) {
    first_ns = any ? std::min(first_ns, e.start_ns) : e.start_ns;
    any = true;
  }
  constexpr int64_t kSecond = 1'000'000'000;
  return first_ns >= 0 ? first_ns / kSecond * kSecond : 0;
}

// EmitTraceEvents' stages, in the order a trace file holds them: the host process's track and
// the profiler span; autograd's forward -> backward flows; every event by start time (a
// [memory] instant with its running totals, or a span, a kernel with its launch -> kernel
// flow); then the names of the threads and GPU streams the events used.

// Microseconds from the time base, as the file's timestamps are.
struct UsClock {
  int64_t base_ns = 0;
  double operator()(int64_t ns) const { return static_cast<double>(ns - base_ns) / 1000.0; }
};

// Events in time order (the memory running totals depend on it); stable for equal starts.
std::vector<const CollectedEvent*> OrderByStart(const CollectedTrace& trace) {
  std::vector<const CollectedEvent*> ordered;
  ordered.reserve(trace.events.size());
  for (const CollectedEvent& e : trace.events) ordered.push_back(&e);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const CollectedEvent* a, const CollectedEvent* b) {
                     return a->start_ns < b->start_ns;
                   });
  return ordered;
}

// The host process's track, and the profiler span over every event.
void EmitHostProcess(const CollectedTrace& trace, const TraceExportOptions& o, const UsClock& us,
                     TraceSink& w) {
  int64_t first_ns = 0, last_ns = 0;
  bool any = false;
  for (const CollectedEvent& e : trace.events) {
    first_ns = any ? std::min(first_ns, e.start_ns) : e.start_ns;
    last_ns = any ? std::max(last_ns, e.start_ns + e.dur_ns) : e.start_ns + e.dur_ns;
    any = true;
  }
  w.NameProcess(o.pid, o.process_name);
  w.LabelProcess(o.pid, "CPU");
  w.SortProcess(o.pid, o.pid);
  if (any) w.AddProfilerSpan(us(first_ns), us(last_ns) - us(first_ns));
}

using LaunchMap = std::map<int64_t, const CollectedEvent*>;  // correlation -> runtime call

LaunchMap LaunchesByCorrelation(const std::vector<const CollectedEvent*>& ordered) {
  LaunchMap launches;
  for (const CollectedEvent* e : ordered) {
    if (e->kind == CollectedKind::kRuntime && e->correlation) launches[*e->correlation] = e;
  }
  return launches;
}

// Autograd's forward -> backward links, as Kineto draws them: the first op of the forward
// (its thread, sequence number) to the first backward op that names that thread and number.
void EmitForwardBackwardFlows(const std::vector<const CollectedEvent*>& ordered,
                              const TraceExportOptions& o, const UsClock& us, TraceSink& w) {
  std::map<std::pair<uint64_t, int64_t>, const CollectedEvent*> forwards;
  std::map<std::pair<uint64_t, int64_t>, const CollectedEvent*> backwards;
  for (const CollectedEvent* e : ordered) {
    if (e->kind == CollectedKind::kCpuOp && e->sequence_nr) {
      const bool backward = e->fwd_thread.value_or(0) != 0;
      auto& side = backward ? backwards : forwards;
      side.try_emplace({backward ? *e->fwd_thread : e->thread, *e->sequence_nr}, e);
    }
  }
  int64_t flow_id = 0;
  for (const auto& [key, bwd] : backwards) {
    const auto fwd = forwards.find(key);
    if (fwd == forwards.end()) continue;
    w.AddFlow("fwdbwd", ++flow_id, o.pid, static_cast<int64_t>(fwd->second->thread),
              us(fwd->second->start_ns), o.pid, static_cast<int64_t>(bwd->thread),
              us(bwd->start_ns));
  }
}

// The [memory] instants' running totals. Per device: what tensors hold (LibTorch's allocator
// events) and what the process holds from the driver (CUPTI's cudaMalloc/cudaFree records, or
// a collector's own totals). Total Reserved is never below Total Allocated; without any
// reservation data it is the high-water mark of Total Allocated (and of the baselines).
class MemoryTotals {
 public:
  explicit MemoryTotals(const TraceExportOptions& o)
      : o_(o), cpu_allocated_(o.cpu_allocated_at_start) {}

  // The instant of a kMemory event at `ts_us`, its totals after it.
  TraceMemoryEvent Next(const CollectedEvent& e, double ts_us) {
    TraceMemoryEvent m;
    m.pid = o_.pid;
    m.tid = static_cast<int64_t>(e.thread);
    m.ts_us = ts_us;
    m.device_type = e.device_type;
    m.device_index = e.device_index;
    m.bytes = e.bytes;
    if (e.device_type == 0) {
      cpu_allocated_ = e.total_allocated.value_or(cpu_allocated_ + e.bytes);
      m.total_allocated = m.total_reserved = cpu_allocated_;
      return m;
    }
    DeviceMemory& d = Device(e.device_index);
    if (e.reservation) {
      d.reserved += e.bytes;
      d.reserved_known = true;
      // On the device's track: no CPU op encloses it, so the analyser does not count the
      // pool's growth as an operator's memory on top of the tensor allocations.
      m.pid = std::max(e.device_index, 0);
    } else {
      d.allocated = e.total_allocated.value_or(d.allocated + e.bytes);
      d.high_water = std::max(d.high_water, d.allocated);
    }
    if (e.total_reserved) {
      d.reserved = *e.total_reserved;
      d.reserved_known = true;
    }
    m.total_allocated = d.allocated;
    m.total_reserved = std::max(d.reserved, d.reserved_known ? d.allocated : d.high_water);
    return m;
  }

 private:
  struct DeviceMemory {
    int64_t allocated = 0;
    int64_t high_water = 0;
    int64_t reserved = 0;
    bool reserved_known = false;
  };

  DeviceMemory& Device(int index) {
    auto [it, inserted] = devices_.try_emplace(index);
    if (inserted) {
      it->second.allocated = it->second.high_water = o_.device_allocated_at_start;
      it->second.reserved = o_.device_reserved_at_start;
    }
    return it->second;
  }

  const TraceExportOptions& o_;
  int64_t cpu_allocated_;
  std::map<int, DeviceMemory> devices_;
};

// The tracks the spans used, named once every event is out.
struct UsedTracks {
  std::set<uint64_t> cpu_threads;
  std::set<std::pair<int, uint64_t>> streams;
};

// One span: GPU activity on its device's stream (with its launch -> kernel flow), a host event
// on its thread with Kineto's per-op provenance.
void EmitSpan(const CollectedEvent& e, const TraceExportOptions& o, const UsClock& us,
              const LaunchMap& launches, int64_t& external_id, UsedTracks& tracks,
              TraceSink& w) {
  TraceSpan s;
  s.cat = CategoryOf(e.kind);
  s.name = e.name;
  s.ts_us = us(e.start_ns);
  s.dur_us = static_cast<double>(e.dur_ns) / 1000.0;  // a length: no base
  s.input_dims_json = e.input_dims_json;
  s.flops = e.flops;
  s.correlation = e.correlation;
  s.extra_args_json = e.extra_args_json;
  if (OnDevice(e.kind)) {
    s.pid = std::max(e.device_index, 0);
    s.tid = static_cast<int64_t>(e.thread);
    tracks.streams.insert({std::max(e.device_index, 0), e.thread});
    if (e.correlation) {
      auto it = launches.find(*e.correlation);
      if (it != launches.end()) {
        w.AddFlow("ac2g", *e.correlation, o.pid, static_cast<int64_t>(it->second->thread),
                  us(it->second->start_ns), s.pid, s.tid, s.ts_us);
      }
    }
  } else {
    s.pid = o.pid;
    s.tid = static_cast<int64_t>(e.thread);
    s.external_id = ++external_id;
    tracks.cpu_threads.insert(e.thread);
    // Kineto's per-op provenance: its index among the host events, and autograd's links.
    std::string args = absl::StrCat("\"Ev Idx\": ", external_id - 1);
    if (e.sequence_nr) {
      absl::StrAppend(&args, ", \"Fwd thread id\": ", e.fwd_thread.value_or(0),
                      ", \"Sequence number\": ", *e.sequence_nr);
    }
    if (!s.extra_args_json.empty()) absl::StrAppend(&args, ", ", s.extra_args_json);
    s.extra_args_json = std::move(args);
  }
  w.AddSpan(s);
}

// The host threads' names, then each GPU's process and its streams' names.
void NameTracks(const UsedTracks& tracks, const TraceExportOptions& o, TraceSink& w) {
  for (const uint64_t t : tracks.cpu_threads) {
    w.NameThread(o.pid, static_cast<int64_t>(t), absl::StrCat("thread ", t));
    w.SortThread(o.pid, static_cast<int64_t>(t), static_cast<int64_t>(t));
  }
  std::set<int> devices_named;
  for (const auto& [device, stream] : tracks.streams) {
    if (devices_named.insert(device).second) {
      w.NameProcess(device, absl::StrCat("GPU ", device));
      w.LabelProcess(device, absl::StrCat("GPU ", device));
      w.SortProcess(device, 0x1000000LL + device);  // after the host, as Kineto orders them
    }
    w.NameThread(device, static_cast<int64_t>(stream), absl::StrCat("stream ", stream));
    w.SortThread(device, static_cast<int64_t>(stream), static_cast<int64_t>(stream));
  }
}

}  // namespace

void EmitTraceEvents(const CollectedTrace& trace, const TraceExportOptions& o, TraceSink& w) {
  const UsClock us{BaseNs(trace)};
  const std::vector<const CollectedEvent*> ordered = OrderByStart(trace);
  EmitHostProcess(trace, o, us, w);
  const LaunchMap launches = LaunchesByCorrelation(ordered);
  EmitForwardBackwardFlows(ordered, o, us, w);
  MemoryTotals memory(o);
  UsedTracks tracks;
  int64_t external_id = 0;
  for (const CollectedEvent* e : ordered) {
    if (e->kind == CollectedKind::kMemory) {
      w.AddMemory(memory.Next(*e, us(e->start_ns)));
    } else {
      EmitSpan(*e, o, us, launches, external_id, tracks, w);
    }
  }
  NameTracks(tracks, o, w);
}

absl::Status ExportChromeTrace(const CollectedTrace& trace, const std::string& path,
                               const TraceExportOptions& o) {
  ASSIGN_OR_RETURN(auto writer, ChromeTraceWriter::Open(path, trace.device_properties_json,
                                                        HeaderMembers(o, BaseNs(trace), path)));
  EmitTraceEvents(trace, o, *writer);
  return writer->Finish();
}

absl::StatusOr<TraceData> ExportChromeTraceAndData(const CollectedTrace& trace,
                                                   const std::string& path,
                                                   const TraceExportOptions& o) {
  ASSIGN_OR_RETURN(auto writer, ChromeTraceWriter::Open(path, trace.device_properties_json,
                                                        HeaderMembers(o, BaseNs(trace), path)));
  TraceDataBuilder data(trace.device_properties_json);
  TeeTraceSink both(*writer, data);
  EmitTraceEvents(trace, o, both);
  RETURN_IF_ERROR(both.Finish());
  return data.Take();
}

}  // namespace libreyolo::engine
