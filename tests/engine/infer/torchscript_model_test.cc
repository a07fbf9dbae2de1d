// TorchScript exports of the Python LibreYOLO's families (yolo9, yolox, yolo7, dfine, deim, rtdetr,
// lwdetr: every one it exports offline; rfdetr needs the transformers package), made at
// test time from random-init models by the Python tool itself (tests/engine/torchscript/
// make_exports.py), run by our TorchScriptModel and checked against the Python tool's own
// TorchScript backend on the same file and image, in three layers:
//   1. preprocessing: our input tensor equals the one the backend fed the module, exactly;
//   2. postprocessing: the backend's raw outputs through our decode give its detections (same
//      classes and order; boxes and scores to float32 rounding);
//   3. end to end: our forward on our input gives the same detections.
// Then the job: `profile infer` on an export profiles it under its family's name, and what the
// engine cannot do with an export, or with another family's own checkpoint, says why and how.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/engine/data/image_io.h"
#include "server/engine/engine.h"
#include "server/engine/infer/torchscript_model.h"
#include "server/engine/job/model_loader.h"
#include "tests/engine/infer/detection_match.h"
#include "tests/support/test_files.h"

namespace libreyolo::engine {
namespace {

const std::string kScript =
    std::string(LIBREYOLO_SOURCE_DIR) + "/tests/engine/torchscript/make_exports.py";
constexpr char kFamilies[] = LIBREYOLO_TORCHSCRIPT_FAMILIES;

struct Exports {
  std::unique_ptr<test::TempDir> dir;  // made by this process
  std::string path;
  std::string error;
};

// ctest makes the exports once for every test case (the engine_torchscript_exports fixture,
// which sets LIBREYOLO_TORCHSCRIPT_EXPORTS); run by hand, the binary makes its own.
Exports& MadeExports() {
  static Exports* e = [] {
    auto* x = new Exports;
    if (const char* made = std::getenv("LIBREYOLO_TORCHSCRIPT_EXPORTS");
        made != nullptr && std::ifstream(std::string(made) + "/yolox.reference.json").good()) {
      x->path = made;
      return x;
    }
    x->dir = std::make_unique<test::TempDir>("tsexport");
    x->path = x->dir->path();
    const std::string command =
        absl::StrCat("'", LIBREYOLO_PYTHON, "' '", kScript, "' '", x->path,
                     "' --native --families ", kFamilies, " 2>&1");
    std::string out;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
      char buffer[4096];
      size_t n = 0;
      while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
      const int status = ::pclose(pipe);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) x->error = command + "\n" + out;
    } else {
      x->error = "cannot run " + command;
    }
    return x;
  }();
  return *e;
}

using test_match::ExpectSameDetections;
using test_match::ReadJson;
using test_match::ReadNpy;

class TorchScriptFamily : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const Exports& e = MadeExports();
    ASSERT_TRUE(e.error.empty()) << e.error;
    base_ = e.path + "/" + GetParam();
    reference_ = ReadJson(base_ + ".reference.json");
    ASSERT_TRUE(reference_.IsObject()) << base_;
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

  std::string base_;
  rapidjson::Document reference_;
  std::unique_ptr<TorchScriptModel> model_;
  cv::Mat image_;
  PostprocessOptions options_;
};

TEST_P(TorchScriptFamily, MetadataNamesTheFamilyAndItsSize) {
  const ExportMetadata& m = model_->metadata();
  EXPECT_EQ(std::string(m.family->name), GetParam());
  EXPECT_EQ(m.size, reference_["size"].GetString());
  EXPECT_EQ(m.height, reference_["imgsz"][0].GetInt64());
  EXPECT_EQ(m.width, reference_["imgsz"][1].GetInt64());
  EXPECT_EQ(m.num_classes, 80);
  ASSERT_EQ(m.class_names.size(), 80u);
  EXPECT_EQ(m.class_names[0], "person");
}

TEST_P(TorchScriptFamily, InputEqualsThePythonBackendsExactly) {
  ExportGeometry g;
  auto input = model_->ToInput({model_->Canvas(image_, &g)});
  ASSERT_TRUE(input.ok()) << input.status();
  const torch::Tensor want = ReadNpy(base_ + ".input.npy");
  ASSERT_EQ(input->sizes(), want.sizes());
  const double diff = (*input - want).abs().max().item<double>();
  EXPECT_EQ(diff, 0.0) << GetParam() << ": " << (*input != want).sum().item<int64_t>()
                       << " values differ";
}

TEST_P(TorchScriptFamily, ThePythonOutputsDecodeToItsDetections) {
  ExportGeometry g;
  (void)model_->Canvas(image_, &g);
  std::vector<torch::Tensor> outs;
  for (int i = 0; i < 2; ++i) {
    const std::string path = absl::StrCat(base_, ".output", i, ".npy");
    if (std::ifstream(path).good()) outs.push_back(ReadNpy(path));
  }
  ASSERT_FALSE(outs.empty());
  torch::IValue output = outs.size() == 1 ? torch::IValue(outs[0])
                                          : torch::IValue(c10::ivalue::Tuple::create({outs[0], outs[1]}));
  auto dets = model_->Postprocess(output, options_, {g});
  ASSERT_TRUE(dets.ok()) << dets.status();
  ASSERT_EQ(dets->size(), 1u);
  ExpectSameDetections((*dets)[0], reference_["detections"], GetParam(), 1e-3, 1e-6, options_.conf);
}

