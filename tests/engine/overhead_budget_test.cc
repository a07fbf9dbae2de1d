// The profiler switches' fixed defaults and the probes that measure them
// (server/engine/job/overhead_budget.h), with scripted probe results: no profiler, no timing.
#include "server/engine/job/overhead_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace libreyolo::engine {
namespace {

// Windows of a probe whose every pair reads `pct` over a `baseline` ms unprofiled window.
ProbeTimings Flat(double pct, double baseline = 100.0, int64_t pairs = kProbePairs) {
  ProbeTimings t;
  t.unprofiled_ms.assign(static_cast<size_t>(pairs + 1), baseline);
  t.profiled_ms.assign(static_cast<size_t>(pairs), baseline * (1 + pct / 100.0));
  return t;
}

ProfilerSwitches Unset() { return ProfilerSwitches{}; }

// A machine whose profiler costs `bare` % plus each switch's own %, and records what it was
// asked to probe.
struct SwitchCostProbe {
  double bare = 2.0, shapes = 0.0, memory = 0.0, flops = 0.0;
  std::vector<ResolvedSwitches> asked;
  double Pct(const ResolvedSwitches& s) const {
    return bare + (s.record_shapes ? shapes : 0) + (s.profile_memory ? memory : 0) +
           (s.with_flops && s.record_shapes ? flops : 0);
  }
  ProbeFn Fn() {
    return [this](const ResolvedSwitches& s) -> absl::StatusOr<ProbeTimings> {
      asked.push_back(s);
      return Flat(Pct(s));
    };
  }
};

TEST(SwitchDefaults, NamesFlagsAndTheFixedDefaults) {
  ASSERT_EQ(kCostlySwitches.size(), 3u);
  EXPECT_STREQ(SwitchName(kCostlySwitches[0]), "record_shapes");
  EXPECT_STREQ(SwitchName(kCostlySwitches[1]), "profile_memory");
  EXPECT_STREQ(SwitchName(kCostlySwitches[2]), "with_flops");
  EXPECT_STREQ(SwitchOffFlag(CostlySwitch::kRecordShapes), "--no-record-shapes");
  EXPECT_STREQ(SwitchOffFlag(CostlySwitch::kProfileMemory), "--no-profile-memory");
  EXPECT_STREQ(SwitchOffFlag(CostlySwitch::kWithFlops), "--no-with-flops");
  // The README's `ops --group-by-input-shape` needs the shapes: on by default. FLOPs cost more
  // than the default budget on the benchmark (overhead_budget.h): off.
  EXPECT_TRUE(kDefaultRecordShapes);
  EXPECT_TRUE(kDefaultProfileMemory);
  EXPECT_FALSE(kDefaultWithFlops);
  EXPECT_GE(kProbePairs, 7);  // issue 11/13: at least 7 interleaved pairs
}

TEST(SwitchDefaults, UnsetTakesTheDefaultAndAFlagIsObeyed) {
  const ResolvedSwitches d = ResolveSwitches(Unset());
  for (CostlySwitch c : kCostlySwitches) {
    EXPECT_EQ(d.Get(c), DefaultSwitch(c)) << SwitchName(c);
    EXPECT_STREQ(SwitchSource(Unset(), c), "default");
  }
  ProfilerSwitches given;
  given.record_shapes = !kDefaultRecordShapes;
  given.with_flops = true;
  const ResolvedSwitches r = ResolveSwitches(given);
  EXPECT_EQ(r.record_shapes, !kDefaultRecordShapes);
  EXPECT_TRUE(r.with_flops);
  EXPECT_EQ(r.profile_memory, kDefaultProfileMemory);
  EXPECT_STREQ(SwitchSource(given, CostlySwitch::kRecordShapes), "flag");
  EXPECT_STREQ(SwitchSource(given, CostlySwitch::kWithFlops), "flag");
  EXPECT_STREQ(SwitchSource(given, CostlySwitch::kProfileMemory), "default");
}

TEST(OverheadBudget, OverheadPct) {
  EXPECT_DOUBLE_EQ(OverheadPct(103, 100), 3.0);
  EXPECT_DOUBLE_EQ(OverheadPct(90, 100), -10.0);
  EXPECT_DOUBLE_EQ(OverheadPct(5, 0), 0.0);  // no baseline: nothing to compare with
}

TEST(OverheadBudget, SignTestRanksAndCoverage) {
  double coverage = 0;
  EXPECT_EQ(SignTestRank(7, 0.95, &coverage), 1);  // [min, max]: 1 - 2/128
  EXPECT_NEAR(coverage, 1 - 2.0 / 128, 1e-12);
  EXPECT_EQ(SignTestRank(9, 0.95, &coverage), 2);  // 1 - 2 * 10/512
  EXPECT_NEAR(coverage, 1 - 20.0 / 512, 1e-12);
  EXPECT_EQ(SignTestRank(12, 0.95, &coverage), 3);  // 1 - 2 * (1 + 12 + 66)/4096
  EXPECT_NEAR(coverage, 1 - 2 * 79.0 / 4096, 1e-12);
  EXPECT_EQ(SignTestRank(20, 0.95, &coverage), 6);  // the textbook table: n = 20, rank 6
  EXPECT_GE(coverage, 0.95);
  EXPECT_EQ(SignTestRank(3, 0.95, &coverage), 1);  // too few: the widest, and says how wide
  EXPECT_NEAR(coverage, 0.75, 1e-12);
}

TEST(OverheadBudget, EstimatePairsEachProfiledWindowWithTheTwoAroundIt) {
  // Unprofiled windows drift up linearly (the machine gets busier); every profiled window is
  // 5 % over the mean of its neighbours. A block-vs-block comparison would read the drift.
  ProbeTimings t;
  for (int i = 0; i <= 9; ++i) t.unprofiled_ms.push_back(100.0 + 10.0 * i);
  for (int i = 0; i < 9; ++i) t.profiled_ms.push_back(1.05 * (105.0 + 10.0 * i));
  auto e = EstimateOverhead({t});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->pairs, 9);
  EXPECT_NEAR(e->median_pct, 5.0, 1e-9);
  EXPECT_NEAR(e->ci_low_pct, 5.0, 1e-9);
  EXPECT_NEAR(e->ci_high_pct, 5.0, 1e-9);
  EXPECT_NEAR(e->ci_level, 1 - 20.0 / 512, 1e-12);
  EXPECT_DOUBLE_EQ(e->unprofiled_median_ms, 145.0);
}

