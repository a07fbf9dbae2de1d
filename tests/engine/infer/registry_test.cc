// Every detection family of the Python LibreYOLO's own registry (its
// libreyolo.models.inventory, not a list typed here), exported to TorchScript from random init by
// the Python tool itself (tests/engine/torchscript/registry_exports.py), run by our
// TorchScriptModel and checked against the Python tool's TorchScript backend on the same file and
// image:
//   - the registry: every detection family it lists has a row in the engine's table
//     (export_family.cc), so a family the Python tool adds fails here until it has one;
//   - per exported family, in three layers: our input tensor against the blob the backend fed the
//     module; the backend's raw outputs through our decode against its detections (float32
//     rounding); our forward end to end against its detections; then the job (`profile infer`'s
//     RunInferJob, 2 runs after 1 warmup, one traced, without the overhead probes) profiles it;
//   - a family whose outputs the engine does not decode: the decode's error names the family and
//     the output shapes it saw.
// ctest makes the exports once (the engine_torchscript_registry_exports fixture: one family per
// output layout, the CMake list LIBREYOLO_REGISTRY_FAMILIES, or "all"); the cases are the rows of
// the engine's table, and one the run did not export skips.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/engine/data/image_io.h"
#include "server/engine/engine.h"
#include "server/engine/infer/torchscript_model.h"
#include "tests/engine/infer/detection_match.h"
#include "tests/support/test_files.h"

namespace libreyolo::engine {
namespace {

using test_match::ExpectSameDetections;
using test_match::ReadJson;
using test_match::ReadNpy;

std::string ExportsDir() {
  const char* dir = std::getenv("LIBREYOLO_REGISTRY_EXPORTS");
  return dir == nullptr ? std::string() : std::string(dir);
}

TEST(Registry, EveryDetectionFamilyOfThePythonToolHasARowInTheEngine) {
  ASSERT_FALSE(ExportsDir().empty()) << "LIBREYOLO_REGISTRY_EXPORTS is not set (run it by ctest)";
  std::ifstream in(ExportsDir() + "/registry.txt");
  ASSERT_TRUE(in.good()) << ExportsDir() << "/registry.txt (registry_exports.py writes it)";
  std::string family;
  int n = 0;
  while (std::getline(in, family)) {
    if (family.empty()) continue;
    ++n;
    EXPECT_NE(FindExportFamily(family), nullptr)
        << family << ": a detection family of the Python tool's registry without a row in "
                     "server/engine/infer/export_family.cc";
  }
  EXPECT_GE(n, 20) << "the registry lists too few detection families to be the real one";
}

class RegistryFamily : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    base_ = ExportsDir() + "/" + GetParam();
    ASSERT_FALSE(ExportsDir().empty()) << "LIBREYOLO_REGISTRY_EXPORTS is not set (run it by ctest)";
    if (!std::filesystem::exists(base_ + ".reference.json")) {
      GTEST_SKIP() << GetParam() << " was not exported in this run (LIBREYOLO_REGISTRY_FAMILIES; "
                   << "bench/export_bench.py sweeps them all)";
    }
    reference_ = ReadJson(base_ + ".reference.json");
    ASSERT_TRUE(reference_.IsObject()) << base_;
    if (reference_.HasMember("error")) {
      GTEST_SKIP() << GetParam() << ": the Python tool cannot export it here: "
                   << reference_["error"].GetString();
    }
    auto m = TorchScriptModel::Load(base_ + ".torchscript");
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = *std::move(m);
    auto image = DecodeImageFile(reference_["image"].GetString());
    ASSERT_TRUE(image.ok()) << image.status();
    image_ = *image;
    const rapidjson::Value& params = reference_["params"];
    options_.conf = params["conf"].GetDouble();
    options_.iou = params["iou"].GetDouble();
    options_.max_det = params["max_det"].GetInt64();
  }
  bool Decodes() const { return model_->metadata().family->unsupported.empty(); }
  void MatchesAndProfiles();
  // Compares ours with the backend's list at a score tolerance. A list cut at max_det ends among
  // near-equal scores (a random net's are dense there: up to ~20 within 1e-4 of the 300th), whose
  // order and so whose membership float rounding may change: such a list is compared above the
  // cut's score plus twice the tolerance (ours is cut at the same max_det, so it holds every one
  // of those), any number at the cut; a list that --conf ends is compared as everywhere else.
  double Compare(const Detections& got, double box_px, double score) {
    const rapidjson::Value& d = reference_["detections"];
    if (d.Size() > 0 && static_cast<int64_t>(d.Size()) >= options_.max_det) {
      return ExpectSameDetections(got, d, GetParam(), box_px, score,
                                  d[d.Size() - 1]["score"].GetDouble() + score, d.Size());
    }
    return ExpectSameDetections(got, d, GetParam(), box_px, score, options_.conf);
  }
  absl::StatusOr<std::vector<Detections>> Decode(const torch::IValue& out) {
    ExportGeometry g;
    (void)model_->Canvas(image_, &g);
    return model_->Postprocess(out, options_, {g});
  }
  torch::IValue PythonOutputs() const {
    std::vector<torch::IValue> outs;
    for (int i = 0; std::filesystem::exists(absl::StrCat(base_, ".output", i, ".npy")); ++i) {
      outs.emplace_back(ReadNpy(absl::StrCat(base_, ".output", i, ".npy")));
    }
    if (outs.size() == 1) return outs[0];
    return c10::ivalue::Tuple::create(std::move(outs));
  }