TEST_P(TorchScriptFamily, ForwardGivesThePythonBackendsDetections) {
  torch::InferenceMode guard;
  ExportGeometry g;
  auto input = model_->ToInput({model_->Canvas(image_, &g)});
  ASSERT_TRUE(input.ok()) << input.status();
  auto dets = model_->Postprocess(model_->Forward(*input), options_, {g});
  ASSERT_TRUE(dets.ok()) << dets.status();
  ExpectSameDetections((*dets)[0], reference_["detections"], GetParam(), 0.5, 1e-4, options_.conf);
}

// --batch > 1 with an export: where the traced graph takes a batch (YOLO9, YOLOX, YOLO7,
// RT-DETR, LW-DETR traced at 1 do), each image of it decodes to its own detections; where it
// does not (D-FINE's and DEIM's index a [1, ...] buffer), the probe refuses with the way out.
TEST_P(TorchScriptFamily, ABatchRunsWhereTheTraceTakesItAndIsRefusedWhereItDoesNot) {
  torch::InferenceMode guard;
  const absl::Status probe = model_->CheckBatch(2);
  const bool refuses = GetParam() == "dfine" || GetParam() == "deim";
  ASSERT_EQ(probe.ok(), !refuses) << probe;
  if (refuses) {
    EXPECT_TRUE(absl::IsInvalidArgument(probe)) << probe;
    EXPECT_NE(probe.message().find("does not run a batch of 2"), std::string::npos) << probe;
    EXPECT_NE(probe.message().find("--batch 1, or export it again at this batch"),
              std::string::npos)
        << probe;
    return;
  }
  ExportGeometry g;
  const cv::Mat canvas = model_->Canvas(image_, &g);
  auto input = model_->ToInput({canvas, canvas});
  ASSERT_TRUE(input.ok()) << input.status();
  auto dets = model_->Postprocess(model_->Forward(*input), options_, {g, g});
  ASSERT_TRUE(dets.ok()) << dets.status();
  ASSERT_EQ(dets->size(), 2u);
  // A batch runs other kernels than one image (YOLO9's raw boxes move by ~1e-3 relative):
  // boxes within 2 px (the single-image test's 0.5), scores within the same 1e-4.
  for (int i = 0; i < 2; ++i) {
    ExpectSameDetections((*dets)[static_cast<size_t>(i)], reference_["detections"],
                         absl::StrCat(GetParam(), " image ", i, " of 2"), 2.0, 1e-4,
                         options_.conf);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TorchScriptFamily,
                         ::testing::Values("yolo9", "yolox", "yolo7", "dfine", "deim", "rtdetr", "lwdetr"),
                         [](const auto& p) { return p.param; });

TEST(ExportMetadata, RefusesWhatTheEngineDoesNotRun) {
  EXPECT_FALSE(ParseExportMetadata("not json", "m.torchscript").ok());
  EXPECT_FALSE(ParseExportMetadata("{}", "m.torchscript").ok());
  auto seg = ParseExportMetadata(R"({"model_family": "yolo9", "task": "segment"})", "m");
  ASSERT_FALSE(seg.ok());
  EXPECT_NE(seg.status().message().find("detection"), std::string::npos) << seg.status();
  // A family without a row loads (its forward can run); its decode is refused with the shapes
  // of its outputs (engine_torchscript_registry_test checks that message).
  auto other = ParseExportMetadata(R"({"model_family": "newdet", "size": "s"})", "m");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->family_name, "newdet");
  EXPECT_FALSE(other->family->unsupported.empty());
  EXPECT_EQ(other->Label(), "newdet-s");
  EXPECT_FALSE(ParseExportMetadata(R"({"model_family": "yolox", "imgsz_h": 320})", "m").ok());
  EXPECT_FALSE(ParseExportMetadata(R"({"model_family": "yolox", "imgsz": 1e300})", "m").ok());
  EXPECT_FALSE(
      ParseExportMetadata(R"({"model_family": "yolox", "imgsz_h": 320, "imgsz_w": 640})", "m")
          .ok());  // YOLOX is square
  EXPECT_FALSE(ParseExportMetadata(R"({"model_family": "yolox", "nc": -1})", "m").ok());
  EXPECT_FALSE(
      ParseExportMetadata(R"({"model_family": "yolox", "nc": 2, "names": {"7": "x"}})", "m").ok());
  auto ok = ParseExportMetadata(
      R"({"model_family": "yolo9", "size": "t", "imgsz_h": 320, "imgsz_w": 640, "nc": 2,
          "names": {"0": "cat", "1": "dog"}, "letterbox_pad": "center"})",
      "m");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->Label(), "LibreYOLO9t");
  EXPECT_EQ(ok->width, 640);
  EXPECT_EQ(ok->class_names[1], "dog");
}

