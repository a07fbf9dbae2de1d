#include "common/report/trace_timeline.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/trace_analyser.h"

namespace libreyolo {
namespace {

constexpr double kNsPerMs = 1e6;
constexpr size_t kMaxPhases = 12;
constexpr size_t kMaxLanes = 32;  // GPU streams drawn; the least busy others are counted  // named
                                  // columns; further phase names count as "other"
constexpr std::array<const char*, 7> kPhaseOrder = {
    "dataload", "to_device", "preprocess", "forward", "backward", "postprocess", "optimizer"};

using Interval = std::pair<int64_t, int64_t>;

// Sorted, non-overlapping union of the intervals.
std::vector<Interval> Merge(std::vector<Interval> iv) {
  std::sort(iv.begin(), iv.end());
  std::vector<Interval> out;
  for (const Interval& x : iv) {
    if (!out.empty() && x.first <= out.back().second) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// Length of the part of the merged intervals inside [a, b).
int64_t Overlap(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  auto it = std::lower_bound(merged.begin(), merged.end(), a,
                             [](const Interval& x, int64_t v) { return x.second <= v; });
  int64_t total = 0;
  for (; it != merged.end() && it->first < b; ++it) {
    const int64_t s = std::max(it->first, a), e = std::min(it->second, b);
    if (e > s) SatAdd(total, e - s);
  }
  return total;
}

// "GPU 0, stream 7" from the "pid/tid" thread key of a device activity.
std::string LaneName(const std::string& thread) {
  const size_t slash = thread.find('/');
  if (slash == std::string::npos) return thread;
  return absl::StrCat("GPU ", thread.substr(0, slash), ", stream ", thread.substr(slash + 1));
}

struct PhaseSpan {
  int64_t s = 0, e = 0;
  size_t phase = 0;  // index into TraceTimeline::phases
};

// Exclusive split of [s0, s1): each instant goes to the covering span that started last
// (the innermost), the rest to "other" (index `other`).
std::vector<double> SplitStep(std::vector<PhaseSpan>& spans, int64_t s0, int64_t s1,
                              size_t n_phases, size_t other) {
  std::vector<int64_t> ns(n_phases, 0);
  // Sweep over boundaries; `active` orders the covering spans by start (latest last).
  std::vector<std::pair<int64_t, int64_t>> points;  // (time, +(k+1) opens / -(k+1) closes)
  for (size_t k = 0; k < spans.size(); ++k) {
    spans[k].s = std::max(spans[k].s, s0);
    spans[k].e = std::min(spans[k].e, s1);
    if (spans[k].e <= spans[k].s) continue;
    points.emplace_back(spans[k].s, static_cast<int64_t>(k) + 1);
    points.emplace_back(spans[k].e, -(static_cast<int64_t>(k) + 1));
  }
  std::sort(points.begin(), points.end());
  std::set<std::pair<int64_t, size_t>> active;  // (start, span index)
  int64_t prev = s0, covered = 0;
  for (const auto& [t, tag] : points) {
    if (t > prev && !active.empty()) {
      SatAdd(ns[spans[active.rbegin()->second].phase], t - prev);
      SatAdd(covered, t - prev);
    }
    prev = std::max(prev, t);
    const auto k = static_cast<size_t>((tag > 0 ? tag : -tag) - 1);
    if (tag > 0) {
      active.emplace(spans[k].s, k);
    } else {
      active.erase({spans[k].s, k});
    }
  }
  SatAdd(ns[other], std::max<int64_t>(s1 - s0 - covered, 0));  // plus any capped phases
  std::vector<double> ms(n_phases);
  for (size_t i = 0; i < n_phases; ++i) ms[i] = static_cast<double>(ns[i]) / kNsPerMs;
  return ms;
}

// BuildTimeline's stages: the window's time axis; the window's events gathered in one pass
// (phase spans, kernels, GPU lanes, kernel correlations); the phase columns; each step split
// into them; the GPU lanes (the busiest kept); the launch calls per bucket; memory over time.

// The window's time axis: its bounds and the strip's kTimelineBuckets buckets.
struct TimelineAxis {
  int64_t w0 = 0, w1 = 0;
  double bucket_ns = 0;
  bool InWindow(int64_t ts) const { return ts >= w0 && ts < w1; }
  double RelMs(int64_t ts) const { return static_cast<double>(ts - w0) / kNsPerMs; }
  size_t Bucket(int64_t ts) const {
    const auto b = static_cast<int64_t>(static_cast<double>(ts - w0) / bucket_ns);
    return static_cast<size_t>(std::clamp<int64_t>(b, 0, kTimelineBuckets - 1));
  }
};

// What one pass over the window's events finds.
struct WindowEvents {
  std::vector<std::pair<std::string, Interval>> raw_spans;  // phase name -> span
  std::vector<Interval> kernels;
  std::map<uint32_t, std::vector<Interval>> lanes;  // thread id -> activity intervals
  absl::flat_hash_set<int64_t> kernel_correlations;
};

// Phase spans, by the analyser's span names; GPU activities by lane; the kernels.
WindowEvents GatherWindowEvents(const TraceData& t, const TimelineAxis& ax) {
  WindowEvents ev;
  absl::flat_hash_map<uint32_t, std::string> phase_of_name;
  for (const TraceEvent& e : t.events) {
    if (!ax.InWindow(e.ts_ns)) continue;
    if (e.cls == EventClass::kCpuOp || e.cls == EventClass::kAnnotation) {
      auto it = phase_of_name.find(e.name);
      if (it == phase_of_name.end()) {
        it = phase_of_name.emplace(e.name, PhaseOfSpanName(t.strings.Get(e.name))).first;
      }
      if (!it->second.empty()) ev.raw_spans.push_back({it->second, {e.ts_ns, e.ts_ns + e.dur_ns}});
    } else if (IsGpuActivity(e.cls)) {
      ev.lanes[e.thread].emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
      if (e.cls == EventClass::kKernel) {
        ev.kernels.emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
        if (e.correlation != kNoId) ev.kernel_correlations.insert(e.correlation);
      }
    }
  }
  return ev;
}

// Columns: the known phases in step order, then any others by name, then "other".
void ChoosePhaseColumns(const WindowEvents& ev, TraceTimeline& tl) {
  std::set<std::string> present;
  for (const auto& [name, iv] : ev.raw_spans) present.insert(name);
  for (const char* p : kPhaseOrder) {
    if (present.erase(p) > 0) tl.phases.emplace_back(p);
  }
  for (const std::string& p : present) {
    if (tl.phases.size() < kMaxPhases) tl.phases.push_back(p);  // the rest count as other
  }
  tl.phases.emplace_back("other");
}

// Each step's wall time split into the phase columns, and its GPU busy time.
void SplitSteps(const std::vector<StepMark>& marks, const WindowEvents& ev,
                const TimelineAxis& ax, TraceTimeline& tl) {
  const size_t other = tl.phases.size() - 1;
  absl::flat_hash_map<std::string, size_t> column;
  for (size_t i = 0; i < tl.phases.size(); ++i) column.emplace(tl.phases[i], i);
  const std::vector<Interval> kernel_union = Merge(ev.kernels);
  // Each span goes to the step its start lies in.
  std::vector<std::vector<PhaseSpan>> per_step(marks.size());
  for (const auto& [name, iv] : ev.raw_spans) {
    auto it = std::upper_bound(marks.begin(), marks.end(), iv.first,
                               [](int64_t v, const StepMark& m) { return v < m.ts_ns; });
    if (it == marks.begin()) continue;
    const auto k = static_cast<size_t>(std::prev(it) - marks.begin());
    auto col = column.find(name);
    per_step[k].push_back(
        PhaseSpan{iv.first, iv.second, col == column.end() ? other : col->second});
  }
  for (size_t k = 0; k < marks.size(); ++k) {
    const StepMark& m = marks[k];
    StepSplit s;
    s.number = m.number;
    s.start_ms = ax.RelMs(m.ts_ns);
    s.wall_ms = static_cast<double>(m.dur_ns) / kNsPerMs;
    s.phase_ms = SplitStep(per_step[k], m.ts_ns, m.ts_ns + m.dur_ns, tl.phases.size(), other);
    s.gpu_busy_ms =
        static_cast<double>(Overlap(kernel_union, m.ts_ns, m.ts_ns + m.dur_ns)) / kNsPerMs;
    tl.steps.push_back(std::move(s));
  }
}

// GPU lanes: exact busy time, and rectangles merged at the strip's resolution.
void LayOutStreamLanes(const TraceData& t, std::map<uint32_t, std::vector<Interval>>& lanes,
                       const TimelineAxis& ax, TraceTimeline& tl) {
  for (auto& [thread, iv] : lanes) {
    StreamLane lane;
    lane.name = LaneName(t.strings.Get(thread));
    lane.activities = static_cast<int64_t>(iv.size());
    const std::vector<Interval> merged = Merge(std::move(iv));
    int64_t busy = 0;
    for (const Interval& x : merged) SatAdd(busy, x.second - x.first);
    lane.busy_ms = static_cast<double>(busy) / kNsPerMs;
    const double gap_ms = ax.bucket_ns / kNsPerMs;
    for (const Interval& x : merged) {
      const double a = ax.RelMs(x.first), b = ax.RelMs(x.second);
      if (!lane.busy.empty() && a - lane.busy.back().second < gap_ms) {
        lane.busy.back().second = std::max(lane.busy.back().second, b);
      } else {
        lane.busy.emplace_back(a, b);
      }
    }
    tl.streams.push_back(std::move(lane));
  }
}

// A strip stays readable (and small) with at most kMaxLanes lanes: the busiest, in order.
void KeepBusiestLanes(TraceTimeline& tl) {
  if (tl.streams.size() <= kMaxLanes) return;
  std::vector<size_t> order(tl.streams.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tl.streams[a].busy_ms > tl.streams[b].busy_ms;
  });
  std::vector<bool> keep(order.size(), false);
  for (size_t i = 0; i < kMaxLanes; ++i) keep[order[i]] = true;
  std::vector<StreamLane> kept;
  for (size_t i = 0; i < tl.streams.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(tl.streams[i]));
  }
  tl.streams_not_drawn = static_cast<int64_t>(tl.streams.size() - kMaxLanes);
  tl.streams = std::move(kept);
}

// Launch calls: the runtime events whose correlation id names a window kernel.
void CountLaunches(const TraceData& t, const WindowEvents& ev, const TimelineAxis& ax,
                   TraceTimeline& tl) {
  tl.launches.assign(kTimelineBuckets, 0);
  if (ev.kernel_correlations.empty()) return;
  for (const TraceEvent& e : t.events) {
    if (e.cls != EventClass::kRuntime || !ax.InWindow(e.ts_ns) ||
        !ev.kernel_correlations.contains(e.correlation)) {
      continue;
    }
    ++tl.launches[ax.Bucket(e.ts_ns)];
    ++tl.launch_calls;
  }
}

struct MemoryInstant {
  int64_t ts;
  const MemorySample* m;
};

// One device's (or the host's) memory samples in time order, each bucket keeping its highest
// point; `peak` the exact highest.
void DownsampleMemory(std::vector<MemoryInstant>& in, const TimelineAxis& ax,
                      std::vector<MemoryPoint>& out, MemoryPoint& peak) {
  std::stable_sort(in.begin(), in.end(),
                   [](const MemoryInstant& a, const MemoryInstant& b) { return a.ts < b.ts; });
  size_t last_bucket = SIZE_MAX;
  for (const MemoryInstant& s : in) {
    MemoryPoint p{
        ax.RelMs(s.ts), static_cast<double>(s.m->total_allocated) / 1e6,
        s.m->total_reserved >= 0 ? static_cast<double>(s.m->total_reserved) / 1e6 : -1.0};
    if (p.allocated_mb > peak.allocated_mb) peak = p;
    const size_t b = ax.Bucket(s.ts);
    if (b == last_bucket && !out.empty()) {
      if (p.allocated_mb > out.back().allocated_mb) {
        out.back().allocated_mb = p.allocated_mb;
        out.back().t_ms = p.t_ms;
      }
      out.back().reserved_mb = std::max(out.back().reserved_mb, p.reserved_mb);
    } else {
      out.push_back(p);
      last_bucket = b;
    }
  }
}

// Memory: the [memory] instants' totals over time; each bucket keeps its highest point.
void LayOutMemory(const TraceData& t, const TimelineAxis& ax, TraceTimeline& tl) {
  std::vector<MemoryInstant> dev, host;
  for (const TraceEvent& e : t.events) {
    if (e.cls != EventClass::kMemoryInstant || !ax.InWindow(e.ts_ns)) continue;
    const MemorySample& m = t.memory[e.aux];
    if (m.total_allocated < 0) continue;
    if (e.device_type > 0) dev.push_back({e.ts_ns, &m});
    if (e.device_type == 0) host.push_back({e.ts_ns, &m});
  }
  tl.device_peak.allocated_mb = tl.host_peak.allocated_mb = -1;
  DownsampleMemory(dev, ax, tl.device_memory, tl.device_peak);
  DownsampleMemory(host, ax, tl.host_memory, tl.host_peak);
}

}  // namespace

TraceTimeline BuildTimeline(const TraceData& t) {
  TraceTimeline tl;
  const StepWindow win = FindStepWindow(t);
  const int64_t w0 = win.w0_ns, w1 = win.w1_ns;
  tl.steps_seen = static_cast<int64_t>(win.marks.size());
  tl.window_ms = static_cast<double>(w1 - w0) / kNsPerMs;
  if (w1 <= w0) return tl;
  const TimelineAxis ax{w0, w1, static_cast<double>(w1 - w0) / kTimelineBuckets};
  WindowEvents ev = GatherWindowEvents(t, ax);
  ChoosePhaseColumns(ev, tl);
  if (!win.marks.empty()) SplitSteps(win.marks, ev, ax, tl);
  LayOutStreamLanes(t, ev.lanes, ax, tl);
  KeepBusiestLanes(tl);
  CountLaunches(t, ev, ax, tl);
  LayOutMemory(t, ax, tl);
  return tl;
}

}  // namespace libreyolo
