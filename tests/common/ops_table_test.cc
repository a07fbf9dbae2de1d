// docs/metrics.md "Operator table (ops)" and "Memory" (peak_vram_mb).
#include <gtest/gtest.h>

#include <string>

#include "common/readers/ops_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

const OpRow* FindOp(const std::vector<OpRow>& rows, const std::string& op,
                    const std::string& shapes = "") {
  for (const OpRow& r : rows) {
    if (r.op == op && r.input_shapes == shapes) return &r;
  }
  return nullptr;
}

// Two steps of 1000 us on thread 1/1:
// step 1  aten::linear [100, 600) dims [[2,3],[3,4]]
//           aten::t [120, 150)
//           aten::addmm [200, 500) flops 1e9, dims [[2,3]]
//             [memory] 210 CPU +1000 B
//             cudaLaunchKernel [250, 300) corr 1 -> gemm_k [400, 600) on the GPU
//             [memory] 260 device +4096 B (inside the launch call: belongs to aten::addmm)
//           [memory] 550 CPU +500 B, 560 CPU -200 B (aten::linear itself)
//         aten::relu [700, 800) dims [[2,4]] -> cudaLaunchKernel [720, 740) corr 2 -> relu_k 40
// step 2  aten::linear [1100, 1500) dims [[2,3],[3,4]]
//           aten::addmm [1150, 1350) flops 1e9, dims [[4,3]]
//             cudaLaunchKernel [1160, 1180) corr 3 -> gemm_k [1200, 1300)
//         [memory] 1600 device +8192 B, Total Allocated 30e6, Total Reserved 40e6 (no op)
//         [memory] 1650 device, Total Allocated 12e6, Total Reserved 45e6 (no op)
std::string OpsTrace() {
  const std::string dims_linear = R"("Input Dims": [[2, 3], [3, 4]])";
  return Trace({
      Step(1, 0, 1000), Step(2, 1000, 1000),
      Op("aten::linear", 100, 500, kMain, dims_linear),
      Op("aten::t", 120, 30),
      Op("aten::addmm", 200, 300, kMain, R"("flops": 1000000000, "Input Dims": [[2, 3]])"),
      Mem(210, 0, 1000),
      Launch(250, 50, 1),
      Mem(260, 1, 4096, kMain, 10000000, 20000000),
      Kernel("gemm_k", 400, 200, 1),
      Mem(550, 0, 500),
      Mem(560, 0, -200),
      Op("aten::relu", 700, 100, kMain, R"("Input Dims": [[2, 4]])"),
      Launch(720, 20, 2),
      Kernel("relu_k", 750, 40, 2),
      Op("aten::linear", 1100, 400, kMain, dims_linear),
      Op("aten::addmm", 1150, 200, kMain, R"("flops": 1000000000, "Input Dims": [[4, 3]])"),
      Launch(1160, 20, 3),
      Kernel("gemm_k", 1200, 100, 3),
      Mem(1600, 1, 8192, kMain, 30000000, 40000000),
      Mem(1650, 1, -8192, kMain, 12000000, 45000000),
  });
}