TEST(OverheadBudget, TheIntervalDropsOneStragglerOnEachSide) {
  ProbeTimings t = Flat(0.0, 100.0, 9);
  // Differences: -40, +80 (stragglers) and seven pairs at 1, 2, ... 7 %.
  t.profiled_ms = {60, 180, 101, 102, 103, 104, 105, 106, 107};
  auto e = EstimateOverhead({t});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NEAR(e->median_pct, 4.0, 1e-9);
  EXPECT_NEAR(e->ci_low_pct, 1.0, 1e-9);  // rank 2 of 9, not the -40 % straggler
  EXPECT_NEAR(e->ci_high_pct, 7.0, 1e-9);
}

TEST(OverheadBudget, RoundsArePooledPairByPair) {
  // Two rounds: each pairs within itself (the first round's last unprofiled window is not the
  // second's first); 16 differences, rank 4 of 16.
  ProbeTimings a = Flat(2.0, 100.0, 8), b = Flat(6.0, 200.0, 8);
  auto e = EstimateOverhead({a, b});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->pairs, 16);
  EXPECT_NEAR(e->median_pct, 4.0, 1e-9);
  EXPECT_NEAR(e->ci_low_pct, 2.0, 1e-9);
  EXPECT_NEAR(e->ci_high_pct, 6.0, 1e-9);
  double coverage = 0;
  EXPECT_EQ(SignTestRank(16, 0.95, &coverage), 4);
  EXPECT_NEAR(e->ci_level, coverage, 1e-12);
}

TEST(OverheadBudget, MalformedProbesAreErrors) {
  ProbeTimings t = Flat(1.0);
  t.unprofiled_ms.pop_back();
  EXPECT_TRUE(absl::IsInvalidArgument(EstimateOverhead({t}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EstimateOverhead({ProbeTimings{{1.0}, {}}}).status()));
  t = Flat(1.0);
  t.profiled_ms[3] = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EstimateOverhead({t}).status()));
}

