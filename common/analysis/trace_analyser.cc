#include "common/analysis/trace_analyser.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "common/analysis/kernel_classify.h"
#include "common/analysis/trust.h"
#include "common/analysis/verdict.h"
#include "common/profile/metric_table.h"
#include "common/status/status_macros.h"
#include "common/trace/event_tree.h"
#include "common/trace/flop_formulas.h"
#include "common/trace/trace_reader.h"
#include "common/trace/trace_window.h"

namespace libreyolo {
namespace {

constexpr double kNsPerMs = 1e6;

bool IsMallocCall(std::string_view name) {
  const std::string_view n = StripVersionSuffix(name);
  return n == "cudaMalloc" || n == "cudaFree" || n == "cuMemAlloc" || n == "cuMemFree" ||
         n == "hipMalloc" || n == "hipFree";
}

constexpr std::array<const char*, 7> kPhaseOrder = {
    "dataload", "to_device", "preprocess", "forward", "backward", "postprocess", "optimizer"};

// Phase ids: 0 = none; others index into `names`.
class PhaseTable {
 public:
  PhaseTable() { names_.emplace_back(); }
  uint16_t Id(const std::string& phase) {
    auto it = ids_.find(phase);
    if (it != ids_.end()) return it->second;
    names_.push_back(phase);
    const auto id = static_cast<uint16_t>(names_.size() - 1);
    ids_.emplace(phase, id);
    return id;
  }
  const std::string& Name(uint16_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, uint16_t> ids_;
};

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

// Sorts `iv` and merges overlapping or touching intervals into disjoint ones.
Intervals Merge(Intervals iv) {
  std::sort(iv.begin(), iv.end());
  Intervals out;
  for (const auto& [s, e] : iv) {
    if (out.empty() || s > out.back().second) {
      out.emplace_back(s, e);
    } else {
      out.back().second = std::max(out.back().second, e);
    }
  }
  return out;
}

int64_t Length(const Intervals& merged) {
  int64_t total = 0;
  for (const auto& [s, e] : merged) {
    if (e > s) SatAdd(total, e - s);
  }
  return total;
}

// Length of the intersection of two merged interval lists.
int64_t OverlapLength(const Intervals& a, const Intervals& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].first, b[j].first);
    const int64_t e = std::min(a[i].second, b[j].second);
    if (e > s) SatAdd(total, e - s);
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

double UnionLength(Intervals& iv) { return static_cast<double>(Length(Merge(std::move(iv)))); }

struct KernelAgg {
  int64_t dur_ns = 0;
  int64_t count = 0;
};

struct OpAgg {
  uint32_t name = 0, shapes = 0;
  int64_t count = 0;
  int64_t total_ns = 0, self_ns = 0;
  int64_t self_device_ns = 0, device_ns = 0;
  int64_t self_cpu_mem = 0, cpu_mem = 0, self_dev_mem = 0, dev_mem = 0;
  double flops = 0;
  bool has_flops = false;
};

struct PhaseAgg {
  int64_t gpu_ns = 0;
  int64_t kernels = 0;
  int64_t ops = 0;
  int64_t cpu_self_ns = 0;  // self CPU time of the phase's ops
  std::vector<std::pair<int64_t, int64_t>> spans;
  absl::flat_hash_map<uint32_t, KernelAgg> kernel_names;
  absl::flat_hash_map<uint32_t, OpAgg> op_names;
};

// Everything derived from the per-thread nesting, by event index.
struct Ancestry {
  std::vector<uint16_t> phase;     // innermost enclosing phase (self included)
  std::vector<int32_t> op;         // innermost enclosing cpu_op (self included), -1 none
  // Outermost enclosing cpu_op (self included) that is neither a phase span nor a
  // ProfilerStep#N: the "top-level op" of the inferred forward phase; -1 none.
  std::vector<int32_t> top_op;
};

class Analyser {
 public:
  // Takes the trace by value: events outside the window are dropped before any analysis.
  explicit Analyser(TraceData t) : t_(std::move(t)), ev_(t_.events) {}

