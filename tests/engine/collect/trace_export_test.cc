// The exporter's layout, without LibTorch: kernels on stream tracks linked to their launches.
#include "server/engine/collect/trace_export.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/load/load_profile.h"

namespace libreyolo::engine {
namespace {

CollectedEvent Ev(CollectedKind kind, const std::string& name, int64_t start_us, int64_t dur_us,
                  uint64_t thread) {
  CollectedEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start_us * 1000;
  e.dur_ns = dur_us * 1000;
  e.thread = thread;
  return e;
}

TEST(TraceExport, KernelsLinkToLaunchesAndPhases) {
  CollectedTrace t;
  t.events.push_back(Ev(CollectedKind::kUserAnnotation, "ProfilerStep#1", 0, 1000, 11));
  t.events.push_back(Ev(CollectedKind::kUserAnnotation, "step/forward", 0, 400, 11));
  t.events.push_back(Ev(CollectedKind::kUserAnnotation, "step/backward", 400, 600, 11));
  for (int i = 0; i < 2; ++i) {
    CollectedEvent launch = Ev(CollectedKind::kRuntime, "cudaLaunchKernel", 100 + 400 * i, 10, 11);
    launch.correlation = 7 + i;
    t.events.push_back(launch);
    // Kernel 0 runs after forward ended: only the correlation puts it in forward.
    CollectedEvent kernel = Ev(CollectedKind::kKernel, "sm80_xmma_gemm", 450 + 400 * i, 100, 7);
    kernel.device_index = 0;
    kernel.correlation = 7 + i;
    t.events.push_back(kernel);
  }
  CollectedEvent alloc = Ev(CollectedKind::kMemory, "[memory]", 50, 0, 11);
  alloc.bytes = 1000;
  alloc.device_type = 1;
  alloc.device_index = 0;
  t.events.push_back(alloc);

  const std::string path =
      (std::filesystem::temp_directory_path() / "libreyolo_export_test.json").string();
  TraceExportOptions o;
  o.pid = 42;
  o.device_allocated_at_start = 5000;
  ASSERT_TRUE(ExportChromeTrace(t, path, o).ok());
  auto p = LoadProfile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(*p->gpu_busy_ms_per_step, 0.2);
  EXPECT_DOUBLE_EQ(*p->launches_per_step, 2);
  EXPECT_DOUBLE_EQ(*p->tensorcore_pct, 100);
  ASSERT_EQ(p->phases.size(), 2u);
  EXPECT_EQ(p->phases[0].phase, "forward");
  EXPECT_DOUBLE_EQ(p->phases[0].gpu_ms_per_step, 0.1);
  EXPECT_EQ(p->phases[1].phase, "backward");
  EXPECT_DOUBLE_EQ(p->phases[1].gpu_ms_per_step, 0.1);
  EXPECT_DOUBLE_EQ(*p->peak_vram_mb, 6000 / 1e6);
  std::filesystem::remove(path);
}

TEST(TraceExport, UnwritablePathIsAnError) {
  EXPECT_FALSE(ExportChromeTrace({}, "/nonexistent-dir/x.json", {}).ok());
}

}  // namespace
}  // namespace libreyolo::engine