TEST(SwitchCosts, MannWhitneyRanksAndCoverage) {
  double coverage = 0;
  // The textbook table: n = m = 8, two-sided 5 %: U <= 13 rejects, so the interval is
  // [D_(14), D_(51)] of the 64 differences.
  EXPECT_EQ(MannWhitneyRank(8, 8, 0.95, &coverage), 14);
  EXPECT_GE(coverage, 0.95);
  EXPECT_LT(coverage, 0.96);
  // n = m = 3: P(U = 0) = 1/20 > 2.5 %: the widest interval, and how wide.
  EXPECT_EQ(MannWhitneyRank(3, 3, 0.95, &coverage), 1);
  EXPECT_NEAR(coverage, 0.9, 1e-12);
}

TEST(SwitchCosts, TheShiftIsHodgesLehmannWithItsInterval) {
  // With: 10, 11, ..., 17; without: 2, 3, ..., 9: every difference 1..15, the shift 8.
  std::vector<double> with, without;
  for (int i = 0; i < 8; ++i) {
    with.push_back(10.0 + i);
    without.push_back(2.0 + i);
  }
  auto e = EstimateShift(with, without);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->n, 8);
  EXPECT_EQ(e->m, 8);
  EXPECT_NEAR(e->shift_pct, 8.0, 1e-12);
  EXPECT_LT(e->ci_low_pct, 8.0);
  EXPECT_GT(e->ci_low_pct, 0.0);  // plainly apart: the interval excludes no cost
  EXPECT_GT(e->ci_high_pct, 8.0);
  EXPECT_TRUE(absl::IsInvalidArgument(EstimateShift({}, without).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EstimateShift({NAN}, without).status()));
}

TEST(SwitchCosts, RoundsPerProbeShareTheJobsOwnWindows) {
  EXPECT_EQ(RoundsPerProbe(0, 4), 1);        // at least one round a probe
  EXPECT_EQ(RoundsPerProbe(8, 4), 1);        // `run --steps 3 --warmup 1`: one each
  EXPECT_EQ(RoundsPerProbe(17 * 8, 4), 2);   // a default infer: 8 rounds' worth, 2 each
  EXPECT_EQ(RoundsPerProbe(17 * 100, 4), kMaxProbeRounds);
  EXPECT_EQ(RoundsPerProbe(17 * 8, 1), kMaxProbeRounds);
  EXPECT_EQ(ProbeCount(Unset()),
            1 + int64_t{kDefaultRecordShapes} + kDefaultProfileMemory + kDefaultWithFlops);
  ProfilerSwitches off;
  off.record_shapes = off.profile_memory = off.with_flops = false;
  EXPECT_EQ(ProbeCount(off), 1);
}

// Issue 36, section 4: a busy box turned record_shapes off in 4 of 9 identical default infer
// runs. However costly the probes read, no switch changes: each one's cost is measured and the
// one over the budget is named.
TEST(SwitchCosts, OverBudgetNothingTurnsOffAndTheCostIsNamed) {
  SwitchCostProbe machine;
  machine.bare = 40.0;   // a loaded box reads the profiler at +40 %
  machine.shapes = 10.0;
  machine.memory = 1.0;
  machine.flops = 0.5;
  ProfilerSwitches all_on;
  all_on.record_shapes = all_on.profile_memory = all_on.with_flops = true;
  auto o = ProbeProfilerCost(all_on, 3.0, machine.Fn());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->switches.record_shapes && o->switches.profile_memory && o->switches.with_flops);
  // Without each switch, then the switches in force (last: next to the recorded window).
  ASSERT_EQ(machine.asked.size(), 4u);
  EXPECT_FALSE(machine.asked[0].record_shapes);
  EXPECT_FALSE(machine.asked[1].profile_memory);
  EXPECT_FALSE(machine.asked[2].with_flops);
  EXPECT_TRUE(machine.asked[3].record_shapes && machine.asked[3].profile_memory &&
              machine.asked[3].with_flops);
  ASSERT_TRUE(o->overhead.has_value());
  EXPECT_NEAR(o->overhead->median_pct, 51.5, 1e-9);
  ASSERT_EQ(o->costs.size(), 3u);
  // record_shapes costs its own 10 % and the FLOPs counted from the shapes.
  EXPECT_EQ(o->costs[0].which, CostlySwitch::kRecordShapes);
  EXPECT_NEAR(o->costs[0].cost.shift_pct, 10.5, 1e-9);
  EXPECT_TRUE(o->costs[0].over_budget);
  EXPECT_NEAR(o->costs[1].cost.shift_pct, 1.0, 1e-9);
  EXPECT_FALSE(o->costs[1].over_budget);
  EXPECT_NEAR(o->costs[2].cost.shift_pct, 0.5, 1e-9);
  EXPECT_FALSE(o->costs[2].over_budget);
  EXPECT_EQ(o->probe_rounds, 4);
}

