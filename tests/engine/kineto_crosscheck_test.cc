// Our collector and exporter against LibTorch's own: one CPU inference window of LibreYOLO9t,
// recorded once by LibTorch's profiler, exported twice -- by trace_export (profile_trace.json)
// and by LibTorch itself (ProfilerResult::save, the Kineto trace torch.profiler writes) -- and
// both analysed by the common analyser.
//
// Tolerances: the op set is the same records, so ops per step (and each op's count) must be
// equal. Self CPU time per step may differ only by how each exporter prints timestamps (both to
// the nanosecond: Kineto as microseconds with 3 decimals, relative to its own base), so it must
// agree within 0.5 % (a few ns over ~4,700 ops is far below that; a conversion bug -- µs
// truncation, a lost thread, a wrong duration -- is far above).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/analysis/module_table.h"
#include "common/analysis/trace_analyser.h"
#include "common/trace/trace_reader.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/collect/trace_export.h"
#include "server/engine/job/model_loader.h"
#include "server/engine/model/module_scope.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

std::map<std::string, double> OpCounts(const Profile& p) {
  std::map<std::string, double> counts;
  for (const OpRow& r : p.ops) counts[r.op] = r.count_per_step;
  return counts;
}

TEST(KinetoCrossCheck, OursAndLibTorchsOwnExportAgreeOnOneCpuWindow) {
  torch::set_num_threads(1);
  const std::string weights =
      std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";
  auto loaded = LoadModel(weights, "t", 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  loaded->model->eval();
  const torch::Tensor x = torch::rand({1, 3, 96, 96});
  {
    torch::InferenceMode guard;
    (void)loaded->model->predict(x);  // warm
  }
  const fs::path dir = fs::temp_directory_path() / "libreyolo_kineto_crosscheck";
  fs::remove_all(dir);
  fs::create_directories(dir);
  TorchProfilerOptions o;
  o.record_shapes = true;
  o.profile_memory = false;
  o.with_flops = false;
  o.kineto_trace_path = (dir / "kineto.json").string();
  auto prof = TorchProfiler::Start(o);
  ASSERT_TRUE(prof.ok()) << prof.status();
  for (int step = 1; step <= 3; ++step) {
    ScopedRange s("ProfilerStep#" + std::to_string(step));
    torch::InferenceMode guard;
    (void)loaded->model->predict(x);
  }
  auto trace = (*prof)->Stop();
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_TRUE(fs::exists(o.kineto_trace_path)) << "LibTorch did not save its own trace";
  const std::string ours_path = (dir / "profile_trace.json").string();
  ASSERT_TRUE(ExportChromeTrace(*trace, ours_path, {}).ok());

  auto ours = AnalyseTraceFile(ours_path);
  auto kineto = AnalyseTraceFile(o.kineto_trace_path);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_TRUE(kineto.ok()) << kineto.status();
  ASSERT_EQ(ours->real_steps.value_or(0), 3);
  ASSERT_EQ(kineto->real_steps.value_or(0), 3);
  ASSERT_TRUE(ours->ops_per_step && kineto->ops_per_step);
  EXPECT_GT(*ours->ops_per_step, 100);
  EXPECT_DOUBLE_EQ(*ours->ops_per_step, *kineto->ops_per_step);
  EXPECT_EQ(OpCounts(*ours), OpCounts(*kineto));
  ASSERT_TRUE(ours->self_cpu_total_ms_per_step && kineto->self_cpu_total_ms_per_step);
  EXPECT_NEAR(*ours->self_cpu_total_ms_per_step, *kineto->self_cpu_total_ms_per_step,
              0.005 * *kineto->self_cpu_total_ms_per_step);
  fs::remove_all(dir);
}

std::set<std::string> ModulePaths(const std::string& trace_path) {
  auto data = ReadTraceFile(trace_path);
  EXPECT_TRUE(data.ok()) << data.status();
  std::set<std::string> paths;
  if (!data.ok()) return paths;
  for (const ModuleRow& r : BuildModuleTable(*data).rows) paths.insert(r.path);
  return paths;
}

// --with-modules: every block of the model runs in a user scope named after its Python module
// path; LibTorch's own Kineto export writes them as user_annotation events, as ours does, and
// both give the same per-layer table. Without a live ModuleScopes nothing is recorded.
TEST(KinetoCrossCheck, ModuleScopesLandInBothExportsUnderTheirPythonNames) {
  torch::set_num_threads(1);
  const std::string weights =
      std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";
  auto loaded = LoadModel(weights, "t", 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  loaded->model->eval();
  const torch::Tensor x = torch::rand({1, 3, 64, 64});
  const fs::path dir = fs::temp_directory_path() /
                       ("libreyolo_module_scopes_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto record = [&](bool scoped, const std::string& name) {
    std::optional<ModuleScopes> scopes;
    if (scoped) scopes.emplace(*loaded->model);
    TorchProfilerOptions o;
    o.record_shapes = o.profile_memory = o.with_flops = false;
    o.kineto_trace_path = (dir / (name + "_kineto.json")).string();
    auto prof = TorchProfiler::Start(o);
    EXPECT_TRUE(prof.ok()) << prof.status();
    for (int step = 1; step <= 2; ++step) {
      ScopedRange s("ProfilerStep#" + std::to_string(step));
      torch::InferenceMode guard;
      (void)loaded->model->predict(x);
    }
    auto trace = (*prof)->Stop();
    EXPECT_TRUE(trace.ok()) << trace.status();
    EXPECT_EQ(HoldsModuleScopes(trace->events), scoped);
    const std::string ours = (dir / (name + ".json")).string();
    EXPECT_TRUE(ExportChromeTrace(*trace, ours, {}).ok());
    return std::make_pair(ours, o.kineto_trace_path);
  };
  const auto [ours, kineto] = record(true, "scoped");
  const std::set<std::string> paths = ModulePaths(ours);
  for (const char* p : {"backbone", "backbone.conv0", "backbone.conv1", "backbone.elan1",
                        "backbone.elan2.cv2", "backbone.elan2.cv2.0.m.0", "backbone.down2",
                        "backbone.spp", "neck", "neck.elan_up1", "neck.down1",
                        "neck.elan_down2", "head", "head.cv2.0", "head.cv3.2", "head.decode"}) {
    EXPECT_TRUE(paths.contains(p)) << p;
  }
  // Only our blocks open scopes: no LibTorch leaf (conv, bn) and no unnamed module.
  EXPECT_FALSE(paths.contains("backbone.conv0.conv"));
  EXPECT_FALSE(paths.contains(""));
  // Every scope is a module of the model: its named_modules() paths, or head.decode.
  std::set<std::string> named = {"head.decode"};
  for (const auto& item : loaded->model->named_modules("", false)) named.insert(item.key());
  for (const std::string& p : paths) EXPECT_TRUE(named.contains(p)) << p;
  EXPECT_EQ(ModulePaths(kineto), paths);  // Kineto: cat user_annotation, same names
  auto kineto_text = ReadTraceFile(kineto);
  ASSERT_TRUE(kineto_text.ok());
  auto ours_data = ReadTraceFile(ours);
  ASSERT_TRUE(ours_data.ok());
  EXPECT_EQ(BuildModuleTable(*kineto_text).scopes, BuildModuleTable(*ours_data).scopes);
  EXPECT_EQ(BuildModuleTable(*ours_data).steps, 2);

  const auto [plain, plain_kineto] = record(false, "plain");
  EXPECT_TRUE(ModulePaths(plain).empty());
  EXPECT_TRUE(ModulePaths(plain_kineto).empty());
  fs::remove_all(dir);
}

TEST(KinetoCrossCheck, AnUnwritableKinetoPathIsAnErrorNotASilentSuccess) {
  TorchProfilerOptions o;
  o.kineto_trace_path = "/nonexistent-libreyolo-dir/kineto.json";
  auto prof = TorchProfiler::Start(o);
  ASSERT_TRUE(prof.ok()) << prof.status();
  { ScopedRange s("ProfilerStep#1"); (void)torch::ones({2, 2}).sum(); }
  auto trace = (*prof)->Stop();
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(std::string(trace.status().message()).find("--kineto-trace"), std::string::npos);
}

}  // namespace
}  // namespace libreyolo::engine
