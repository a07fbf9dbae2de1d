#include "server/engine/job/overhead_budget.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

BudgetOutcome Start(const ProfilerSwitches& requested) {
  BudgetOutcome o;
  o.switches = InitialSwitches(requested);
  for (CostlySwitch s : AutoSwitches(requested)) o.auto_switches.emplace_back(SwitchName(s));
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

ResolvedSwitches InitialSwitches(const ProfilerSwitches& requested) {
  ResolvedSwitches r;
  for (CostlySwitch s : kDisableOrder) r.Set(s, Requested(requested, s).value_or(true));
  return r;
}

std::vector<CostlySwitch> AutoSwitches(const ProfilerSwitches& requested) {
  // FLOPs are computed from the recorded shapes (LibTorch forces record_shapes for with_flops):
  // asking for FLOPs keeps an auto record_shapes on (issue 22: the probe turned shapes off and
  // FLOPs came out null with no word).
  const bool flops_asked = Requested(requested, CostlySwitch::kWithFlops).value_or(false);
  std::vector<CostlySwitch> out;
  for (CostlySwitch s : kDisableOrder) {
    if (Requested(requested, s).has_value()) continue;
    if (s == CostlySwitch::kRecordShapes && flops_asked) continue;
    out.push_back(s);
  }
  return out;
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
  e.median_pct = MedianMs(d);
  std::sort(d.begin(), d.end());
  const int64_t k = SignTestRank(e.pairs, confidence, &e.ci_level);
  e.ci_low_pct = d[static_cast<size_t>(k - 1)];
  e.ci_high_pct = d[n - static_cast<size_t>(k)];
  e.unprofiled_median_ms = MedianMs(std::move(unprofiled));
  e.profiled_median_ms = MedianMs(std::move(profiled));
  return e;
}

BudgetAction NextBudgetAction(const OverheadEstimate& e, double budget_pct,
                              const std::vector<CostlySwitch>& auto_still_on) {
  BudgetAction a;
  if (!(e.ci_low_pct > budget_pct)) return a;  // kAccept: not over budget beyond doubt
  if (auto_still_on.empty()) {
    a.kind = BudgetAction::Kind::kExhausted;
    return a;
  }
  a.kind = BudgetAction::Kind::kDisable;
  a.which = auto_still_on.front();
  return a;
}

int64_t ProbeRoundLimit(int64_t job_windows) {
  const int64_t rounds =
      job_windows <= 0 ? 0 : (job_windows - 1) / kProbeRoundWindows + 1;  // ceil, no overflow
  return std::max(kMinProbeRounds, rounds);
}

absl::StatusOr<BudgetOutcome> ApplyOverheadBudget(const ProfilerSwitches& requested,
                                                  double budget_pct, const ProbeFn& probe,
                                                  int64_t max_rounds) {
  BudgetOutcome o = Start(requested);
  o.probe_round_limit = std::max<int64_t>(max_rounds, 0);
  std::vector<CostlySwitch> still_on = AutoSwitches(requested);
  const auto left = [&] { return max_rounds <= 0 || o.probe_rounds < max_rounds; };
  bool cut_short = false;
  std::string kept;  // a switch found over budget but kept: no round left to measure without it
  // One probe: rounds until the estimate is over the budget beyond doubt, or its median is
  // within it, or kMaxProbeRounds ran, or the job's allowance is spent (nullopt: not a round).
  auto measure = [&]() -> absl::StatusOr<std::optional<OverheadEstimate>> {
    std::vector<ProbeTimings> rounds;
    std::optional<OverheadEstimate> e;
    while (left()) {
      auto timings = probe(o.switches);
      if (!timings.ok()) return timings.status();
      ++o.probe_rounds;
      rounds.push_back(*std::move(timings));
      auto estimate = EstimateOverhead(rounds);
      if (!estimate.ok()) return estimate.status();
      e = *estimate;
      const bool undecided = e->ci_low_pct <= budget_pct && e->median_pct > budget_pct;
      if (!undecided || static_cast<int64_t>(rounds.size()) >= kMaxProbeRounds) return e;
    }
    cut_short = true;
    return e;
  };
  // At most one decision probe per auto switch: each over-budget probe turns one off, and the
  // configuration left when the last goes off is measured, not judged.
  while (!still_on.empty()) {
    auto e = measure();
    if (!e.ok()) return e.status();
    if (!e->has_value()) break;  // no round left to measure these switches
    o.probes.push_back(**e);
    const BudgetAction a = NextBudgetAction(**e, budget_pct, still_on);
    // A switch goes off only while a round is left to measure what remains: the overhead the
    // profile reports is always a measurement of the switches in force.
    if (a.kind == BudgetAction::Kind::kDisable && !left()) {
      cut_short = true;
      kept = absl::StrFormat(
          "%s was measured over the budget (lower bound %.1f %% > %.1f %%) but stays on: no round "
          "is left to measure the profiler without it",
          SwitchName(a.which), (*e)->ci_low_pct, budget_pct);
    }
    if (a.kind != BudgetAction::Kind::kDisable || !kept.empty()) {
      o.overhead = **e;
      o.overhead_from_probe = true;
      break;
    }
    o.switches.Set(a.which, false);
    o.auto_disabled.emplace_back(SwitchName(a.which));
    still_on.erase(std::find(still_on.begin(), still_on.end(), a.which));
  }
  if (!o.overhead.has_value()) {
    auto e = measure();
    if (!e.ok()) return e.status();
    if (e->has_value()) o.overhead = **e;
  }
  if (cut_short) {
    o.probe_limit_note = absl::StrCat(
        "the probes stopped at this job's allowance of ", o.probe_round_limit, " rounds (",
        o.probe_round_limit * kProbeRoundWindows,
        " windows: probing takes at most as many steps as the job's own); ",
        kept.empty() ? "the last probe judged on the rounds it had" : kept,
        ". More --steps (or --runs), or explicit switches, give a fully probed choice");
  }
  return o;
}

BudgetOutcome SkipOverheadBudget(const ProfilerSwitches& requested, std::string why) {
  BudgetOutcome o = Start(requested);
  if (!o.auto_switches.empty()) o.probe_note = std::move(why);
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
  w.Field("with_stack", false)
      .Field("with_modules", with_modules)
      .Key("auto_switches")
      .BeginArray();
  for (const std::string& a : o.auto_switches) w.String(a);
  w.EndArray().Key("auto_disabled").BeginArray();
  for (const std::string& a : o.auto_disabled) w.String(a);
  w.EndArray()
      .Field("overhead_budget_pct", budget_pct)
      .Field("probe_iterations", o.probes.empty() ? int64_t{0} : kProbeRoundWindows)
      .Field("probe_rounds", o.probe_rounds)
      .Field("probe_windows", o.probe_rounds * kProbeRoundWindows)
      .Field("probe_round_limit", o.probe_round_limit > 0
                                      ? std::optional<int64_t>(o.probe_round_limit)
                                      : std::nullopt);
  if (!o.probe_limit_note.empty()) w.Field("probe_limit_note", o.probe_limit_note);
  w.Key("probe_pairs").BeginArray();
  for (const OverheadEstimate& e : o.probes) w.Int(e.pairs);
  w.EndArray();
  auto series = [&](const char* key, double OverheadEstimate::*field) {
    w.Key(key).BeginArray();
    for (const OverheadEstimate& e : o.probes) w.Double(e.*field);
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
      .Field("overhead_source", o.overhead_from_probe ? "probe" : "measured");
}

}  // namespace libreyolo::engine