TEST(SwitchCosts, ASwitchThatIsOffIsNotProbedAndTheRoundsAreTheJobs) {
  SwitchCostProbe machine;
  ProfilerSwitches given;
  given.profile_memory = false;
  given.with_flops = false;
  given.record_shapes = true;
  auto o = ProbeProfilerCost(given, 3.0, machine.Fn(), /*rounds_per_probe=*/2);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->costs.size(), 1u);
  EXPECT_EQ(o->costs[0].which, CostlySwitch::kRecordShapes);
  EXPECT_EQ(o->probe_rounds, 4);  // two probes of two rounds
  EXPECT_EQ(o->overhead->pairs, 2 * kProbePairs);
  EXPECT_FALSE(o->switches.profile_memory);
}

TEST(SwitchCosts, AProbeErrorIsReturned) {
  auto failing = [](const ResolvedSwitches&) -> absl::StatusOr<ProbeTimings> {
    return absl::CancelledError("cancelled while probing");
  };
  EXPECT_TRUE(absl::IsCancelled(ProbeProfilerCost(Unset(), 3.0, failing).status()));
}

TEST(SwitchCosts, SkippingKeepsTheSwitchesAndSaysWhy) {
  BudgetOutcome o = SkipProbe(Unset(), "--no-trace: nothing is profiled");
  EXPECT_EQ(o.switches.record_shapes, kDefaultRecordShapes);
  EXPECT_EQ(o.switches.profile_memory, kDefaultProfileMemory);
  EXPECT_EQ(o.switches.with_flops, kDefaultWithFlops);
  EXPECT_EQ(o.probe_note, "--no-trace: nothing is profiled");
  EXPECT_FALSE(o.overhead.has_value());
  EXPECT_TRUE(o.costs.empty());
}

// A seeded model of a loaded machine: every iteration's time is the job's own times a load
// factor that wanders (a random walk, +-3 % a step) and a noise factor (sd 8 %), and one
// iteration in 8 is a straggler (+20..70 %).
class LoadedMachine {
 public:
  explicit LoadedMachine(uint64_t seed) : rng_(seed) {}
  double Iteration(double ms) {
    load_ *= 1.0 + 0.03 * (2 * Uniform() - 1);
    load_ = std::clamp(load_, 0.7, 1.6);
    double f = load_ * (1.0 + 0.08 * Normal());
    if (Uniform() < 0.125) f *= 1.2 + 0.5 * Uniform();
    return ms * std::max(f, 0.2);
  }