  std::string base_;
  rapidjson::Document reference_;
  std::unique_ptr<TorchScriptModel> model_;
  cv::Mat image_;
  PostprocessOptions options_;
};

// Preprocessing from the metadata as the backend does it: the same tensor (exact where the
// backend works in uint8 and float32 as we do; SSD normalises then resizes in float, with the same
// LibTorch op, and DEIMv2's ImageNet mean is float64 in numpy: those agree to float32 rounding).
// Decoding the backend's own outputs: its detections to float32 rounding (1e-3 px on coordinates
// up to ~1300 px, 1e-6 on scores). End to end: our forward is not bit for bit the Python one
// (LibTorch picks kernels and splits reductions by thread count), so the same detections within
// half a source pixel and 1e-4 in score, as engine_torchscript_model_test. Then the job.
TEST_P(RegistryFamily, MatchesThePythonBackendAndProfiles) { MatchesAndProfiles(); }

void RegistryFamily::MatchesAndProfiles() {
  if (!Decodes()) {
    // The error names the family and the shapes it saw, and says what there is instead.
    auto dets = Decode(PythonOutputs());
    ASSERT_FALSE(dets.ok());
    const std::string msg(dets.status().message());
    EXPECT_NE(msg.find(GetParam()), std::string::npos) << msg;
    const rapidjson::Value& shape = reference_["output_shapes"][0];
    std::string first = "[";
    for (rapidjson::SizeType k = 0; k < shape.Size(); ++k) {
      absl::StrAppend(&first, k ? ", " : "", shape[k].GetInt64());
    }
    EXPECT_NE(msg.find(first + "]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--postprocess none"), std::string::npos) << msg;
    return;
  }
  ASSERT_GT(reference_["detections"].Size(), 0u) << "a vacuous comparison";
  torch::NoGradGuard no_grad;
  // The thread count the reference was made at (registry_exports.py --threads, default 1): at
  // another, reductions split otherwise, and EfficientDet's graph, which ranks 5000 candidates
  // within 1e-5 of each other, then keeps another set (measured: 296 of 297 at 2 threads).
  torch::set_num_threads(1);
  ExportGeometry g;
  auto input = model_->ToInput({model_->Canvas(image_, &g)});
  ASSERT_TRUE(input.ok()) << input.status();
  {
    SCOPED_TRACE("input");
    const torch::Tensor want = ReadNpy(base_ + ".input.npy");
    ASSERT_EQ(input->sizes(), want.sizes());
    EXPECT_LE((*input - want).abs().max().item<double>(), 1e-5);
  }
  {
    SCOPED_TRACE("the Python outputs through our decode");
    auto dets = model_->Postprocess(PythonOutputs(), options_, {g});
    ASSERT_TRUE(dets.ok()) << dets.status();
    Compare((*dets)[0], 1e-3, 1e-6);
  }
  {
    SCOPED_TRACE("our forward");
    auto dets = model_->Postprocess(model_->Forward(*input), options_, {g});
    ASSERT_TRUE(dets.ok()) << dets.status();
    const double diff = Compare((*dets)[0], 0.5, 1e-4);
    // For bench/export_bench.py's table.
    std::cout << GetParam() << ": " << reference_["detections"].Size()
              << " detections, max box diff " << diff << " px\n";
  }
  SCOPED_TRACE("profile infer");
  test::TempDir out("registryjob");
  InferJobSpec spec = test_match::ExportJobSpec(
      base_ + ".torchscript", reference_["image"].GetString(), out.path() + "/runs");
  spec.conf = options_.conf;
  // A user's export traced at a batch above 1 (--variants) runs at it.
  if (reference_.HasMember("batch")) spec.batch = reference_["batch"].GetInt64();
  auto r = RunInferJob(spec, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile.model, model_->metadata().Label());
  EXPECT_EQ(r->profile.batch, spec.batch);
}