  Profile Run() {
    Profile p;
    p.source_kind = "trace";
    p.parse_stats = t_.stats;
    p.device = t_.device;
    p.has_input_shapes = t_.has_input_shapes;
    // What the trace can vouch for, on the whole trace as read (trust.h).
    p.trust_checks = RunTraceChecks(t_);
    // No forward marks anywhere in the trace: forward is inferred from the fwdbwd flows.
    infer_forward_ = !HasForwardMarks();
    // Every metric uses only the window's events (docs/metrics.md): CPU events that start in
    // it, and the GPU activities their launch calls started there.
    win_ = SelectWindow(t_, &p.parse_stats);
    launch_of_ = std::move(win_.launch_of);
    p.gpu_attribution = win_.by_launch ? "launch" : "start";
    steps_ = static_cast<double>(win_.real_steps);
    tree_ = BuildEventTree(t_);
    ComputeAncestry();

    p.real_steps = win_.real_steps;
    p.window_wall_ms = static_cast<double>(win_.w1 - win_.w0) / kNsPerMs;
    p.step_ms = *p.window_wall_ms / steps_;

    KernelMetrics(p);
    RuntimeMetrics(p);
    OpMetrics(p);
    UncountedFlopOps(p);
    PhaseMetrics(p);
    MemoryMetrics(p);

    // Host overhead: measured where kernels can be tied to launches, else the residual.
    const double busy = p.gpu_busy_ms_per_step.value_or(0);
    const double dataload = p.dataload_ms.value_or(0);
    p.host_overhead_residual_ms_per_step = std::max(*p.step_ms - busy - dataload, 0.0);
    if (kernels_with_launch_ > 0) {
      p.host_overhead_ms_per_step = p.gpu_wait_host_ms_per_step;
      p.host_overhead_method = "measured";
    } else {
      p.host_overhead_ms_per_step = p.host_overhead_residual_ms_per_step;
      p.host_overhead_method = "residual";
    }
    if (p.step_ms.value_or(0) > 0 && p.flops_per_step.has_value()) {
      p.achieved_tflops = *p.flops_per_step / (*p.step_ms / 1000.0) / 1e12;
    }
    p.memory_pressure = IsMemoryPressure(p.cuda_mallocs_per_step.value_or(0),
                                         p.gpu_util_raw.value_or(0));
    const Verdict v = ComputeVerdict(p);
    p.bound = v.bound;
    p.bound_why = v.why;
    ApplyMetricRules(p);  // a CPU job's GPU metrics are n/a (docs/metrics.md)
    return p;
  }

 private:
  double PerStepMs(int64_t ns) const { return static_cast<double>(ns) / kNsPerMs / steps_; }
  double PerStep(double v) const { return v / steps_; }
  // The step's mean of a count: one kernel in two steps is 0.5 (kernels_per_step,
  // launches_per_step, ops_per_step, cuda_mallocs_per_step; issue 40).
  double MeanPerStep(int64_t n) const { return static_cast<double>(n) / steps_; }
  // Counts per step of the rows (kernel, op and phase tables): the Python LibreYOLO's rule
  // (metric_table.h PerStepCount), which its readers format as integers.
  double CountPerStep(int64_t n, bool row = false) const {
    return static_cast<double>(PerStepCount(n, win_.real_steps, row));
  }

  // Whether any CPU-side span of the trace names the forward phase ("step/forward",
  // "## forward ##"): our engine's and the Python tool's profile traces have them.
  bool HasForwardMarks() {
    for (const TraceEvent& e : ev_) {
      if (e.cls != EventClass::kCpuOp && e.cls != EventClass::kAnnotation) continue;
      const uint16_t ph = SpanPhase(e.name);
      if (ph != 0 && phases_.Name(ph) == "forward") return true;
    }
    return false;
  }

  void ComputeAncestry() {
    const size_t n = ev_.size();
    anc_.phase.assign(n, 0);
    anc_.op.assign(n, -1);
    anc_.top_op.assign(n, -1);
    autograd_.assign(n, 0);
    forward_root_.assign(n, 0);
    phase_name_of_string_.clear();
    for (const uint32_t i : tree_.order) {
      const int32_t par = tree_.parent[i];
      const TraceEvent& e = ev_[i];
      uint16_t phase = par >= 0 ? anc_.phase[static_cast<size_t>(par)] : 0;
      int32_t op = par >= 0 ? anc_.op[static_cast<size_t>(par)] : -1;
      uint8_t autograd = par >= 0 ? autograd_[static_cast<size_t>(par)] : 0;
      int32_t top = par >= 0 ? anc_.top_op[static_cast<size_t>(par)] : -1;
      uint16_t own = 0;
      if (e.cls == EventClass::kCpuOp || e.cls == EventClass::kAnnotation) {
        own = SpanPhase(e.name);
        if (own != 0) phase = own;
      }
      if (e.cls == EventClass::kFwdBwdStart && top >= 0) {
        forward_root_[static_cast<size_t>(top)] = 1;  // a forward op's flow: its top-level op
      }
      if (e.cls == EventClass::kCpuOp) {
        op = static_cast<int32_t>(i);
        if (top < 0 && own == 0 && !absl::StartsWith(t_.strings.Get(e.name), "ProfilerStep#")) {
          top = static_cast<int32_t>(i);
        }
        if (!autograd && absl::StartsWith(t_.strings.Get(e.name),
                                          "autograd::engine::evaluate_function:")) {
          autograd = 1;
        }
      }
      anc_.phase[i] = phase;
      anc_.op[i] = op;
      anc_.top_op[i] = top;
      autograd_[i] = autograd;
    }
  }

