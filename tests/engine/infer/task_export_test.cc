// Issue 38 §2: the tasks other than detection that the Python LibreYOLO exports to TorchScript
// (classification, semantic segmentation, depth, instance segmentation, pose), one family each, made
// from random init by the Python tool itself in one process (tests/engine/torchscript/
// task_exports.py, the engine_task_exports fixture) and run by our TorchScriptModel against its
// own TorchScript backend on the same file and image:
//   - our input tensor against the blob the backend fed the module (the classification eval
//     transform with Pillow's bicubic filter, the dense tasks' cv2 stretch): equal to 1e-6
//     (1e-4 for the float bicubic of MiDaS / Depth Anything: OpenCV 4.6 against cv2 5.0);
//   - the backend's raw outputs through our decode against its result: the same probabilities
//     and top-5, the same class map, the same depth map (1e-5 of its largest value), the same
//     persons and keypoints (1e-3 px; HRNet's one whole-image person from its heatmaps);
//   - our forward end to end: the same top-5 (where a random net's probabilities are a near tie,
//     each rank's probability equals the backend's at that rank within 1e-6); class-map pixels
//     differ only where the backend's own two best upsampled logits are within 1e-3 (a tie the
//     forward's ~1e-5 float differences may flip); the depth map within 1e-4 of its largest
//     value; persons and keypoints within 0.05 px, scores 1e-4;
//   - the job (`profile infer`): profile.json's `model` names family, task, size, classes and
//     export size; preprocess and forward are timed; postprocess is timed where the task is
//     decoded and null (with config.postprocess_skipped saying why) where not.
// Also, without the Python tool: what task metadata the engine accepts and refuses.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/engine/data/image_io.h"
#include "server/engine/engine.h"
#include "server/engine/infer/task_postprocess.h"
#include "server/engine/infer/torchscript_model.h"
#include "tests/engine/infer/detection_match.h"
#include "tests/support/test_files.h"

namespace libreyolo::engine {
namespace {

using test_match::ReadJson;
using test_match::ReadNpy;

TEST(TaskMetadata, ClassificationSettingsFromTheMetadataAsTheBackendReadsThem) {
  // norm_mean / norm_std as JSON strings (what the Python tool writes), crop_pct, bicubic.
  auto vit = ParseExportMetadata(
      R"({"model_family": "vit", "size": "ti", "task": "classify", "nb_classes": 10,
          "imgsz": 224, "crop_pct": 0.9, "interpolation": "bicubic",
          "norm_mean": "[0.5, 0.5, 0.5]", "norm_std": "[0.25, 0.5, 0.5]"})",
      "m");
  ASSERT_TRUE(vit.ok()) << vit.status();
  const TaskSettings& t = vit->task_settings;
  EXPECT_EQ(t.task, ExportTask::kClassify);
  EXPECT_EQ(t.input, TaskInputKind::kClassifyEval);
  EXPECT_DOUBLE_EQ(t.crop_pct, 0.9);
  EXPECT_EQ(t.interpolation, "bicubic");
  EXPECT_FLOAT_EQ(t.std[0], 0.25f);
  EXPECT_TRUE(t.no_postprocess.empty());
  EXPECT_EQ(TaskLabel(*vit), "vit-ti classify (vit, size ti, 10 classes, 224x224 export)");
  // Absent keys: the backend's legacy row for the family, else ImageNet, 0.875, bilinear.
  auto siglip = ParseExportMetadata(R"({"model_family": "siglip2", "task": "classify"})", "m");
  ASSERT_TRUE(siglip.ok()) << siglip.status();
  EXPECT_TRUE(siglip->task_settings.stretch);
  EXPECT_FLOAT_EQ(siglip->task_settings.mean[0], 0.5f);
  auto plain = ParseExportMetadata(R"({"model_family": "resnet", "task": "classify"})", "m");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_DOUBLE_EQ(plain->task_settings.crop_pct, 0.875);
  EXPECT_EQ(plain->task_settings.interpolation, "bilinear");
  EXPECT_FLOAT_EQ(plain->task_settings.mean[0], 0.485f);
}