TEST(OpsTable, CountTotalAndSelfCpuTimeWithNesting) {
  const Profile p = Analyse(OpsTrace());
  ASSERT_EQ(p.ops.size(), 4u);
  // Default order: CPU total descending.
  EXPECT_EQ(p.ops[0].op, "aten::linear");
  EXPECT_EQ(p.ops[1].op, "aten::addmm");
  EXPECT_EQ(p.ops[2].op, "aten::relu");
  EXPECT_EQ(p.ops[3].op, "aten::t");
  // aten::linear: 2 calls; total 500 + 400 = 900 us; self (500-30-300) + (400-200) = 370 us.
  const OpRow& lin = p.ops[0];
  EXPECT_CLOSE(lin.count_per_step, 1.0);
  EXPECT_CLOSE(lin.ms_per_step, 0.45);
  EXPECT_OPT_CLOSE(lin.self_cpu_ms_per_step, 0.185);
  // aten::addmm: total 300 + 200 = 500 us; self (300-50) + (200-20) = 430 us.
  const OpRow& mm = p.ops[1];
  EXPECT_CLOSE(mm.count_per_step, 1.0);
  EXPECT_CLOSE(mm.ms_per_step, 0.25);
  EXPECT_OPT_CLOSE(mm.self_cpu_ms_per_step, 0.215);
  // aten::relu: 100 us, self 100 - 20 = 80 us; aten::t: 30 us, self 30 us; 1 call in 2 steps:
  // counts per step are integers and a row that occurred shows at least 1 (the Python tool's).
  EXPECT_CLOSE(p.ops[2].count_per_step, 1.0);
  EXPECT_CLOSE(p.ops[2].ms_per_step, 0.05);
  EXPECT_OPT_CLOSE(p.ops[2].self_cpu_ms_per_step, 0.04);
  EXPECT_CLOSE(p.ops[3].count_per_step, 1.0);
  EXPECT_OPT_CLOSE(p.ops[3].self_cpu_ms_per_step, 0.015);
  // All self CPU: 370 + 430 + 80 + 30 = 910 us -> 0.455 ms per step.
  EXPECT_OPT_CLOSE(p.self_cpu_total_ms_per_step, 0.455);
  // pct_of_cpu_ops is the Python tool's: CPU total over the summed totals 900 + 500 + 100 + 30.
  EXPECT_OPT_CLOSE(lin.pct_of_cpu_ops, 100.0 * 900 / 1530);
  EXPECT_OPT_CLOSE(mm.pct_of_cpu_ops, 100.0 * 500 / 1530);
  EXPECT_OPT_CLOSE(p.ops[3].pct_of_cpu_ops, 100.0 * 30 / 1530);
  EXPECT_OPT_CLOSE(p.ops_per_step, 3.0);  // 6 CPU ops / 2 steps
}

TEST(OpsTable, MemoryInstantsSelfAndInclusiveCpuAndDevice) {
  const Profile p = Analyse(OpsTrace());
  const OpRow* mm = FindOp(p.ops, "aten::addmm");
  const OpRow* lin = FindOp(p.ops, "aten::linear");
  const OpRow* relu = FindOp(p.ops, "aten::relu");
  ASSERT_TRUE(mm && lin && relu);
  // aten::addmm: CPU 1000 B, device 4096 B (the instant inside the launch call), per 2 steps.
  EXPECT_OPT_CLOSE(mm->self_cpu_mem_bytes, 500.0);
  EXPECT_OPT_CLOSE(mm->cpu_mem_bytes, 500.0);
  EXPECT_OPT_CLOSE(mm->self_device_mem_bytes, 2048.0);
  EXPECT_OPT_CLOSE(mm->device_mem_bytes, 2048.0);
  // aten::linear: self CPU 500 - 200 = 300 B; inclusive adds addmm's 1000 -> 1300 B;
  // device: self 0, inclusive 4096 B.
  EXPECT_OPT_CLOSE(lin->self_cpu_mem_bytes, 150.0);
  EXPECT_OPT_CLOSE(lin->cpu_mem_bytes, 650.0);
  EXPECT_OPT_CLOSE(lin->self_device_mem_bytes, 0.0);
  EXPECT_OPT_CLOSE(lin->device_mem_bytes, 2048.0);
  EXPECT_OPT_CLOSE(relu->cpu_mem_bytes, 0.0);
  // Peaks over device instants: Total Allocated 30e6 B, Total Reserved 45e6 B.
  EXPECT_OPT_CLOSE(p.peak_vram_mb, 30.0);
  EXPECT_OPT_CLOSE(p.peak_reserved_mb, 45.0);
}