  // Phase id of a span name, cached per interned name.
  uint16_t SpanPhase(uint32_t name) {
    auto it = phase_name_of_string_.find(name);
    if (it != phase_name_of_string_.end()) return it->second;
    const std::string phase = PhaseOfSpanName(t_.strings.Get(name));
    const uint16_t id = phase.empty() ? 0 : phases_.Id(phase);
    phase_name_of_string_.emplace(name, id);
    return id;
  }

  // The phase of a CPU-side node: its enclosing phase span, else backward inside autograd,
  // else, in a trace without forward marks, forward inside a top-level op that holds the start
  // of a fwdbwd flow (a forward op whose backward ran in the trace; docs/metrics.md).
  uint16_t NodePhase(size_t i) {
    if (anc_.phase[i] != 0) return anc_.phase[i];
    if (autograd_[i]) return phases_.Id("backward");
    const int32_t top = anc_.top_op[i];
    if (infer_forward_ && top >= 0 && forward_root_[static_cast<size_t>(top)]) {
      return phases_.Id("forward");
    }
    return 0;
  }

  // Phase of a kernel: through its launch; without one, by time overlap with phase spans.
  uint16_t KernelPhase(size_t i) {
    if (launch_of_[i] >= 0) return NodePhase(static_cast<size_t>(launch_of_[i]));
    if (!overlap_ready_) BuildOverlapIndex();
    const int64_t ts = ev_[i].ts_ns;
    // Latest-starting span with start <= ts that still contains ts.
    auto it = std::upper_bound(overlap_spans_.begin(), overlap_spans_.end(), ts,
                               [](int64_t v, const auto& s) { return v < std::get<0>(s); });
    while (it != overlap_spans_.begin()) {
      --it;
      if (std::get<1>(*it) > ts) return std::get<2>(*it);
    }
    return 0;
  }

  void BuildOverlapIndex() {
    overlap_ready_ = true;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const TraceEvent& e = ev_[i];
      if (e.cls != EventClass::kCpuOp && e.cls != EventClass::kAnnotation) continue;
      const uint16_t ph = SpanPhase(e.name);
      if (ph != 0) overlap_spans_.emplace_back(e.ts_ns, e.ts_ns + e.dur_ns, ph);
    }
    std::stable_sort(overlap_spans_.begin(), overlap_spans_.end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  }

  PhaseAgg& Phase(uint16_t id) {
    if (phase_aggs_.size() <= id) phase_aggs_.resize(static_cast<size_t>(id) + 1);
    return phase_aggs_[id];
  }

