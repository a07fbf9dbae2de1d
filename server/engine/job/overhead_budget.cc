#include "server/engine/job/overhead_budget.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

const std::optional<bool>& Requested(const ProfilerSwitches& p, CostlySwitch s) {
  switch (s) {
    case CostlySwitch::kRecordShapes:
      return p.record_shapes;
    case CostlySwitch::kProfileMemory:
      return p.profile_memory;
    case CostlySwitch::kWithFlops:
      break;
  }
  return p.with_flops;
}

size_t Index(CostlySwitch s) { return static_cast<size_t>(s); }

BudgetOutcome Start(const ProfilerSwitches& requested) {
  BudgetOutcome o;
  o.switches = ResolveSwitches(requested);
  for (CostlySwitch s : kCostlySwitches) {
    o.from_flag[Index(s)] = Requested(requested, s).has_value();
  }
  return o;
}

}  // namespace

const char* SwitchName(CostlySwitch s) {
  switch (s) {
    case CostlySwitch::kRecordShapes:
      return "record_shapes";
    case CostlySwitch::kProfileMemory:
      return "profile_memory";
    case CostlySwitch::kWithFlops:
      break;
  }
  return "with_flops";
}

const char* SwitchOffFlag(CostlySwitch s) {
  switch (s) {
    case CostlySwitch::kRecordShapes:
      return "--no-record-shapes";
    case CostlySwitch::kProfileMemory:
      return "--no-profile-memory";
    case CostlySwitch::kWithFlops:
      break;
  }
  return "--no-with-flops";
}

bool DefaultSwitch(CostlySwitch s) {
  switch (s) {
    case CostlySwitch::kRecordShapes:
      return kDefaultRecordShapes;
    case CostlySwitch::kProfileMemory:
      return kDefaultProfileMemory;
    case CostlySwitch::kWithFlops:
      break;
  }
  return kDefaultWithFlops;
}

bool ResolvedSwitches::Get(CostlySwitch s) const {
  switch (s) {
    case CostlySwitch::kRecordShapes:
      return record_shapes;
    case CostlySwitch::kProfileMemory:
      return profile_memory;
    case CostlySwitch::kWithFlops:
      break;
  }
  return with_flops;
}

void ResolvedSwitches::Set(CostlySwitch s, bool on) {
  switch (s) {
    case CostlySwitch::kRecordShapes:
      record_shapes = on;
      return;
    case CostlySwitch::kProfileMemory:
      profile_memory = on;
      return;
    case CostlySwitch::kWithFlops:
      with_flops = on;
      return;
  }
}

ResolvedSwitches ResolveSwitches(const ProfilerSwitches& requested) {
  ResolvedSwitches r;
  for (CostlySwitch s : kCostlySwitches) {
    r.Set(s, Requested(requested, s).value_or(DefaultSwitch(s)));
  }
  return r;
}

const char* SwitchSource(const ProfilerSwitches& requested, CostlySwitch s) {
  return Requested(requested, s).has_value() ? "flag" : "default";
}

double OverheadPct(double probe_median_ms, double baseline_median_ms) {
  if (!(baseline_median_ms > 0)) return 0.0;
  return 100.0 * (probe_median_ms - baseline_median_ms) / baseline_median_ms;
}

int64_t SignTestRank(int64_t n, double confidence, double* coverage) {
  // P(Binomial(n, 1/2) < k) accumulated term by term: C(n, i) / 2^n.
  const double tail = (1.0 - confidence) / 2.0;
  double term = std::ldexp(1.0, -static_cast<int>(n));  // C(n, 0) / 2^n
  double below = 0;                                      // P(B < k) for the current k
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (below + term > tail) break;
    below += term;  // now P(B < i + 1)
    k = i + 1;
    term = term * static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  if (k < 1) {  // too few pairs for the confidence asked: the widest interval there is
    k = 1;
    below = std::ldexp(1.0, -static_cast<int>(n));
  }
  if (coverage != nullptr) *coverage = std::max(0.0, 1.0 - 2.0 * below);
  return k;
}