// A family the engine has no row for (an export of a Python tool newer than 1.6.0, made here: a
// TorchScript module with that family's metadata and outputs no decoder knows). The decode's
// error names the family and the output shapes and says `--postprocess none`; with it the job
// profiles the preprocessing and forward, the postprocess stage null and the reason recorded.
TEST(UnknownFamily, ItsErrorNamesItAndPostprocessNoneProfilesTheForward) {
  test::TempDir dir("unknownfamily");
  torch::jit::Module head("NewHead");
  head.register_parameter("w", torch::ones({3}), /*is_buffer=*/false);
  head.define(R"(
def forward(self, x):
    y = x.mean(dim=[2, 3]) * self.w
    return (y.unsqueeze(1).repeat(1, 7, 1), x.sum(dim=[1, 2, 3]))
)");
  const std::string weights = dir.path() + "/newfamily.torchscript";
  head.save(weights, {{"libreyolo_metadata.json",
                       R"({"model_family": "newfamily", "model_size": "n", "task": "detect",
                           "imgsz": 64, "nb_classes": 80})"}});
  InferJobSpec spec;
  spec.model.device = "cpu";
  spec.model.threads = 1;
  spec.model.weights = weights;
  spec.warmup = 0;
  spec.runs = 2;
  spec.profiled_runs = 1;
  spec.profiler.probe_overhead = false;
  spec.project = dir.path() + "/runs";
  auto refused = RunInferJob(spec, nullptr, nullptr);
  ASSERT_FALSE(refused.ok());
  const std::string msg(refused.status().message());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << msg;
  EXPECT_NE(msg.find("newfamily"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1, 7, 3], [1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("`profile infer --postprocess none`"), std::string::npos) << msg;

  spec.postprocess = "none";
  auto r = RunInferJob(spec, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->profile.stages_ms.has_value());
  EXPECT_GT(r->profile.stages_ms->forward.value_or(0), 0);
  EXPECT_FALSE(r->profile.stages_ms->postprocess.has_value());
  EXPECT_NE(r->profile.config_json.find(R"("postprocess":"none")"), std::string::npos)
      << r->profile.config_json;
  EXPECT_NE(r->profile.config_json.find(R"("postprocess_skipped":"--postprocess none)"),
            std::string::npos)
      << r->profile.config_json;

  spec.postprocess = "nms";  // RunInferJob's own callers (the engine tool validates first)
  auto bad = RunInferJob(spec, nullptr, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--postprocess: 'nms'"), std::string::npos) << bad.status();
}

// A user's own exports (registry_exports.py --variants, the CMake list
// LIBREYOLO_REGISTRY_VARIANTS): another class count (3, 5, 1000), another export size (416, 512,
// 256x320), traced at batch 2. Everything the engine needs comes from the export's metadata: its
// class count, its canvas; then the same checks as a family's, the job at the traced batch.
class UserExport : public RegistryFamily {};

TEST_P(UserExport, ItsMetadataSaysTheClassesAndSizeAndItMatchesThePythonBackend) {
  const rapidjson::Value& meta = reference_["metadata"];
  const ExportMetadata& m = model_->metadata();
  EXPECT_EQ(m.num_classes, meta["nb_classes"].GetInt64());
  EXPECT_EQ(m.height, meta["imgsz_h"].GetInt64());
  EXPECT_EQ(m.width, meta["imgsz_w"].GetInt64());
  // The variant's name says what was asked of the Python tool: FAMILY_CLASSES_HxW_BATCH.
  EXPECT_EQ(GetParam(), absl::StrCat(m.family_name, "_", m.num_classes, "_",
                                     m.height == m.width ? absl::StrCat(m.height)
                                                         : absl::StrCat(m.height, "x", m.width),
                                     "_", reference_["batch"].GetInt64()));
  MatchesAndProfiles();
}

INSTANTIATE_TEST_SUITE_P(
    Variants, UserExport,
    ::testing::ValuesIn(std::vector<std::string>(absl::StrSplit(LIBREYOLO_REGISTRY_VARIANTS, ','))),
    [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// One case per row of the engine's table (the registry test above keeps the table a superset of
// the registry); a family this run did not export skips.
INSTANTIATE_TEST_SUITE_P(Families, RegistryFamily, ::testing::ValuesIn(ExportFamilyTable()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace libreyolo::engine