  void KernelMetrics(Profile& p) {
    absl::flat_hash_map<uint32_t, KernelAgg> by_name;
    std::vector<std::pair<int64_t, uint32_t>> starts;  // (ts, event) of window kernels
    int64_t sum_ns = 0, count = 0, memcpy_ns = 0;
    // Intervals of the window's GPU work: all activities, communication kernels, other kernels.
    Intervals active, comm, compute;
    absl::flat_hash_map<uint32_t, bool> is_comm;  // by kernel name
    int64_t gpu_end = win_.w1;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const TraceEvent& e = ev_[i];
      if (!IsGpuActivity(e.cls)) continue;
      const int64_t end = e.ts_ns + e.dur_ns;
      active.emplace_back(e.ts_ns, end);
      if (e.cls != EventClass::kKernel) {
        SatAdd(memcpy_ns, e.dur_ns);
        continue;
      }
      gpu_end = std::max(gpu_end, end);
      auto [ci, fresh] = is_comm.try_emplace(e.name, false);
      if (fresh) ci->second = KernelCategory(t_.strings.Get(e.name)) == kCategoryCommunication;
      (ci->second ? comm : compute).emplace_back(e.ts_ns, end);
      SatAdd(sum_ns, e.dur_ns);
      ++count;
      auto& agg = by_name[e.name];
      SatAdd(agg.dur_ns, e.dur_ns);
      ++agg.count;
      starts.emplace_back(e.ts_ns, i);
      if (launch_of_[i] >= 0) {
        ++kernels_with_launch_;
        const int32_t op = anc_.op[static_cast<size_t>(launch_of_[i])];
        if (op >= 0) Add(self_device_ns_, static_cast<uint32_t>(op), e.dur_ns);
      }
      const uint16_t ph = KernelPhase(i);
      if (ph != 0) {
        PhaseAgg& pa = Phase(ph);
        SatAdd(pa.gpu_ns, e.dur_ns);
        ++pa.kernels;
        auto& ka = pa.kernel_names[e.name];
        SatAdd(ka.dur_ns, e.dur_ns);
        ++ka.count;
      }
    }
    p.gpu_kernel_ms_per_step = PerStepMs(sum_ns);
    p.kernels_per_step = MeanPerStep(count);
    p.unique_kernels = static_cast<int64_t>(by_name.size());
    p.mean_kernel_us = count > 0 ? static_cast<double>(sum_ns) / 1000.0 / static_cast<double>(count)
                                 : 0.0;
    p.memcpy_ms_per_step = PerStepMs(memcpy_ns);

    // Union of kernel intervals, and GPU idle time spent waiting for the next launch to return.
    std::sort(starts.begin(), starts.end());
    int64_t busy = 0, wait = 0, cur_s = 0, cur_e = INT64_MIN;
    for (const auto& [ts, i] : starts) {
      const TraceEvent& k = ev_[i];
      const int64_t end = ts + k.dur_ns;
      if (ts > cur_e) {
        if (cur_e != INT64_MIN) {
          SatAdd(busy, cur_e - cur_s);
          if (launch_of_[i] >= 0) {
            const TraceEvent& l = ev_[static_cast<size_t>(launch_of_[i])];
            const int64_t launch_end = l.ts_ns + l.dur_ns;
            if (launch_end > cur_e) SatAdd(wait, std::min(ts, launch_end) - cur_e);
          }
        }
        cur_s = ts;
        cur_e = end;
      } else {
        cur_e = std::max(cur_e, end);
      }
    }
    if (cur_e != INT64_MIN) SatAdd(busy, cur_e - cur_s);
    p.gpu_busy_ms_per_step = PerStepMs(busy);
    p.gpu_wait_host_ms_per_step = PerStepMs(wait);
    // Utilisation over the span from the window's start to the end of its last kernel: the
    // last step's kernels may run after w1.
    const int64_t span = gpu_end - win_.w0;
    p.gpu_util_raw = span > 0 ? static_cast<double>(busy) / static_cast<double>(span) : 0.0;
    p.gpu_util = std::min(*p.gpu_util_raw, 1.0);
    p.gpu_active_ms_per_step = PerStepMs(Length(Merge(std::move(active))));

    // Communication, and the part of it no other kernel runs beside (HTA's comm/comp overlap).
    const Intervals comm_u = Merge(std::move(comm));
    const int64_t comm_ns = Length(comm_u);
    const int64_t exposed_ns = comm_ns - OverlapLength(comm_u, Merge(std::move(compute)));
    p.comm_ms_per_step = PerStepMs(comm_ns);
    p.comm_exposed_ms_per_step = PerStepMs(exposed_ns);
    if (comm_ns > 0) {
      p.comm_overlap_pct =
          100.0 * (1.0 - static_cast<double>(exposed_ns) / static_cast<double>(comm_ns));
    }