 private:
  double Uniform() { return (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0; }
  double Normal() {  // Box-Muller: the same numbers with every standard library
    const double u = Uniform(), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  std::mt19937_64 rng_;
  double load_ = 1.0;
};


// One simulated default job on the loaded machine: record_shapes truly costs `shapes_pct`.
absl::StatusOr<BudgetOutcome> LoadedJob(double shapes_pct, uint64_t seed) {
  LoadedMachine m(seed);
  auto probe = [&](const ResolvedSwitches& s) -> absl::StatusOr<ProbeTimings> {
    const double profiled = 100.0 * (1 + (5.0 + (s.record_shapes ? shapes_pct : 0.0)) / 100);
    ProbeTimings t;
    for (int64_t i = 0; i < kProbePairs; ++i) {
      t.unprofiled_ms.push_back(m.Iteration(100.0));
      t.profiled_ms.push_back(m.Iteration(profiled));
    }
    t.unprofiled_ms.push_back(m.Iteration(100.0));
    return t;
  };
  return ProbeProfilerCost(Unset(), 3.0, probe, 2);
}

// Issue 36, section 4: identical jobs record identical switches, whatever the load reads;
// the cost the probes report still finds a switch that plainly costs more than the budget,
// and its interval holds the true cost nearly always.
TEST(SwitchCosts, IdenticalJobsUnderLoadRecordIdenticalSwitches) {
  constexpr int kRuns = 200;
  for (double shapes_pct : {1.0, 30.0}) {
    int flagged = 0, covered = 0;
    for (int r = 0; r < kRuns; ++r) {
      auto o = LoadedJob(shapes_pct, 7000 + static_cast<uint64_t>(r));
      ASSERT_TRUE(o.ok()) << o.status();
      const ResolvedSwitches d = ResolveSwitches(Unset());
      ASSERT_EQ(o->switches.record_shapes, d.record_shapes);
      ASSERT_EQ(o->switches.profile_memory, d.profile_memory);
      ASSERT_EQ(o->switches.with_flops, d.with_flops);
      ASSERT_FALSE(o->costs.empty());
      ASSERT_EQ(o->costs[0].which, CostlySwitch::kRecordShapes);
      const ShiftEstimate& c = o->costs[0].cost;
      flagged += o->costs[0].over_budget;
      // The true shift in the paired differences is shapes_pct (over the same baseline).
      covered += c.ci_low_pct <= shapes_pct && shapes_pct <= c.ci_high_pct;
    }
    std::printf("record_shapes at %.0f %%: named over budget in %d of %d jobs, interval held "
                "it in %d\n", shapes_pct, flagged, kRuns, covered);
    EXPECT_GE(covered, kRuns * 85 / 100) << shapes_pct;
    if (shapes_pct < 3.0) {
      EXPECT_LE(flagged, kRuns / 20) << "named over budget on noise";
    } else {
      EXPECT_GE(flagged, kRuns * 85 / 100) << "a plain cost not named";
    }
  }
}

TEST(OverheadBudget, ValidatesTheBudget) {
  EXPECT_TRUE(ValidateOverheadBudget(0).ok());
  EXPECT_TRUE(ValidateOverheadBudget(3).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateOverheadBudget(-1)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateOverheadBudget(1e9)));
}

TEST(OverheadBudget, MedianMs) {
  EXPECT_DOUBLE_EQ(MedianMs({}), 0.0);
  EXPECT_DOUBLE_EQ(MedianMs({5}), 5.0);
  EXPECT_DOUBLE_EQ(MedianMs({9, 1, 5}), 5.0);
  EXPECT_DOUBLE_EQ(MedianMs({4, 1, 3, 100}), 3.5);
}

RecordedKinds Everything() { return RecordedKinds{true, true, true, true}; }

TEST(SwitchCosts, WritesTheProfilerFields) {
  SwitchCostProbe machine;
  machine.bare = 20.0;
  machine.shapes = 10.0;
  machine.memory = 1.0;
  ProfilerSwitches given;
  given.with_flops = false;  // a flag: recorded as one
  auto o = ProbeProfilerCost(given, 3.0, machine.Fn());
  ASSERT_TRUE(o.ok());
  JsonWriter w(/*pretty=*/false);
  w.BeginObject();
  WriteSwitchFields(w, *o, Everything(), /*with_modules=*/true, 3.0);
  WriteOverheadFields(w, *o);
  w.EndObject();
  const std::string json = w.Take();
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(json.c_str()).HasParseError()) << json;
  EXPECT_EQ(d["record_shapes"].GetBool(), kDefaultRecordShapes);
  EXPECT_EQ(d["profile_memory"].GetBool(), kDefaultProfileMemory);
  EXPECT_FALSE(d["with_flops"].GetBool());
  EXPECT_FALSE(d["with_stack"].GetBool());  // never: LibTorch in C++ records no stacks
  EXPECT_TRUE(d["with_modules"].GetBool());
  // What was recorded and why.
  EXPECT_STREQ(d["switch_source"]["record_shapes"].GetString(), "default");
  EXPECT_STREQ(d["switch_source"]["profile_memory"].GetString(), "default");
  EXPECT_STREQ(d["switch_source"]["with_flops"].GetString(), "flag");
  EXPECT_FALSE(d.HasMember("auto_switches"));
  EXPECT_FALSE(d.HasMember("auto_disabled"));
  EXPECT_FALSE(d.HasMember("switch_decision"));
  EXPECT_DOUBLE_EQ(d["overhead_budget_pct"].GetDouble(), 3.0);
  // Each switch on, its cost with its interval, whether it is over the budget and its flag.
  ASSERT_TRUE(d["switch_costs"].IsObject()) << json;
  const auto& shapes = d["switch_costs"]["record_shapes"];
  EXPECT_NEAR(shapes["cost_pct"].GetDouble(), 10.0, 1e-9);
  ASSERT_EQ(shapes["ci_pct"].Size(), 2u);
  EXPECT_NEAR(shapes["ci_pct"][0].GetDouble(), 10.0, 1e-9);
  EXPECT_TRUE(shapes["over_budget"].GetBool());
  EXPECT_STREQ(shapes["off_flag"].GetString(), "--no-record-shapes");
  EXPECT_EQ(shapes["pairs"].GetInt(), kProbePairs);
  EXPECT_GT(shapes["ci_level"].GetDouble(), 0.95);
  EXPECT_FALSE(d["switch_costs"]["profile_memory"]["over_budget"].GetBool());
  EXPECT_FALSE(d["switch_costs"].HasMember("with_flops"));  // off: nothing to save
  // The probes as they ran.
  EXPECT_EQ(d["probe_iterations"].GetInt(), 2 * kProbePairs + 1);
  EXPECT_EQ(d["probe_rounds"].GetInt(), 3);
  EXPECT_EQ(d["probe_windows"].GetInt(), 3 * (2 * kProbePairs + 1));
  EXPECT_EQ(d["probe_rounds_each"].GetInt(), 1);
  ASSERT_EQ(d["probe_configs"].Size(), 3u);
  EXPECT_STREQ(d["probe_configs"][0].GetString(), "without record_shapes");
  EXPECT_STREQ(d["probe_configs"][2].GetString(), "in force");
  ASSERT_EQ(d["probe_overhead_pct"].Size(), 3u);
  EXPECT_NEAR(d["probe_overhead_pct"][2].GetDouble(), 31.0, 1e-9);
  EXPECT_NEAR(d["probe_ci_level"][0].GetDouble(), 1 - 2.0 / 256, 1e-12);  // 8 pairs: [min, max]
  EXPECT_DOUBLE_EQ(d["probe_baseline_ms"][2].GetDouble(), 100.0);
  EXPECT_FALSE(d.HasMember("probe_note"));
  EXPECT_FALSE(d.HasMember("switch_notes"));
  // The profile's overhead is the switches in force's.
  EXPECT_NEAR(d["overhead_pct"].GetDouble(), 31.0, 1e-9);
  EXPECT_EQ(d["overhead_pairs"].GetInt(), kProbePairs);
  EXPECT_STREQ(d["overhead_source"].GetString(), "probe");
}