TEST(TaskMetadata, RefusesWhatItDoesNotReproduceNamingIt) {
  const auto refused = [](const char* json, const char* needle) {
    auto m = ParseExportMetadata(json, "x.torchscript");
    ASSERT_FALSE(m.ok()) << json;
    EXPECT_TRUE(absl::StrContains(m.status().message(), needle)) << m.status();
    EXPECT_TRUE(absl::StrContains(m.status().message(), "x.torchscript")) << m.status();
  };
  refused(R"({"model_family": "resnet", "task": "classify", "interpolation": "nearest"})",
          "NEAREST");
  refused(R"({"model_family": "resnet", "task": "classify", "crop_pct": 1.5})", "crop_pct");
  refused(R"({"model_family": "resnet", "task": "classify", "norm_mean": "[1, 2]"})", "norm_mean");
  refused(R"({"model_family": "resnet", "task": "classify", "imgsz_h": 224, "imgsz_w": 256})",
          "square");
  refused(R"({"model_family": "openpose", "task": "pose"})", "openpose's preprocessing");
  refused(R"({"model_family": "picosam3", "task": "segment"})", "detection family");
  // Dense tasks may be rectangular; depth labels carry no class count.
  auto seg = ParseExportMetadata(
      R"({"model_family": "ppliteseg", "size": "t50", "task": "semantic", "imgsz_h": 512,
          "imgsz_w": 1024})",
      "m");
  ASSERT_TRUE(seg.ok()) << seg.status();
  EXPECT_EQ(seg->task_settings.input, TaskInputKind::kStretchCv);
  // PIDNet, SegFormer, GTR: their own letterbox; PIDNet upsamples with align_corners.
  for (const char* family : {"pidnet", "segformer", "gtr"}) {
    auto lb = ParseExportMetadata(
        absl::StrCat(R"({"model_family": ")", family, R"(", "task": "semantic"})"), "m");
    ASSERT_TRUE(lb.ok()) << lb.status();
    EXPECT_EQ(lb->task_settings.input, TaskInputKind::kSemanticLetterbox) << family;
    EXPECT_EQ(lb->task_settings.align_corners, absl::string_view(family) == "pidnet") << family;
    EXPECT_TRUE(lb->task_settings.no_postprocess.empty()) << family;
  }
  auto depth = ParseExportMetadata(R"({"model_family": "depth_anything", "task": "depth"})", "m");
  ASSERT_TRUE(depth.ok()) << depth.status();
  EXPECT_EQ(depth->task_settings.input, TaskInputKind::kStretchCubic);
  EXPECT_FALSE(absl::StrContains(TaskLabel(*depth), "classes"));
  auto da3 = ParseExportMetadata(R"({"model_family": "depth_anything3", "task": "depth"})", "m");
  ASSERT_TRUE(da3.ok()) << da3.status();
  EXPECT_FALSE(da3->task_settings.no_postprocess.empty());
  auto pose = ParseExportMetadata(R"({"model_family": "yolonas", "task": "pose"})", "m");
  ASSERT_TRUE(pose.ok()) << pose.status();
  EXPECT_EQ(pose->task_settings.input, TaskInputKind::kPoseLetterbox);
  EXPECT_TRUE(pose->task_settings.no_postprocess.empty());
  auto dekr = ParseExportMetadata(R"({"model_family": "dekr", "task": "pose"})", "m");
  ASSERT_TRUE(dekr.ok()) << dekr.status();
  EXPECT_EQ(dekr->task_settings.input, TaskInputKind::kDekrLetterbox);
  EXPECT_FLOAT_EQ(dekr->task_settings.std[0], 0.229f);
  EXPECT_FALSE(dekr->task_settings.no_postprocess.empty());
  // HRNet: the person-crop head's own canvas (256x192), the whole image as the one box; decoded.
  auto hrnet = ParseExportMetadata(
      R"({"model_family": "hrnet", "task": "pose", "imgsz_h": 256, "imgsz_w": 192})", "m");
  ASSERT_TRUE(hrnet.ok()) << hrnet.status();
  EXPECT_EQ(hrnet->task_settings.input, TaskInputKind::kHrnetCrop);
  EXPECT_FLOAT_EQ(hrnet->task_settings.mean[0], 0.485f);
  EXPECT_TRUE(hrnet->task_settings.no_postprocess.empty());
  auto inst = ParseExportMetadata(R"({"model_family": "dfine", "task": "segment"})", "m");
  ASSERT_TRUE(inst.ok()) << inst.status();
  EXPECT_EQ(inst->task_settings.input, TaskInputKind::kDetection);
  EXPECT_FALSE(inst->task_settings.no_postprocess.empty());
}

std::string ExportsDir() {
  const char* dir = std::getenv("LIBREYOLO_TASK_EXPORTS");
  return dir == nullptr ? std::string() : std::string(dir);
}