class TorchScriptJob : public ::testing::Test {
 protected:
  void SetUp() override {
    const Exports& e = MadeExports();
    ASSERT_TRUE(e.error.empty()) << e.error;
    exports_ = e.path;
    out_ = std::make_unique<test::TempDir>("tsjob");
    spec_.model.device = "cpu";
    spec_.model.threads = 1;
    spec_.warmup = 1;
    spec_.runs = 3;
    spec_.profiled_runs = 1;
    spec_.project = out_->path() + "/runs";
  }
  std::string exports_;
  std::unique_ptr<test::TempDir> out_;
  InferJobSpec spec_;
};

TEST_F(TorchScriptJob, ProfilesAnExportUnderItsFamilysName) {
  spec_.profiler.probe_overhead = false;  // the switches' probe is InferJob's subject, not this
  for (const char* family : {"yolox", "dfine"}) {
    SCOPED_TRACE(family);
    spec_.model.weights = absl::StrCat(exports_, "/", family, ".torchscript");
    std::vector<std::string> notices;
    auto r = RunInferJob(
        spec_, [&](const JobProgress& p) { if (!p.message.empty()) notices.push_back(p.message); },
        nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    const Profile& p = r->profile;
    EXPECT_EQ(p.model, std::string(family) == "yolox" ? "LibreYOLOXn" : "LibreDFINEn");
    rapidjson::Document config;
    config.Parse(p.config_json.c_str());
    ASSERT_TRUE(config.IsObject()) << p.config_json;
    EXPECT_STREQ(config["format"].GetString(), "torchscript");
    EXPECT_STREQ(config["model_family"].GetString(), family);
    EXPECT_EQ(config["imgsz"].GetInt64(), 320);  // the export's, not the job's 640
    rapidjson::Document prof;
    prof.Parse(p.profiler_json.c_str());
    ASSERT_TRUE(prof.IsObject()) << p.profiler_json;
    // Module scopes were asked for (the default) and cannot exist: off in the record, and why.
    EXPECT_FALSE(prof["with_modules"].GetBool());
    ASSERT_TRUE(prof.HasMember("notes")) << p.profiler_json;
    EXPECT_NE(p.profiler_json.find("module scopes n/a"), std::string::npos) << p.profiler_json;
    ASSERT_TRUE(p.step_ms.has_value());
    EXPECT_GT(*p.step_ms, 0.0);
    ASSERT_FALSE(notices.empty());
    EXPECT_NE(notices.front().find("imgsz 640 does not apply"), std::string::npos)
        << notices.front();
  }
}

// An export made with --half runs in fp16 (on the CPU too, without --half, which is for CUDA's
// autocast) and its profile says so; an fp32 one says fp32.
TEST_F(TorchScriptJob, AnFp16ExportRunsInFp16AndTheProfileSaysSo) {
  spec_.profiler.probe_overhead = false;  // the precision is the subject, not the probe
  for (const char* file : {"yolox.fp16", "yolox"}) {
    SCOPED_TRACE(file);
    spec_.model.weights = absl::StrCat(exports_, "/", file, ".torchscript");
    auto r = RunInferJob(spec_, nullptr, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    rapidjson::Document config;
    config.Parse(r->profile.config_json.c_str());
    ASSERT_TRUE(config.IsObject() && config.HasMember("export_precision"))
        << r->profile.config_json;
    EXPECT_STREQ(config["export_precision"].GetString(),
                 std::string(file) == "yolox" ? "fp32" : "fp16");
    EXPECT_FALSE(config["half"].GetBool());
    EXPECT_GT(r->profile.step_ms.value_or(0), 0.0);
  }
}

TEST_F(TorchScriptJob, ABatchTheExportCannotRunIsRefusedWithTheWayOut) {
  spec_.model.weights = exports_ + "/dfine.torchscript";
  spec_.batch = 4;
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("run it with --batch 1"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("--batch 4"), std::string::npos) << r.status();
}

TEST_F(TorchScriptJob, TrainingAnExportIsRefusedAndPointsToProfileInfer) {
  auto m = LoadModel(exports_ + "/yolo9.torchscript", "t", 2);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  EXPECT_NE(m.status().message().find("is a TorchScript export"), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("libreyolo profile infer --weights"), std::string::npos);
}

TEST_F(TorchScriptJob, AnotherFamilysCheckpointNamesItAndTheExportCommand) {
  // The Python tool's own YOLOX checkpoint (its save()): a yolox, not a broken LibreYOLO9.
  spec_.model.weights = exports_ + "/yolox.pt";
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  const std::string message(r.status().message());
  EXPECT_NE(message.find("is a yolox checkpoint (model_family \"yolox\", size \"n\")"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("libreyolo export --model " + spec_.model.weights +
                         " --format torchscript"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace libreyolo::engine