TEST(OpsTable, DeviceTimeThroughTheLaunchingOp) {
  const Profile p = Analyse(OpsTrace());
  const OpRow* mm = FindOp(p.ops, "aten::addmm");
  const OpRow* lin = FindOp(p.ops, "aten::linear");
  const OpRow* relu = FindOp(p.ops, "aten::relu");
  const OpRow* t = FindOp(p.ops, "aten::t");
  ASSERT_TRUE(mm && lin && relu && t);
  // gemm_k 200 + 100 us launched inside aten::addmm; relu_k 40 us inside aten::relu.
  EXPECT_OPT_CLOSE(mm->self_device_ms_per_step, 0.15);
  EXPECT_OPT_CLOSE(mm->device_ms_per_step, 0.15);
  EXPECT_OPT_CLOSE(lin->self_device_ms_per_step, 0.0);
  EXPECT_OPT_CLOSE(lin->device_ms_per_step, 0.15);  // includes aten::addmm
  EXPECT_OPT_CLOSE(relu->self_device_ms_per_step, 0.02);
  EXPECT_OPT_CLOSE(t->device_ms_per_step, 0.0);
  EXPECT_OPT_CLOSE(p.self_device_total_ms_per_step, 0.17);  // (300 + 40) us / 2
}

TEST(OpsTable, FlopsAndAchievedTflops) {
  const Profile p = Analyse(OpsTrace());
  // 2 x 1e9 FLOP over 2 steps; step 1.0 ms -> 1e9 / 1e-3 s / 1e12 = 1.0 TFLOP/s.
  EXPECT_OPT_CLOSE(p.flops_per_step, 1e9);
  EXPECT_OPT_CLOSE(p.achieved_tflops, 1.0);
  EXPECT_OPT_CLOSE(FindOp(p.ops, "aten::addmm")->flops, 1e9);
  EXPECT_FALSE(FindOp(p.ops, "aten::relu")->flops.has_value());
}

TEST(OpsTable, GroupedByInputShape) {
  const Profile p = Analyse(OpsTrace());
  EXPECT_TRUE(p.has_input_shapes);
  ASSERT_EQ(p.ops_by_input_shape.size(), 5u);
  const OpRow* mm23 = FindOp(p.ops_by_input_shape, "aten::addmm", "[[2, 3]]");
  const OpRow* mm43 = FindOp(p.ops_by_input_shape, "aten::addmm", "[[4, 3]]");
  const OpRow* lin = FindOp(p.ops_by_input_shape, "aten::linear", "[[2, 3], [3, 4]]");
  const OpRow* t = FindOp(p.ops_by_input_shape, "aten::t", "");
  ASSERT_TRUE(mm23 && mm43 && lin && t);
  EXPECT_CLOSE(mm23->count_per_step, 1.0);
  EXPECT_CLOSE(mm23->ms_per_step, 0.15);  // 300 us / 2
  EXPECT_OPT_CLOSE(mm23->self_cpu_ms_per_step, 0.125);
  EXPECT_CLOSE(mm43->ms_per_step, 0.1);   // 200 us / 2
  EXPECT_CLOSE(lin->count_per_step, 1.0);
  EXPECT_CLOSE(lin->ms_per_step, 0.45);

  OpsOptions o;
  o.group_by_input_shape = true;
  auto v = BuildOps(p, o, "t.json");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->rows.size(), 5u);
  EXPECT_EQ(v->rows[0].op, "aten::linear");
}

TEST(OpsTable, GroupByInputShapeWithoutShapesIsAnError) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::add", 10, 100)});
  EXPECT_FALSE(p.has_input_shapes);
  EXPECT_TRUE(p.ops_by_input_shape.empty());
  OpsOptions o;
  o.group_by_input_shape = true;
  auto v = BuildOps(p, o, "t.json");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(OpsTable, SelfTimeIsFlooredAtZero) {
  // The child starts inside the parent but runs past its end: 10 - 20 < 0 -> 0.
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::outer", 100, 10),
                                   Op("aten::inner", 105, 20)});
  const OpRow* outer = FindOp(p.ops, "aten::outer");
  ASSERT_NE(outer, nullptr);
  EXPECT_OPT_CLOSE(outer->self_cpu_ms_per_step, 0.0);
  EXPECT_CLOSE(outer->ms_per_step, 0.01);
  EXPECT_OPT_CLOSE(p.self_cpu_total_ms_per_step, 0.02);  // inner's 20 us only
}

