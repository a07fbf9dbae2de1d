#include "common/trace/trace_window.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "common/trace/event_tree.h"
#include "common/trace/step_window.h"

namespace libreyolo {
namespace {

TraceWindow FindSteps(const TraceData& trace, ParseStats* stats) {
  // One rule for the analyser and the report's charts (step_window.h): ProfilerStep#N
  // de-duplicated (the CPU copy preferred), first start to last end; no marks: every event.
  const StepWindow steps = FindStepWindow(trace);
  TraceWindow w;
  w.w0 = steps.w0_ns;
  w.w1 = steps.w1_ns;
  if (!steps.marks.empty()) {
    w.real_steps = static_cast<int64_t>(steps.marks.size());
    stats->duplicate_steps += static_cast<int64_t>(trace.steps.size() - steps.marks.size());
  }
  return w;
}

// The launch call of every GPU activity in the whole trace (-1 when it has none): the first
// runtime event with the same correlation id, else the innermost runtime event enclosing the
// start of the ac2g flow with that id.
std::vector<int32_t> LinkLaunches(const TraceData& trace) {
  const std::vector<TraceEvent>& ev = trace.events;
  absl::flat_hash_map<int64_t, int32_t> by_corr;
  bool any_flow = false;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if (e.cls == EventClass::kRuntime && e.correlation != kNoId) {
      by_corr.try_emplace(e.correlation, static_cast<int32_t>(i));
    }
    any_flow = any_flow || (e.cls == EventClass::kFlowStart && e.correlation != kNoId);
  }
  absl::flat_hash_map<int64_t, int32_t> by_flow;
  if (any_flow) {
    // Innermost enclosing runtime call of each node, parents before children.
    const EventTree tree = BuildEventTree(trace);
    std::vector<int32_t> runtime(ev.size(), -1);
    for (const uint32_t i : tree.order) {
      const int32_t par = tree.parent[i];
      runtime[i] = ev[i].cls == EventClass::kRuntime ? static_cast<int32_t>(i)
                   : par >= 0                        ? runtime[static_cast<size_t>(par)]
                                                     : -1;
    }
    for (uint32_t i = 0; i < ev.size(); ++i) {  // the first flow with an id, in file order
      if (ev[i].cls == EventClass::kFlowStart && ev[i].correlation != kNoId) {
        by_flow.try_emplace(ev[i].correlation, runtime[i]);
      }
    }
  }
  std::vector<int32_t> launch(ev.size(), -1);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if (!IsGpuActivity(e.cls) || e.correlation == kNoId) continue;
    if (auto it = by_corr.find(e.correlation); it != by_corr.end()) {
      launch[i] = it->second;
    } else if (auto jt = by_flow.find(e.correlation); jt != by_flow.end()) {
      launch[i] = jt->second;  // -1 when the flow starts outside any runtime call
    }
  }
  return launch;
}

}  // namespace

TraceWindow SelectWindow(TraceData& trace, ParseStats* stats) {
  TraceWindow w = FindSteps(trace, stats);
  std::vector<TraceEvent>& ev = trace.events;
  const std::vector<int32_t> launch = LinkLaunches(trace);
  w.by_launch = std::any_of(launch.begin(), launch.end(), [](int32_t l) { return l >= 0; });

  // CPU events (and instants) by their own start; GPU activities by their launch call's start,
  // or by their own start in the fallback.
  std::vector<int32_t> new_index(ev.size(), -1);
  int32_t kept = 0;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    bool keep = w.Contains(e.ts_ns);
    if (IsGpuActivity(e.cls) && w.by_launch) {
      if (launch[i] < 0) {
        ++stats->unattributed_kernels;
        keep = false;
      } else {
        keep = w.Contains(ev[static_cast<size_t>(launch[i])].ts_ns);
      }
    }
    if (keep) new_index[i] = kept++;
  }
  w.launch_of.assign(static_cast<size_t>(kept), -1);
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const int32_t to = new_index[i];
    if (to < 0) continue;
    // A kept activity's launch call starts in the window, so it is kept too.
    if (launch[i] >= 0) {
      w.launch_of[static_cast<size_t>(to)] = new_index[static_cast<size_t>(launch[i])];
    }
    ev[static_cast<size_t>(to)] = ev[i];
  }
  ev.resize(static_cast<size_t>(kept));
  return w;
}

}  // namespace libreyolo