    // Kernel rows, categories and Tensor Core share.
    int64_t tc_ns = 0;
    absl::flat_hash_map<std::string, int64_t> cat_ns;
    for (const auto& [name, agg] : by_name) {
      const std::string& raw = t_.strings.Get(name);
      KernelRow row = MakeKernelRow(raw, agg, sum_ns);
      if (row.tensorcore) SatAdd(tc_ns, agg.dur_ns);
      SatAdd(cat_ns[row.category], agg.dur_ns);
      p.kernels.push_back(std::move(row));
    }
    SortKernelRows(p.kernels);
    p.tensorcore_pct = sum_ns > 0 ? 100.0 * static_cast<double>(tc_ns) / static_cast<double>(sum_ns)
                                  : 0.0;
    for (const auto& [name, ns] : cat_ns) {
      p.categories.push_back(CategoryRow{
          name, sum_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(sum_ns) : 0.0,
          PerStepMs(ns)});
    }
    std::sort(p.categories.begin(), p.categories.end(), [](const auto& a, const auto& b) {
      return std::tie(b.ms_per_step, a.name) < std::tie(a.ms_per_step, b.name);
    });
  }

  KernelRow MakeKernelRow(const std::string& raw, const KernelAgg& agg, int64_t all_ns) {
    auto it = classified_.find(raw);
    if (it == classified_.end()) {
      it = classified_.emplace(raw, std::make_pair(KernelCategory(raw), IsTensorCoreKernel(raw)))
               .first;
    }
    KernelRow row;
    row.raw_name = raw;
    row.kernel = FriendlyKernelName(raw);
    row.category = it->second.first;
    row.tensorcore = it->second.second;
    row.ms_per_step = PerStepMs(agg.dur_ns);
    row.count_per_step = CountPerStep(static_cast<int64_t>(agg.count), true);
    row.pct_of_gpu =
        all_ns > 0 ? 100.0 * static_cast<double>(agg.dur_ns) / static_cast<double>(all_ns) : 0.0;
    return row;
  }