absl::StatusOr<OverheadEstimate> EstimateOverhead(const std::vector<ProbeTimings>& rounds,
                                                  double confidence) {
  auto valid = [](double ms) { return std::isfinite(ms) && ms > 0; };
  std::vector<double> d, unprofiled, profiled;
  for (const ProbeTimings& t : rounds) {
    const size_t n = t.profiled_ms.size();
    if (n < 1 || t.unprofiled_ms.size() != n + 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "an overhead probe round needs n >= 1 profiled windows between n + 1 unprofiled ones, "
          "not %d and %d",
          n, t.unprofiled_ms.size()));
    }
    if (!std::all_of(t.profiled_ms.begin(), t.profiled_ms.end(), valid) ||
        !std::all_of(t.unprofiled_ms.begin(), t.unprofiled_ms.end(), valid)) {
      return absl::InvalidArgumentError("an overhead probe window took no positive, finite time");
    }
    for (size_t i = 0; i < n; ++i) {
      const double base = (t.unprofiled_ms[i] + t.unprofiled_ms[i + 1]) / 2.0;
      d.push_back(OverheadPct(t.profiled_ms[i], base));
    }
    unprofiled.insert(unprofiled.end(), t.unprofiled_ms.begin(), t.unprofiled_ms.end());
    profiled.insert(profiled.end(), t.profiled_ms.begin(), t.profiled_ms.end());
  }
  if (d.empty()) return absl::InvalidArgumentError("an overhead probe needs at least one round");
  const size_t n = d.size();
  OverheadEstimate e;
  e.pairs = static_cast<int64_t>(n);
  e.diffs_pct = d;
  e.median_pct = MedianMs(d);
  std::sort(d.begin(), d.end());
  const int64_t k = SignTestRank(e.pairs, confidence, &e.ci_level);
  e.ci_low_pct = d[static_cast<size_t>(k - 1)];
  e.ci_high_pct = d[n - static_cast<size_t>(k)];
  e.unprofiled_median_ms = MedianMs(std::move(unprofiled));
  e.profiled_median_ms = MedianMs(std::move(profiled));
  return e;
}

int64_t MannWhitneyRank(int64_t n, int64_t m, double confidence, double* coverage) {
  // P(U = u) for samples of i and j by the recursion p(i, j, u) = i / (i + j) p(i - 1, j, u - j)
  // + j / (i + j) p(i, j - 1, u) (the largest value is the first's or the second's), row by row.
  const double tail = (1.0 - confidence) / 2.0;
  std::vector<std::vector<std::vector<double>>> p(static_cast<size_t>(n + 1));
  for (int64_t i = 0; i <= n; ++i) {
    p[static_cast<size_t>(i)].resize(static_cast<size_t>(m + 1));
    for (int64_t j = 0; j <= m; ++j) {
      std::vector<double>& cur = p[static_cast<size_t>(i)][static_cast<size_t>(j)];
      cur.assign(static_cast<size_t>(i * j + 1), 0.0);
      if (i == 0 || j == 0) {
        cur[0] = 1.0;
        continue;
      }
      const double wi = static_cast<double>(i) / static_cast<double>(i + j);
      const std::vector<double>& a = p[static_cast<size_t>(i - 1)][static_cast<size_t>(j)];
      const std::vector<double>& b = p[static_cast<size_t>(i)][static_cast<size_t>(j - 1)];
      for (size_t u = 0; u < cur.size(); ++u) {
        if (u >= static_cast<size_t>(j) && u - static_cast<size_t>(j) < a.size()) {
          cur[u] += wi * a[u - static_cast<size_t>(j)];
        }
        if (u < b.size()) cur[u] += (1.0 - wi) * b[u];
      }
    }
  }
  const std::vector<double>& dist = p[static_cast<size_t>(n)][static_cast<size_t>(m)];
  double below = 0;  // P(U < k)
  int64_t k = 0;
  for (size_t u = 0; u < dist.size(); ++u) {
    if (below + dist[u] > tail) break;
    below += dist[u];
    k = static_cast<int64_t>(u) + 1;
  }
  if (k < 1) {  // too few for the confidence asked: the widest interval there is
    k = 1;
    below = dist.empty() ? 0.0 : dist[0];
  }
  if (coverage != nullptr) *coverage = std::max(0.0, 1.0 - 2.0 * below);
  return k;
}

