#include "server/engine/overhead_budget.h"

#include <algorithm>
#include <cmath>
#include <utility>

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
  std::vector<CostlySwitch> out;
  for (CostlySwitch s : kDisableOrder) {
    if (!Requested(requested, s).has_value()) out.push_back(s);
  }
  return out;
}

double OverheadPct(double probe_median_ms, double baseline_median_ms) {
  if (!(baseline_median_ms > 0)) return 0.0;
  return 100.0 * (probe_median_ms - baseline_median_ms) / baseline_median_ms;
}

BudgetAction NextBudgetAction(double overhead_pct, double budget_pct,
                              const std::vector<CostlySwitch>& auto_still_on) {
  BudgetAction a;
  if (overhead_pct <= budget_pct) return a;  // kAccept
  if (auto_still_on.empty()) {
    a.kind = BudgetAction::Kind::kExhausted;
    return a;
  }
  a.kind = BudgetAction::Kind::kDisable;
  a.which = auto_still_on.front();
  return a;
}

absl::StatusOr<BudgetOutcome> ApplyOverheadBudget(const ProfilerSwitches& requested,
                                                  double budget_pct, int64_t probe_iterations,
                                                  const ProbeFn& probe) {
  BudgetOutcome o = Start(requested);
  std::vector<CostlySwitch> still_on = AutoSwitches(requested);
  if (still_on.empty()) return o;
  o.probe_iterations = probe_iterations;
  // At most one probe per auto switch: each over-budget probe turns one off, and the
  // configuration left when the last goes off is not probed.
  while (true) {
    auto result = probe(o.switches);
    if (!result.ok()) return result.status();
    const double pct = OverheadPct(result->profiled_ms, result->baseline_ms);
    o.probe_median_ms.push_back(result->profiled_ms);
    o.probe_baseline_ms.push_back(result->baseline_ms);
    o.probe_overhead_pct.push_back(pct);
    const BudgetAction a = NextBudgetAction(pct, budget_pct, still_on);
    if (a.kind != BudgetAction::Kind::kDisable) break;
    o.switches.Set(a.which, false);
    o.auto_disabled.emplace_back(SwitchName(a.which));
    still_on.erase(std::find(still_on.begin(), still_on.end(), a.which));
    if (still_on.empty()) break;
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

void WriteSwitchFields(JsonWriter& w, const BudgetOutcome& o, bool with_modules,
                       double budget_pct) {
  // LibTorch computes FLOPs from the recorded input shapes: with_flops without record_shapes
  // records no FLOP, so the record says what the profile holds (false) and why.
  const bool flops_recorded = o.switches.with_flops && o.switches.record_shapes;
  w.Field("record_shapes", o.switches.record_shapes)
      .Field("profile_memory", o.switches.profile_memory)
      .Field("with_flops", flops_recorded);
  if (o.switches.with_flops && !flops_recorded) {
    w.Field("with_flops_note",
            "with_flops was on but record_shapes was off: FLOPs are computed from the recorded "
            "input shapes, so none were recorded");
  }
  w.Field("with_stack", false)
      .Field("with_modules", with_modules)
      .Key("auto_switches")
      .BeginArray();
  for (const std::string& s : o.auto_switches) w.String(s);
  w.EndArray().Key("auto_disabled").BeginArray();
  for (const std::string& s : o.auto_disabled) w.String(s);
  w.EndArray()
      .Field("overhead_budget_pct", budget_pct)
      .Field("probe_iterations", o.probe_iterations)
      .Key("probe_overhead_pct")
      .BeginArray();
  for (double v : o.probe_overhead_pct) w.Double(v);
  w.EndArray().Key("probe_median_ms").BeginArray();
  for (double v : o.probe_median_ms) w.Double(v);
  w.EndArray().Key("probe_baseline_ms").BeginArray();
  for (double v : o.probe_baseline_ms) w.Double(v);
  w.EndArray();
  if (!o.probe_note.empty()) w.Field("probe_note", o.probe_note);
}

}  // namespace libreyolo::engine