  static void SortKernelRows(std::vector<KernelRow>& rows) {
    std::sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) {
      return std::tie(b.ms_per_step, a.raw_name) < std::tie(a.ms_per_step, b.raw_name);
    });
  }

  void RuntimeMetrics(Profile& p) {
    int64_t runtime = 0, launches = 0, mallocs = 0, launch_ns = 0, api_ns = 0;
    absl::flat_hash_map<uint32_t, std::pair<bool, bool>> kind;  // name -> (launch, malloc)
    for (const TraceEvent& e : ev_) {
      if (e.cls != EventClass::kRuntime) continue;
      ++runtime;
      auto it = kind.find(e.name);
      if (it == kind.end()) {
        const std::string& n = t_.strings.Get(e.name);
        it = kind.emplace(e.name, std::make_pair(IsGpuLaunchCall(n), IsMallocCall(n))).first;
        if (absl::StrContains(n, "Synchronize")) sync_names_.insert(e.name);
      }
      if (it->second.first) {
        ++launches;
        SatAdd(launch_ns, e.dur_ns);
      }
      if (it->second.second) ++mallocs;
      if (!sync_names_.contains(e.name)) SatAdd(api_ns, e.dur_ns);
    }
    if (runtime > 0) {
      p.launches_per_step = MeanPerStep(launches);
      p.launches_source = "runtime";
    } else {
      p.launches_per_step = p.kernels_per_step;
      p.launches_source = "kernels";
    }
    p.cuda_mallocs_per_step = MeanPerStep(mallocs);
    p.launch_api_ms_per_step = PerStepMs(launch_ns);
    p.host_api_ms_per_step = PerStepMs(api_ns);
  }

  // Adds `v` to `key` in a sparse per-op table (most ops allocate nothing and launch nothing,
  // so maps keep the analyser's memory per event small).
  static void Add(absl::flat_hash_map<uint32_t, int64_t>& m, uint32_t key, int64_t v) {
    if (v != 0) SatAdd(m[key], v);
  }
  static int64_t Get(const absl::flat_hash_map<uint32_t, int64_t>& m, uint32_t key) {
    if (m.empty()) return 0;
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  }

  // Inclusive values: each op's own value added to every enclosing op (nested same-name ops
  // add up, as in PyTorch's key_averages).
  absl::flat_hash_map<uint32_t, int64_t> Inclusive(
      const absl::flat_hash_map<uint32_t, int64_t>& self) const {
    absl::flat_hash_map<uint32_t, int64_t> incl;
    for (const auto& [op, v] : self) {
      int32_t cur = static_cast<int32_t>(op);
      while (cur >= 0) {
        SatAdd(incl[static_cast<uint32_t>(cur)], v);
        const int32_t par = tree_.parent[static_cast<size_t>(cur)];
        cur = par < 0 ? -1 : anc_.op[static_cast<size_t>(par)];
      }
    }
    return incl;
  }

  void OpMetrics(Profile& p) {
    // Memory instants belong to the innermost op on their thread.
    absl::flat_hash_map<uint32_t, int64_t> self_cpu_mem, self_dev_mem;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const TraceEvent& e = ev_[i];
      if (e.cls != EventClass::kMemoryInstant || anc_.op[i] < 0) continue;
      const auto op = static_cast<uint32_t>(anc_.op[i]);
      Add(e.device_type > 0 ? self_dev_mem : self_cpu_mem, op, t_.memory[e.aux].bytes);
    }
    const auto cpu_mem = Inclusive(self_cpu_mem);
    const auto dev_mem = Inclusive(self_dev_mem);
    const auto dev_ns = Inclusive(self_device_ns_);

    absl::flat_hash_map<uint32_t, OpAgg> by_name;
    absl::flat_hash_map<std::pair<uint32_t, uint32_t>, OpAgg> by_shape;
    int64_t self_total = 0, self_dev_total = 0, cpu_op_count = 0;
    double flops_total = 0;
    bool any_flops = false;
    for (const uint32_t i : tree_.order) {
      const TraceEvent& e = ev_[i];
      if (e.cls != EventClass::kCpuOp) continue;
      ++cpu_op_count;
      const int64_t self_ns = std::max<int64_t>(e.dur_ns - tree_.child_dur_ns[i], 0);
      const int64_t self_dev = Get(self_device_ns_, i);
      const double flops = t_.FlopsOf(e);
      SatAdd(self_total, self_ns);
      SatAdd(self_dev_total, self_dev);
      if (flops >= 0) {
        flops_total += flops;
        any_flops = true;
      }
      const int64_t v_cpu_mem = Get(cpu_mem, i), v_dev_mem = Get(dev_mem, i);
      const int64_t v_self_cpu_mem = Get(self_cpu_mem, i), v_self_dev_mem = Get(self_dev_mem, i);
      const int64_t v_dev_ns = Get(dev_ns, i);
      auto add = [&](OpAgg& a) {
        a.name = e.name;
        ++a.count;
        SatAdd(a.total_ns, e.dur_ns);
        SatAdd(a.self_ns, self_ns);
        SatAdd(a.self_device_ns, self_dev);
        SatAdd(a.device_ns, v_dev_ns);
        SatAdd(a.self_cpu_mem, v_self_cpu_mem);
        SatAdd(a.cpu_mem, v_cpu_mem);
        SatAdd(a.self_dev_mem, v_self_dev_mem);
        SatAdd(a.dev_mem, v_dev_mem);
        if (flops >= 0) {
          a.flops += flops;
          a.has_flops = true;
        }
      };
      add(by_name[e.name]);
      if (t_.has_input_shapes) {
        OpAgg& s = by_shape[{e.name, e.shapes}];
        add(s);
        s.shapes = e.shapes;
      }
      const uint16_t ph = NodePhase(i);
      if (ph != 0) {
        PhaseAgg& pa = Phase(ph);
        ++pa.ops;
        SatAdd(pa.cpu_self_ns, self_ns);
        add(pa.op_names[e.name]);
      }
    }
    p.ops_per_step = MeanPerStep(cpu_op_count);
    p.self_cpu_total_ms_per_step = PerStepMs(self_total);
    p.self_device_total_ms_per_step = PerStepMs(self_dev_total);
    if (any_flops) p.flops_per_step = PerStep(flops_total);
    p.ops = OpRows(by_name);
    if (t_.has_input_shapes) {
      absl::flat_hash_map<uint32_t, OpAgg> flat;
      uint32_t k = 0;
      for (auto& [key, agg] : by_shape) flat.emplace(k++, agg);
      p.ops_by_input_shape = OpRows(flat);
    }
  }

  // The FLOP-bearing ops (flop_formulas.h) that carry no count and sit in no counted chain
  // (no count on an op around or inside them): the total lacks them, so it is a lower bound.
  // A traced graph's aten::_convolution in a torch.profiler trace is one (LibTorch counts
  // aten::conv2d only); our collectors count it.
  void UncountedFlopOps(Profile& p) {
    if (!p.flops_per_step.has_value()) return;  // no FLOPs recorded: no total to qualify
    const size_t n = ev_.size();
    auto counted = [&](size_t i) {
      return ev_[i].cls == EventClass::kCpuOp && t_.FlopsOf(ev_[i]) >= 0;
    };
    std::vector<uint8_t> above(n, 0), below(n, 0);  // a counted op around it / inside it
    // Parents first, then children first.
    for (const uint32_t i : tree_.order) {
      const int32_t par = tree_.parent[i];
      if (par >= 0) above[i] = above[static_cast<size_t>(par)] || counted(static_cast<size_t>(par));
    }
    for (auto it = tree_.order.rbegin(); it != tree_.order.rend(); ++it) {
      const int32_t par = tree_.parent[*it];
      if (par >= 0 && (below[*it] || counted(*it))) below[static_cast<size_t>(par)] = 1;
    }
    absl::flat_hash_map<uint32_t, bool> bearing;  // per interned name
    std::set<std::string> names;
    for (const uint32_t i : tree_.order) {
      const TraceEvent& e = ev_[i];
      if (e.cls != EventClass::kCpuOp || counted(i) || above[i] || below[i]) continue;
      auto [it, fresh] = bearing.try_emplace(e.name, false);
      if (fresh) it->second = IsFlopBearingOp(t_.strings.Get(e.name));
      if (it->second) names.insert(std::string(t_.strings.Get(e.name)));
    }
    p.flops_uncounted_ops.assign(names.begin(), names.end());
  }

  std::vector<OpRow> OpRows(const absl::flat_hash_map<uint32_t, OpAgg>& aggs) const {
    std::vector<OpRow> rows;
    rows.reserve(aggs.size());
    // pct_of_cpu_ops keeps the Python tool's meaning: the row's CPU total over the sum of the
    // list's CPU totals (nesting counted at every level). The self-time share is
    // pct_of_self_cpu (profile_json_write.cc, ops_view.cc).
    int64_t list_total_ns = 0;
    for (const auto& [key, a] : aggs) SatAdd(list_total_ns, a.total_ns);
    for (const auto& [key, a] : aggs) {
      OpRow r;
      r.op = t_.strings.Get(a.name);
      r.input_shapes = t_.strings.Get(a.shapes);
      r.count_per_step = CountPerStep(static_cast<int64_t>(a.count), true);
      r.ms_per_step = PerStepMs(a.total_ns);
      r.self_cpu_ms_per_step = PerStepMs(a.self_ns);
      r.pct_of_cpu_ops = list_total_ns > 0 ? 100.0 * static_cast<double>(a.total_ns) /
                                                 static_cast<double>(list_total_ns)
                                           : 0.0;
      r.self_cpu_mem_bytes = PerStep(static_cast<double>(a.self_cpu_mem));
      r.cpu_mem_bytes = PerStep(static_cast<double>(a.cpu_mem));
      r.self_device_mem_bytes = PerStep(static_cast<double>(a.self_dev_mem));
      r.device_mem_bytes = PerStep(static_cast<double>(a.dev_mem));
      r.device_ms_per_step = PerStepMs(a.device_ns);
      r.self_device_ms_per_step = PerStepMs(a.self_device_ns);
      if (a.has_flops) r.flops = PerStep(a.flops);
      rows.push_back(std::move(r));
    }
    std::sort(rows.begin(), rows.end(), [](const OpRow& a, const OpRow& b) {
      return std::tie(b.ms_per_step, a.op, a.input_shapes) <
             std::tie(a.ms_per_step, b.op, b.input_shapes);
    });
    return rows;
  }

  void PhaseMetrics(Profile& p) {
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const TraceEvent& e = ev_[i];
      if (e.cls != EventClass::kCpuOp && e.cls != EventClass::kAnnotation) continue;
      const uint16_t ph = SpanPhase(e.name);
      if (ph != 0) Phase(ph).spans.emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
    }
    std::vector<uint16_t> ids;
    for (uint16_t id = 1; id < phase_aggs_.size(); ++id) {
      const PhaseAgg& a = phase_aggs_[id];
      if (!a.spans.empty() || a.kernels > 0 || a.ops > 0) ids.push_back(id);
    }
    auto rank = [this](uint16_t id) {
      const std::string& name = phases_.Name(id);
      for (size_t k = 0; k < kPhaseOrder.size(); ++k) {
        if (name == kPhaseOrder[k]) return std::make_pair(k, std::string());
      }
      return std::make_pair(kPhaseOrder.size(), name);
    };
    std::sort(ids.begin(), ids.end(), [&](uint16_t a, uint16_t b) { return rank(a) < rank(b); });
    p.dataload_ms = 0.0;
    for (const uint16_t id : ids) {
      PhaseAgg& a = phase_aggs_[id];
      PhaseRow row;
      row.phase = phases_.Name(id);
      row.gpu_ms_per_step = PerStepMs(a.gpu_ns);
      if (!a.spans.empty()) row.wall_ms_per_step = UnionLength(a.spans) / kNsPerMs / steps_;
      row.kernels_per_step = CountPerStep(static_cast<int64_t>(a.kernels));
      row.ops_per_step = CountPerStep(static_cast<int64_t>(a.ops));
      if (a.ops > 0) row.cpu_ms_per_step = PerStepMs(a.cpu_self_ns);
      row.unique_kernels = static_cast<int64_t>(a.kernel_names.size());
      if (row.phase == "dataload") p.dataload_ms = row.wall_ms_per_step.value_or(0);
      std::vector<KernelRow> krows;
      for (const auto& [name, agg] : a.kernel_names) {
        krows.push_back(MakeKernelRow(t_.strings.Get(name), agg, a.gpu_ns));
      }
      SortKernelRows(krows);
      p.kernels_by_phase[row.phase] = std::move(krows);
      p.ops_by_phase[row.phase] = OpRows(a.op_names);
      p.phases.push_back(std::move(row));
    }
    const double step = p.step_ms.value_or(0);
    p.dataload_frac = step > 0 ? *p.dataload_ms / step : 0.0;
  }

  void MemoryMetrics(Profile& p) {
    int64_t peak_alloc = -1, peak_reserved = -1, peak_cpu = -1;
    for (const TraceEvent& e : ev_) {
      if (e.cls != EventClass::kMemoryInstant) continue;
      if (e.device_type <= 0) {
        peak_cpu = std::max(peak_cpu, t_.memory[e.aux].total_allocated);
        continue;
      }
      peak_alloc = std::max(peak_alloc, t_.memory[e.aux].total_allocated);
      peak_reserved = std::max(peak_reserved, t_.memory[e.aux].total_reserved);
    }
    if (peak_alloc >= 0) p.peak_vram_mb = static_cast<double>(peak_alloc) / 1e6;
    if (peak_reserved >= 0) p.peak_reserved_mb = static_cast<double>(peak_reserved) / 1e6;
    if (peak_cpu >= 0) p.peak_cpu_alloc_mb = static_cast<double>(peak_cpu) / 1e6;
  }

  TraceData t_;
  const std::vector<TraceEvent>& ev_;
  TraceWindow win_;
  double steps_ = 1;
  EventTree tree_;
  Ancestry anc_;
  std::vector<uint8_t> autograd_;
  std::vector<uint8_t> forward_root_;  // by event index: a top-level op holding a fwdbwd start
  bool infer_forward_ = false;
  std::vector<int32_t> launch_of_;
  PhaseTable phases_;
  absl::flat_hash_map<uint32_t, uint16_t> phase_name_of_string_;
  std::vector<PhaseAgg> phase_aggs_;
  absl::flat_hash_map<uint32_t, int64_t> self_device_ns_;
  absl::flat_hash_map<std::string, std::pair<std::string, bool>> classified_;
  absl::flat_hash_set<uint32_t> sync_names_;
  std::vector<std::tuple<int64_t, int64_t, uint16_t>> overlap_spans_;
  bool overlap_ready_ = false;
  int64_t kernels_with_launch_ = 0;
};

}  // namespace

std::string PhaseOfSpanName(const std::string& name) {
  if (absl::StartsWith(name, "step/") && name.size() > 5) return name.substr(5);
  if (name == "## forward ##") return "forward";
  if (name == "## backward ##") return "backward";
  if (name == "## data_load ##" || name == "## dataload ##" ||
      absl::StartsWith(name, "enumerate(DataLoader)#")) {
    return "dataload";
  }
  if (name == "## to_device ##") return "to_device";
  if (absl::StartsWith(name, "Optimizer.step#") || absl::StartsWith(name, "Optimizer.zero_grad#") ||
      name == "## optimizer ##") {
    return "optimizer";
  }
  return "";
}

Profile AnalyseTrace(TraceData trace) { return Analyser(std::move(trace)).Run(); }

absl::StatusOr<Profile> AnalyseTraceFile(const std::string& path) {
  ASSIGN_OR_RETURN(auto data, ReadTraceFile(path));
  Profile p = AnalyseTrace(std::move(data));
  p.trace = path;
  return p;
}

}  // namespace libreyolo