class TaskExport : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (ExportsDir().empty()) GTEST_SKIP() << "LIBREYOLO_TASK_EXPORTS is not set (run it by ctest)";
    base_ = ExportsDir() + "/" + GetParam();
    reference_ = ReadJson(base_ + ".reference.json");
    ASSERT_TRUE(reference_.IsObject()) << base_ << ".reference.json (task_exports.py writes it)";
    ASSERT_FALSE(reference_.HasMember("error"))
        << GetParam() << ": the Python tool failed to export it: " << reference_["error"].GetString();
    auto m = TorchScriptModel::Load(base_ + ".torchscript");
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = *std::move(m);
    auto image = DecodeImageFile(reference_["image"].GetString());
    ASSERT_TRUE(image.ok()) << image.status();
    image_ = *image;
  }
  const TaskSettings& task() const { return model_->metadata().task_settings; }
  absl::StatusOr<std::vector<TaskOutput>> Decode(const torch::IValue& out) {
    ExportGeometry g;
    (void)model_->Canvas(image_, &g);
    PostprocessOptions o;
    if (reference_.HasMember("params")) {
      o.conf = reference_["params"]["conf"].GetDouble();
      o.iou = reference_["params"]["iou"].GetDouble();
      o.max_det = reference_["params"]["max_det"].GetInt64();
    }
    return TaskPostprocess(model_->metadata(), out, {g}, o, 5);
  }
  static torch::IValue AsOutput(std::vector<torch::Tensor> outs) {
    if (outs.size() == 1) return outs[0];
    return c10::ivalue::Tuple::create(std::vector<torch::IValue>(outs.begin(), outs.end()));
  }
  // Compares a decode with the backend's result; `ours_forward`: our own forward's (tolerances
  // of a different forward, see the file comment), else the backend's outputs decoded.
  void ExpectLikeBackend(const TaskOutput& got, const std::vector<torch::Tensor>& py_outs,
                         bool ours_forward) {
    const torch::Tensor want = ReadNpy(base_ + ".result.npy");
    switch (task().task) {
      case ExportTask::kClassify: {
        // A random net's probabilities may be near-uniform (MobileNetV4-S: the top-5 within
        // 1.5e-6): a rank is the backend's when its class's probability is the backend's k-th
        // within `tol`, and the same class wherever the backend's own margins exceed 2 x tol.
        const rapidjson::Value& top5 = reference_["top5"];
        ASSERT_EQ(got.classes.size(0), 5);
        const double tol = ours_forward ? 1e-6 : 1e-7;
        const bool distinct = reference_["top5_margin"].GetDouble() > 2 * tol;
        for (rapidjson::SizeType k = 0; k < top5.Size(); ++k) {
          const int64_t c = got.classes[k].item<int64_t>();
          EXPECT_NEAR(want[c].item<float>(), want[top5[k].GetInt64()].item<float>(), tol)
              << "top-" << k + 1 << ": class " << c << ", the backend's " << top5[k].GetInt64();
          if (distinct) {
            EXPECT_EQ(c, top5[k].GetInt64()) << "top-" << k + 1;
          }
          EXPECT_NEAR(got.scores[k].item<float>(), want[c].item<float>(), tol);
        }
        break;
      }
      case ExportTask::kSemantic: {
        ASSERT_EQ(got.map.sizes(), want.sizes());
        const torch::Tensor differ = got.map.to(torch::kFloat).ne(want);
        const int64_t n = differ.sum().item<int64_t>();
        if (!ours_forward) {
          EXPECT_EQ(n, 0) << "class-map pixels that differ";
          break;
        }
        // The backend's own top-2 margin per pixel, from its logits upsampled as it does.
        ExportGeometry g;
        (void)model_->Canvas(image_, &g);
        torch::Tensor logits = py_outs[0];
        if (task().input == TaskInputKind::kSemanticLetterbox) {
          // _parse_semantic_output's crop: the image's share of the letterboxed canvas.
          const auto valid = [](double v, int64_t limit) {
            return std::min(limit, std::max<int64_t>(static_cast<int64_t>(std::nearbyint(v)), 1));
          };
          const ExportMetadata& m = model_->metadata();
          const int64_t lh = logits.size(2), lw = logits.size(3);
          const double scale_y = static_cast<double>(lh) / static_cast<double>(m.height);
          const double scale_x = static_cast<double>(lw) / static_cast<double>(m.width);
          const int64_t vh = valid(static_cast<double>(g.src_height) * g.ratio * scale_y, lh);
          const int64_t vw = valid(static_cast<double>(g.src_width) * g.ratio * scale_x, lw);
          logits = logits.slice(2, 0, vh).slice(3, 0, vw);
        }
        const torch::Tensor up = torch::nn::functional::interpolate(
            logits, torch::nn::functional::InterpolateFuncOptions()
                        .size(std::vector<int64_t>{g.src_height, g.src_width})
                        .mode(torch::kBilinear)
                        .align_corners(task().align_corners))[0];
        const torch::Tensor top2 = std::get<0>(up.topk(2, 0));
        // A pixel may flip only where the backend's margin is under twice our forward's largest
        // logit difference (bilinear weights sum to 1), at least 1e-3; that difference itself is
        // float summation order: within 1e-3 of the logits' range (random-init PIDNet's reach
        // 230, and the Python tool's own forward moves them 0.14 from 1 to 2 threads).
        const double range = py_outs[0].abs().max().item<double>();
        const double drift = (our_logits_ - py_outs[0]).abs().max().item<double>();
        EXPECT_LE(drift, 1e-3 * std::max(range, 1.0)) << "our forward's logits, range " << range;
        const double margin = std::max(1e-3, 2 * drift);
        const torch::Tensor tie = (top2[0] - top2[1]).lt(margin);
        EXPECT_EQ(differ.logical_and(tie.logical_not()).sum().item<int64_t>(), 0)
            << n << " pixels differ, some where the backend's best class leads by >= " << margin;
        std::cout << GetParam() << ": " << n << " of " << want.numel()
                  << " class-map pixels differ (all at near ties; logits up to " << range
                  << ", our forward's within " << drift << ")\n";
        break;
      }
      case ExportTask::kDepth: {
        ASSERT_EQ(got.map.sizes(), want.sizes());
        // Relative to the map's largest value: the backend's own outputs decode to its map within
        // float rounding; our forward adds its float differences (and, for the bicubic families,
        // those of the input: Depth Anything-S 3.2e-7 of 0.064).
        const double scale = want.abs().max().item<double>();
        const double diff = (got.map - want).abs().max().item<double>();
        EXPECT_LE(diff, (ours_forward ? 1e-4 : 1e-5) * std::max(scale, 1e-6))
            << "depth values up to " << scale;
        if (ours_forward) {
          std::cout << GetParam() << ": depth max diff " << diff << " (values up to " << scale
                    << ")\n";
        }
        break;
      }
      case ExportTask::kPose: {
        // Rows [x1, y1, x2, y2, score, class, (x, y, conf) x K], both by descending score.
        ASSERT_EQ(got.count, want.size(0)) << "persons";
        const int64_t k = got.keypoints.size(1);
        ASSERT_EQ(want.size(1), 6 + 3 * k);
        const torch::Tensor mine = torch::cat(
            {got.boxes, got.scores.unsqueeze(1), got.classes.unsqueeze(1).to(torch::kFloat),
             got.keypoints.reshape({got.count, 3 * k})},
            1);
        const torch::Tensor diff = (mine - want).abs();
        const torch::Tensor xy = torch::cat(
            {diff.slice(1, 0, 4), diff.slice(1, 6).reshape({-1, k, 3}).slice(2, 0, 2).reshape({got.count, -1})},
            1);
        const double px = xy.numel() ? xy.max().item<double>() : 0.0;
        const double score = diff.numel() ? diff.slice(1, 4, 5).max().item<double>() : 0.0;
        const double kconf = diff.numel() ? diff.slice(1, 6).reshape({-1, k, 3}).select(2, 2).max().item<double>() : 0.0;
        // The backend's outputs decoded: float32 rounding only. Our forward: its outputs differ
        // by ~1e-5 relative (other kernels' summation order), ~0.01 px at these coordinates.
        EXPECT_LE(px, ours_forward ? 0.05 : 1e-3) << "box / keypoint px";
        EXPECT_LE(score, ours_forward ? 1e-4 : 1e-6) << "score";
        EXPECT_LE(kconf, ours_forward ? 1e-4 : 1e-6) << "keypoint confidence";
        EXPECT_TRUE(got.classes.eq(want.select(1, 5).to(torch::kLong)).all().item<bool>());
        if (ours_forward) {
          std::cout << GetParam() << ": " << got.count << " persons, max box/keypoint diff " << px
                    << " px, score diff " << score << "\n";
        }
        break;
      }
      default: FAIL() << "no decode to compare";
    }
  }

  std::string base_;
  rapidjson::Document reference_;
  std::unique_ptr<TorchScriptModel> model_;
  cv::Mat image_;
  torch::Tensor our_logits_;  // our forward's first output (semantic's tie check)
};