TEST(OverheadBudget, ASwitchIsRecordedOnOnlyWhenTheTraceHoldsItsData) {
  ProfilerSwitches all_on;
  all_on.record_shapes = all_on.profile_memory = all_on.with_flops = true;
  BudgetOutcome o = SkipProbe(all_on, "--no-trace: nothing is profiled");
  auto record = [&](const RecordedKinds& k) {
    JsonWriter w(/*pretty=*/false);
    w.BeginObject();
    WriteSwitchFields(w, o, k, false, 3.0);
    WriteOverheadFields(w, o);
    w.EndObject();
    rapidjson::Document d;
    d.Parse(w.Take().c_str());
    return d;
  };
  // No trace: nothing was recorded, so no switch says on (issue 11 item 6's with_stack case).
  rapidjson::Document d = record(RecordedKinds{});
  EXPECT_FALSE(d["record_shapes"].GetBool());
  EXPECT_FALSE(d["profile_memory"].GetBool());
  EXPECT_FALSE(d["with_flops"].GetBool());
  ASSERT_TRUE(d.HasMember("switch_notes"));
  EXPECT_NE(std::string(d["switch_notes"][0].GetString()).find("--no-trace"), std::string::npos);
  EXPECT_TRUE(d["overhead_pct"].IsNull());
  // A trace with shapes but no FLOP and no memory event: only record_shapes says on.
  d = record(RecordedKinds{true, true, false, false});
  EXPECT_TRUE(d["record_shapes"].GetBool());
  EXPECT_FALSE(d["profile_memory"].GetBool());
  EXPECT_FALSE(d["with_flops"].GetBool());
  ASSERT_EQ(d["switch_notes"].Size(), 2u);
  // Data of a switch that was off does not turn it on.
  o.switches.record_shapes = false;
  d = record(RecordedKinds{true, true, true, true});
  EXPECT_FALSE(d["record_shapes"].GetBool());
}

}  // namespace
}  // namespace libreyolo::engine