absl::StatusOr<ShiftEstimate> EstimateShift(const std::vector<double>& with,
                                            const std::vector<double>& without,
                                            double confidence) {
  auto finite = [](double v) { return std::isfinite(v); };
  if (with.empty() || without.empty() || !std::all_of(with.begin(), with.end(), finite) ||
      !std::all_of(without.begin(), without.end(), finite)) {
    return absl::InvalidArgumentError(
        "a switch's cost needs finite paired differences from both probes");
  }
  std::vector<double> d;
  d.reserve(with.size() * without.size());
  for (double x : with) {
    for (double y : without) d.push_back(x - y);
  }
  ShiftEstimate e;
  e.n = static_cast<int64_t>(with.size());
  e.m = static_cast<int64_t>(without.size());
  e.shift_pct = MedianMs(d);
  std::sort(d.begin(), d.end());
  const int64_t k = MannWhitneyRank(e.n, e.m, confidence, &e.ci_level);
  e.ci_low_pct = d[static_cast<size_t>(k - 1)];
  e.ci_high_pct = d[d.size() - static_cast<size_t>(k)];
  return e;
}

int64_t RoundsPerProbe(int64_t job_windows, int64_t probes) {
  const int64_t rounds =
      job_windows <= 0 ? 0 : (job_windows - 1) / kProbeRoundWindows + 1;  // ceil, no overflow
  return std::clamp<int64_t>(rounds / std::max<int64_t>(probes, 1), 1, kMaxProbeRounds);
}

int64_t ProbeCount(const ProfilerSwitches& requested) {
  const ResolvedSwitches s = ResolveSwitches(requested);
  int64_t n = 1;
  for (CostlySwitch c : kCostlySwitches) n += s.Get(c) ? 1 : 0;
  return n;
}

absl::StatusOr<BudgetOutcome> ProbeProfilerCost(const ProfilerSwitches& requested,
                                                double budget_pct, const ProbeFn& probe,
                                                int64_t rounds_per_probe) {
  BudgetOutcome o = Start(requested);
  o.rounds_per_probe = std::max<int64_t>(rounds_per_probe, 1);
  auto measure = [&](const ResolvedSwitches& sw) -> absl::StatusOr<OverheadEstimate> {
    std::vector<ProbeTimings> rounds;
    for (int64_t r = 0; r < o.rounds_per_probe; ++r) {
      ASSIGN_OR_RETURN(auto timings, probe(sw));
      ++o.probe_rounds;
      rounds.push_back(std::move(timings));
    }
    return EstimateOverhead(rounds);
  };
  for (CostlySwitch c : kCostlySwitches) {
    if (!o.switches.Get(c)) continue;
    ResolvedSwitches without = o.switches;
    without.Set(c, false);
    ASSIGN_OR_RETURN(auto e, measure(without));
    SwitchCost cost;
    cost.which = c;
    cost.without = std::move(e);
    o.costs.push_back(std::move(cost));
  }
  ASSIGN_OR_RETURN(auto in_force, measure(o.switches));
  o.overhead = std::move(in_force);
  for (SwitchCost& c : o.costs) {
    ASSIGN_OR_RETURN(auto shift, EstimateShift(o.overhead->diffs_pct, c.without.diffs_pct));
    c.cost = shift;
    c.over_budget = c.cost.ci_low_pct > budget_pct;
  }
  return o;
}

BudgetOutcome SkipProbe(const ProfilerSwitches& requested, std::string why) {
  BudgetOutcome o = Start(requested);
  o.probe_note = std::move(why);
  return o;
}

absl::Status ValidateOverheadBudget(double budget_pct) {
  if (!std::isfinite(budget_pct) || budget_pct < 0 || budget_pct > 1000) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--overhead-budget must be a percentage in [0, 1000], not %g", budget_pct));
  }
  return absl::OkStatus();
}

double MedianMs(std::vector<double> ms) {
  if (ms.empty()) return 0.0;
  const size_t mid = ms.size() / 2;
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(mid), ms.end());
  const double upper = ms[mid];
  if (ms.size() % 2 == 1) return upper;
  const double lower = *std::max_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