TEST(OpsTable, NestingIsPerThread) {
  // Same times on two threads: neither is the other's parent.
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::a", 100, 500, Thread(1)),
                                   Op("aten::b", 200, 100, Thread(2))});
  EXPECT_OPT_CLOSE(FindOp(p.ops, "aten::a")->self_cpu_ms_per_step, 0.5);
  EXPECT_OPT_CLOSE(FindOp(p.ops, "aten::b")->self_cpu_ms_per_step, 0.1);
}

TEST(OpsTable, NoDeviceMemoryEventsMeansNoPeak) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::add", 10, 100),
                                   Mem(20, 0, 64, kMain, 1000, 2000)});  // CPU instant only
  EXPECT_FALSE(p.peak_vram_mb.has_value());
  EXPECT_FALSE(p.peak_reserved_mb.has_value());
  EXPECT_FALSE(p.flops_per_step.has_value());
  EXPECT_FALSE(p.achieved_tflops.has_value());
}

TEST(OpsView, SortKeysAndUnknownSort) {
  const Profile p = Analyse(OpsTrace());
  OpsOptions o;
  o.sort = "self_cpu_time_total";
  auto v = BuildOps(p, o, "t.json");
  ASSERT_TRUE(v.ok()) << v.status();
  // Self CPU: addmm 0.215 > linear 0.185 > relu 0.04 > t 0.015.
  ASSERT_EQ(v->rows.size(), 4u);
  EXPECT_EQ(v->rows[0].op, "aten::addmm");
  EXPECT_EQ(v->rows[1].op, "aten::linear");
  EXPECT_EQ(v->rows[2].op, "aten::relu");
  EXPECT_EQ(v->rows[3].op, "aten::t");
  EXPECT_TRUE(v->show_memory);
  EXPECT_TRUE(v->show_device);
  EXPECT_TRUE(v->show_flops);

  o.sort = "count";
  o.top = 2;
  v = BuildOps(p, o, "t.json");
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->rows.size(), 2u);
  EXPECT_EQ(v->total_rows, 4u);

  o.sort = "no_such_key";
  EXPECT_EQ(BuildOps(p, o, "t.json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpSortKeys().size(), 11u);
}

}  // namespace
// Issue 22: a job that asked for FLOPs and got none was told it ran without --with-flops. The
// note now says what the profile's own record says.
TEST(OpsTable, NoFlopsSaysWhyInTheProfilesOwnWords) {
  Profile p;
  OpRow r;
  r.op = "aten::conv2d";
  r.count_per_step = 1;
  r.ms_per_step = 1;
  p.ops = {r};
  OpsOptions o;
  o.sort = "flops";
  p.profiler_json = R"({"with_flops": false, "with_flops_note": "with_flops was on but )"
                    R"(record_shapes was off: FLOPs are computed from the recorded input shapes"})";
  auto v = BuildOps(p, o, "x");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NE(v->sort_note.find("record_shapes was off"), std::string::npos) << v->sort_note;
  p.profiler_json = R"({"with_flops": false, "auto_disabled": ["record_shapes", "with_flops"]})";
  v = BuildOps(p, o, "x");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NE(v->sort_note.find("the overhead budget turned with_flops off"), std::string::npos)
      << v->sort_note;
  p.profiler_json.clear();  // a trace: no record
  v = BuildOps(p, o, "x");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NE(v->sort_note.find("recorded without --with-flops"), std::string::npos);
}

}  // namespace libreyolo::testing