TEST_P(TaskExport, RunsAsThePythonBackendDoes) {
  const ExportMetadata& meta = model_->metadata();
  const std::string task_name = reference_["task"].GetString();
  EXPECT_EQ(meta.task, task_name);
  std::vector<torch::Tensor> py_outs;
  for (int i = 0; std::filesystem::exists(absl::StrCat(base_, ".output", i, ".npy")); ++i) {
    py_outs.push_back(ReadNpy(absl::StrCat(base_, ".output", i, ".npy")));
  }
  ASSERT_FALSE(py_outs.empty());
  ExportGeometry g;
  const cv::Mat canvas = model_->Canvas(image_, &g);
  auto input = model_->ToInput({canvas});
  ASSERT_TRUE(input.ok()) << input.status();
  {
    SCOPED_TRACE("our input against the backend's blob");
    const torch::Tensor want = ReadNpy(base_ + ".input.npy");
    ASSERT_EQ(input->sizes(), want.sizes());
    // Bicubic on the float image (MiDaS, Depth Anything) is OpenCV's: the engine's (4.6) and the
    // Python tool's cv2 (5.0) differ there by up to 3.7e-5 (Depth Anything-S at 266, in 0..1
    // units: 1 % of a grey level); every other input is equal.
    const bool cubic = task().input == TaskInputKind::kStretchCubic;
    EXPECT_LE((*input - want).abs().max().item<double>(), cubic ? 1e-4 : 1e-6);
  }
  const bool decodes = task().no_postprocess.empty();
  if (decodes) {
    SCOPED_TRACE("the backend's outputs through our decode");
    auto decoded = Decode(AsOutput(py_outs));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ExpectLikeBackend((*decoded)[0], py_outs, false);
  } else {
    auto refused = Decode(AsOutput(py_outs));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().message(), task().no_postprocess);
  }
  if (decodes) {
    SCOPED_TRACE("our forward");
    torch::InferenceMode guard;
    const torch::IValue out = model_->Forward(*input);
    if (task().task == ExportTask::kSemantic) {
      our_logits_ = (out.isTensor() ? out.toTensor() : out.toTupleRef().elements()[0].toTensor())
                        .to(torch::kCPU, torch::kFloat);
    }
    auto decoded = Decode(out);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ExpectLikeBackend((*decoded)[0], py_outs, true);
  }
  SCOPED_TRACE("profile infer");
  test::TempDir out("taskjob");
  // Without the probe's windows, which would triple the job (a semantic decode upsamples 80
  // maps to the image: ~0.7 s an iteration here).
  InferJobSpec spec = test_match::ExportJobSpec(
      base_ + ".torchscript", reference_["image"].GetString(), out.path() + "/runs");
  if (reference_.HasMember("params")) spec.conf = reference_["params"]["conf"].GetDouble();
  auto r = RunInferJob(spec, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  const Profile& p = r->profile;
  EXPECT_EQ(p.model, TaskLabel(meta));
  for (const char* part : {reference_["family"].GetString(), task_name.c_str()}) {
    EXPECT_TRUE(absl::StrContains(p.model, part)) << p.model;
  }
  EXPECT_TRUE(absl::StrContains(p.model, absl::StrCat(meta.width, "x", meta.height))) << p.model;
  ASSERT_TRUE(p.stages_ms.has_value());
  EXPECT_GT(p.stages_ms->preprocess.value_or(0), 0);
  EXPECT_GT(p.stages_ms->forward.value_or(0), 0);
  EXPECT_EQ(p.stages_ms->postprocess.has_value(), decodes);
  EXPECT_EQ(absl::StrContains(p.config_json, "postprocess_skipped"), !decodes) << p.config_json;
  std::cout << GetParam() << " (" << p.model << "): preprocess " << *p.stages_ms->preprocess
            << " ms, forward " << *p.stages_ms->forward << " ms, postprocess "
            << (decodes ? absl::StrCat(*p.stages_ms->postprocess, " ms") : "null") << "\n";
}

INSTANTIATE_TEST_SUITE_P(Tasks, TaskExport,
                         ::testing::Values("classify", "semantic", "semantic_letterbox", "depth",
                                           "segment", "pose", "pose_dekr", "pose_hrnet",
                                           "semantic_gtr"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace libreyolo::engine