void WriteSwitchFields(JsonWriter& w, const BudgetOutcome& o, const RecordedKinds& recorded,
                       bool with_modules, double budget_pct) {
  // Each switch is recorded as what the profile holds: on only when it was on and the trace
  // holds its data. LibTorch computes FLOPs from the recorded input shapes, so with_flops
  // without record_shapes records no FLOP.
  const ResolvedSwitches& s = o.switches;
  const bool shapes = s.record_shapes && recorded.shapes;
  const bool memory = s.profile_memory && recorded.memory;
  const bool flops = s.with_flops && s.record_shapes && recorded.flops;
  w.Field("record_shapes", shapes).Field("profile_memory", memory).Field("with_flops", flops);
  if (s.with_flops && !s.record_shapes && recorded.traced) {
    w.Field("with_flops_note",
            "with_flops was on but record_shapes was off: FLOPs are computed from the recorded "
            "input shapes, so none were recorded");
  }
  std::vector<std::string> notes;
  if (!recorded.traced) {
    if (s.record_shapes || s.profile_memory || s.with_flops) {
      notes.emplace_back("no trace was recorded (--no-trace): no switch produced data");
    }
  } else {
    if (s.record_shapes && !shapes) {
      notes.emplace_back("record_shapes was on but no op in the trace has input shapes");
    }
    if (s.profile_memory && !memory) {
      notes.emplace_back("profile_memory was on but the trace holds no memory event");
    }
    if (s.with_flops && s.record_shapes && !flops) {
      notes.emplace_back("with_flops was on but no op in the trace has a FLOP count");
    }
  }
  if (!notes.empty()) {
    w.Key("switch_notes").BeginArray();
    for (const std::string& n : notes) w.String(n);
    w.EndArray();
  }
  w.Field("with_stack", false).Field("with_modules", with_modules);
  w.Key("switch_source").BeginObject();
  for (CostlySwitch c : kCostlySwitches) {
    w.Field(SwitchName(c), o.from_flag[Index(c)] ? "flag" : "default");
  }
  w.EndObject().Field("overhead_budget_pct", budget_pct);
  w.Key("switch_costs").BeginObject();
  for (const SwitchCost& c : o.costs) {
    w.Key(SwitchName(c.which))
        .BeginObject()
        .Field("cost_pct", c.cost.shift_pct)
        .Key("ci_pct")
        .BeginArray()
        .Double(c.cost.ci_low_pct)
        .Double(c.cost.ci_high_pct)
        .EndArray()
        .Field("ci_level", c.cost.ci_level)
        .Field("pairs", c.cost.n)
        .Field("over_budget", c.over_budget)
        .Field("off_flag", SwitchOffFlag(c.which))
        .EndObject();
  }
  w.EndObject();
  const int64_t probes = o.overhead.has_value() ? static_cast<int64_t>(o.costs.size()) + 1 : 0;
  w.Field("probe_iterations", probes > 0 ? kProbeRoundWindows : int64_t{0})
      .Field("probe_rounds", o.probe_rounds)
      .Field("probe_windows", o.probe_rounds * kProbeRoundWindows)
      .Field("probe_rounds_each", o.rounds_per_probe);
  // One entry per probe, in the order they ran: each switch's "without", then "in force".
  std::vector<std::pair<std::string, const OverheadEstimate*>> runs;
  for (const SwitchCost& c : o.costs) {
    runs.emplace_back(absl::StrCat("without ", SwitchName(c.which)), &c.without);
  }
  if (o.overhead.has_value()) runs.emplace_back("in force", &*o.overhead);
  w.Key("probe_configs").BeginArray();
  for (const auto& r : runs) w.String(r.first);
  w.EndArray().Key("probe_pairs").BeginArray();
  for (const auto& r : runs) w.Int(r.second->pairs);
  w.EndArray();
  auto series = [&](const char* key, double OverheadEstimate::*field) {
    w.Key(key).BeginArray();
    for (const auto& r : runs) w.Double(r.second->*field);
    w.EndArray();
  };
  series("probe_overhead_pct", &OverheadEstimate::median_pct);
  series("probe_ci_low_pct", &OverheadEstimate::ci_low_pct);
  series("probe_ci_high_pct", &OverheadEstimate::ci_high_pct);
  series("probe_median_ms", &OverheadEstimate::profiled_median_ms);
  series("probe_baseline_ms", &OverheadEstimate::unprofiled_median_ms);
  series("probe_ci_level", &OverheadEstimate::ci_level);
  if (!o.probe_note.empty()) w.Field("probe_note", o.probe_note);
}

void WriteOverheadFields(JsonWriter& w, const BudgetOutcome& o) {
  if (!o.overhead.has_value()) {
    w.Key("overhead_pct").Null();
    return;
  }
  const OverheadEstimate& e = *o.overhead;
  w.Field("overhead_pct", e.median_pct)
      .Key("overhead_ci_pct")
      .BeginArray()
      .Double(e.ci_low_pct)
      .Double(e.ci_high_pct)
      .EndArray()
      .Field("overhead_ci_level", e.ci_level)
      .Field("overhead_pairs", e.pairs)
      .Field("overhead_source", "probe");
}

}  // namespace libreyolo::engine
