// End to end without a GPU: CUPTI records -> collected events merged into a LibTorch-like CPU
// trace -> profile_trace.json -> the common analyser, which must see the kernels, launches,
// Tensor Core share, cudaMalloc count and peak reserved memory the records describe.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/analysis/trace_analyser.h"
#include "server/engine/collect/cupti_convert.h"
#include "server/engine/collect/trace_export.h"
#include "tests/engine/collect/collected_event_util.h"
#include "tests/engine/collect/cupti_test_records.h"

namespace libreyolo::engine {
namespace {

using testing_records::Api;
using testing_records::Kernel;
using testing_records::Memory;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kCuptiAhead = 5'000 * kMs;  // CUPTI's clock runs 5 s ahead of the CPU's
constexpr uint32_t kCuptiThread = 31337;
constexpr uint64_t kTorchThread = 1;
constexpr uint64_t kMiB = 1 << 20;

// An event on LibTorch's thread.
CollectedEvent Cpu(CollectedKind kind, const std::string& name, int64_t start, int64_t dur) {
  return Ev(kind, name, start, dur, kTorchThread);
}

// Two steps of 10 ms. Each: conv2d launches an sm90 xmma GEMM (3 ms), relu an elementwise
// kernel (1 ms); step 1 reserves 64 MiB, step 2 reserves 32 MiB and frees the 64 MiB.
struct Scenario {
  CollectedTrace cpu;
  CuptiRecords gpu;
};

Scenario TwoSteps() {
  Scenario s;
  uint32_t corr = 100;
  auto cupti = [](int64_t cpu_ns) { return static_cast<uint64_t>(cpu_ns + kCuptiAhead); };
  auto api = [&](uint32_t cbid, int64_t start, int64_t dur) {
    s.gpu.api_calls.push_back(Api(CuptiApiDomain::kRuntime, cbid, cupti(start), cupti(start + dur),
                                  kCuptiThread, ++corr));
    return corr;
  };
  s.gpu.devices.push_back(testing_records::Device());
  for (int step = 0; step < 2; ++step) {
    const int64_t t = step * 10 * kMs;
    s.cpu.events.push_back(Cpu(CollectedKind::kUserAnnotation,
                               "ProfilerStep#" + std::to_string(step + 1), t, 10 * kMs));
    s.cpu.events.push_back(Cpu(CollectedKind::kCpuOp, "aten::conv2d", t + 1 * kMs, 2 * kMs));
    s.cpu.events.push_back(Cpu(CollectedKind::kCpuOp, "aten::relu", t + 4 * kMs, 1 * kMs));
    CollectedEvent tensor = Cpu(CollectedKind::kMemory, "[memory]", t + 1 * kMs + 50'000, 0);
    tensor.device_type = 1;
    tensor.device_index = 0;
    tensor.bytes = 1'000'000;
    s.cpu.events.push_back(tensor);

    // cudaMalloc inside conv2d, with its MEMORY2 record.
    const uint64_t reserve = step == 0 ? 64 * kMiB : 32 * kMiB;
    api(20, t + 1 * kMs + 100'000, 50'000);
    s.gpu.memory.push_back(
        Memory(CuptiMemoryOperation::kAllocation, 3, reserve, cupti(t + 1 * kMs + 120'000)));
    const uint32_t gemm = api(211, t + 1 * kMs + 500'000, 10'000);
    s.gpu.kernels.push_back(Kernel("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64",
                                   cupti(t + 2 * kMs), cupti(t + 5 * kMs), gemm));
    const uint32_t relu = api(211, t + 4 * kMs + 200'000, 10'000);
    s.gpu.kernels.push_back(Kernel("void at::native::vectorized_elementwise_kernel<4>()",
                                   cupti(t + 5 * kMs), cupti(t + 6 * kMs), relu));
    if (step == 1) {
      api(22, t + 4 * kMs + 500'000, 30'000);  // cudaFree inside relu
      s.gpu.memory.push_back(
          Memory(CuptiMemoryOperation::kRelease, 3, 64 * kMiB, cupti(t + 4 * kMs + 510'000)));
    }
  }
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CuptiEndToEnd, AnalyserSeesKernelsLaunchesTensorCoresMallocsAndReserved) {
  Scenario s = TwoSteps();
  CollectedTrace gpu = ConvertCuptiRecords(s.gpu, testing_records::NameTable());
  gpu.clock_samples = {{7 * kMs, 7 * kMs + kCuptiAhead + 40, 7 * kMs + 80}};
  CollectedTrace trace = std::move(s.cpu);
  MergeGpuActivity(trace, std::move(gpu));

  const std::string path =
      (std::filesystem::temp_directory_path() / "libreyolo_cupti_e2e_test.json").string();
  TraceExportOptions o;
  o.pid = 4321;
  o.device_allocated_at_start = 5'000'000;
  o.device_reserved_at_start = 10'000'000;
  ASSERT_TRUE(ExportChromeTrace(trace, path, o).ok());

  auto p = AnalyseTraceFile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p->real_steps, 2);
  EXPECT_NEAR(*p->gpu_kernel_ms_per_step, 4.0, 1e-9);  // (3 + 1) ms per step
  EXPECT_NEAR(*p->kernels_per_step, 2.0, 1e-9);
  EXPECT_NEAR(*p->launches_per_step, 2.0, 1e-9);
  EXPECT_EQ(p->launches_source, "runtime");
  EXPECT_NEAR(*p->tensorcore_pct, 75.0, 1e-9);        // the 3 ms sm90 xmma GEMM of 4 ms
  EXPECT_NEAR(*p->cuda_mallocs_per_step, 1.5, 1e-9);  // (2 cudaMalloc + 1 cudaFree) / 2 steps: a mean
  // Reserved: 10 MB before + 64 MiB + 32 MiB at its highest (before the 64 MiB are freed).
  EXPECT_NEAR(*p->peak_reserved_mb, (10'000'000 + 96.0 * kMiB) / 1e6, 1e-9);
  // Allocated: 5 MB before + the two 1 MB tensors; the reservations are not tensor memory.
  EXPECT_NEAR(*p->peak_vram_mb, 7.0, 1e-9);
  EXPECT_EQ(p->host_overhead_method, "measured");  // kernels tied to their launches
  ASSERT_TRUE(p->device.has_value());
  EXPECT_EQ(p->device->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(*p->device->sm_count, 132);

  // The file itself: Kineto's args on the kernel, launches on LibTorch's thread in CPU time.
  rapidjson::Document doc;
  const std::string text = ReadFile(path);
  doc.Parse(text.c_str());
  ASSERT_FALSE(doc.HasParseError());
  bool saw_kernel = false, saw_launch = false;
  for (const auto& e : doc["traceEvents"].GetArray()) {
    if (!e.HasMember("cat")) continue;
    const std::string cat = e["cat"].GetString();
    if (cat == "kernel" && !saw_kernel) {
      saw_kernel = true;
      EXPECT_DOUBLE_EQ(e["ts"].GetDouble(), 2000.0);  // 2 ms, CPU clock, in us
      const auto& args = e["args"];
      EXPECT_EQ(args["correlation"].GetInt(), 102);
      EXPECT_EQ(args["stream"].GetInt(), 7);
      EXPECT_EQ(args["registers per thread"].GetInt(), 128);
      EXPECT_EQ(args["grid"].Size(), 3u);
    }
    if (cat == "cuda_runtime" && std::string(e["name"].GetString()) == "cudaLaunchKernel" &&
        !saw_launch) {
      saw_launch = true;
      EXPECT_EQ(e["tid"].GetInt(), 1);
      EXPECT_EQ(e["pid"].GetInt(), 4321);
    }
  }
  EXPECT_TRUE(saw_kernel);
  EXPECT_TRUE(saw_launch);
  std::filesystem::remove(path);
}

// Recorded traces follow the window rule of docs/metrics.md: GPU work belongs to the step whose
// CPU call launched it. The GPU here runs 12 ms behind: step 2's kernels start after the last
// step has ended on the CPU, yet their launches (same correlation id) lie inside it.
TEST(CuptiEndToEnd, KernelsBelongToTheStepThatLaunchedThemWhenTheGpuLags) {
  Scenario s = TwoSteps();
  for (auto& k : s.gpu.kernels) {
    k.start_ns += 12 * kMs;
    k.end_ns += 12 * kMs;
  }
  CollectedTrace gpu = ConvertCuptiRecords(s.gpu, testing_records::NameTable());
  gpu.clock_samples = {{7 * kMs, 7 * kMs + kCuptiAhead + 40, 7 * kMs + 80}};
  CollectedTrace trace = std::move(s.cpu);
  MergeGpuActivity(trace, std::move(gpu));
  const std::string path =
      (std::filesystem::temp_directory_path() / "libreyolo_cupti_lag_test.json").string();
  ASSERT_TRUE(ExportChromeTrace(trace, path, {}).ok());
  auto p = AnalyseTraceFile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p->real_steps, 2);
  EXPECT_NEAR(*p->kernels_per_step, 2.0, 1e-9);         // all four, though two start after w1
  EXPECT_NEAR(*p->gpu_kernel_ms_per_step, 4.0, 1e-9);
  EXPECT_EQ(p->parse_stats.unattributed_kernels, 0);
  std::filesystem::remove(path);
}

TEST(CuptiEndToEnd, ReservationsSumPerDeviceAndHonourGivenTotals) {
  CollectedTrace t;
  t.events.push_back(Cpu(CollectedKind::kUserAnnotation, "ProfilerStep#1", 0, 10 * kMs));
  auto mem = [&](int device, int64_t bytes, int64_t at, bool reservation) {
    CollectedEvent e = Cpu(CollectedKind::kMemory, "[memory]", at, 0);
    e.device_type = 1;
    e.device_index = device;
    e.bytes = bytes;
    e.reservation = reservation;
    t.events.push_back(e);
    return &t.events.back();
  };
  mem(0, 4'000'000, 1 * kMs, true);
  mem(1, 9'000'000, 2 * kMs, true);   // another device: its own sum
  mem(0, 3'000'000, 3 * kMs, false);  // a tensor: allocated 3 MB, reserved stays 4 MB
  mem(0, -4'000'000, 4 * kMs, true);  // freed: reserved 0, below what tensors hold -> 3 MB
  mem(0, 1'000'000, 5 * kMs, false)->total_allocated = 2'500'000;  // a collector's own total
  const std::string path =
      (std::filesystem::temp_directory_path() / "libreyolo_cupti_reserve_test.json").string();
  ASSERT_TRUE(ExportChromeTrace(t, path, {}).ok());

  rapidjson::Document doc;
  const std::string text = ReadFile(path);
  doc.Parse(text.c_str());
  ASSERT_FALSE(doc.HasParseError());
  std::vector<std::pair<int64_t, int64_t>> totals;  // (allocated, reserved) in time order
  for (const auto& e : doc["traceEvents"].GetArray()) {
    if (std::string(e["name"].GetString()) != "[memory]") continue;
    totals.emplace_back(e["args"]["Total Allocated"].GetInt64(),
                        e["args"]["Total Reserved"].GetInt64());
  }
  ASSERT_EQ(totals.size(), 5u);
  EXPECT_EQ(totals[0], std::make_pair(int64_t{0}, int64_t{4'000'000}));
  EXPECT_EQ(totals[1], std::make_pair(int64_t{0}, int64_t{9'000'000}));
  EXPECT_EQ(totals[2], std::make_pair(int64_t{3'000'000}, int64_t{4'000'000}));
  EXPECT_EQ(totals[3], std::make_pair(int64_t{3'000'000}, int64_t{3'000'000}));
  EXPECT_EQ(totals[4], std::make_pair(int64_t{2'500'000}, int64_t{2'500'000}));

  auto p = AnalyseTraceFile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(*p->peak_reserved_mb, 9.0, 1e-9);
  EXPECT_NEAR(*p->peak_vram_mb, 3.0, 1e-9);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace libreyolo::engine
