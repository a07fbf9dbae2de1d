// SubmitJob's checks without a server: field validation names the field, paths are refused
// unless the caller may name them, and named inputs must exist in the daemon's directories.
#include "server/daemon/request_validation.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

Identity Tcp() {
  Identity id;
  id.user = "alice";
  return id;
}

Identity SameUidOnUnix() {
  Identity id;
  id.user = "me";
  id.unix_peer = true;
  id.uid = ::getuid();
  return id;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(ValidateSubmit, NamesTheFieldOfEveryBadValue) {
  DaemonConfig c;
  std::string device;
  auto check = [&](v1::SubmitJobRequest r) { return ValidateSubmit(r, c, Tcp(), &device); };
  v1::SubmitJobRequest none;
  EXPECT_THAT(Message(check(none)), HasSubstr("spec"));
  v1::SubmitJobRequest r;
  r.mutable_infer()->mutable_model()->set_device("cpu");
  EXPECT_TRUE(check(r).ok());
  EXPECT_EQ(device, "cpu");
  auto bad = [&](auto mutate, const std::string& field, absl::StatusCode code) {
    v1::SubmitJobRequest x = r;
    mutate(x);
    const absl::Status s = check(x);
    EXPECT_EQ(s.code(), code) << field << ": " << s;
    EXPECT_THAT(Message(s), HasSubstr(field));
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  bad([](auto& x) { x.mutable_infer()->set_batch(-5); }, "infer.batch", kInvalid);
  bad([](auto& x) { x.mutable_infer()->set_batch(100000); }, "infer.batch",
      absl::StatusCode::kResourceExhausted);
  bad([](auto& x) { x.mutable_infer()->set_imgsz(33); }, "infer.imgsz", kInvalid);
  bad([](auto& x) { x.mutable_infer()->set_half(true); }, "infer.half", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_profiler()->add_activities("gpu"); },
      "infer.profiler.activities", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_profiler()->set_overhead_budget_pct(-1); },
      "overhead_budget_pct", kInvalid);
  bad([](auto& x) { (*x.mutable_labels())["Team"] = "a"; }, "labels", kInvalid);
  bad([](auto& x) { x.set_priority(99); }, "priority", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_model()->set_size("x"); }, "model.size", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_model()->set_weights("/etc/passwd"); },
      "model.weights", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_model()->set_weights("../etc/passwd"); },
      "model.weights", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_model()->set_device("gpu"); }, "model.device",
      kInvalid);
  // Messages name the CLI flag beside the field (issue 11), and a CPU job refuses cuda activity.
  bad([](auto& x) { x.mutable_infer()->set_half(true); }, "--half (infer.half)", kInvalid);
  bad([](auto& x) { x.mutable_infer()->set_max_det(-1); }, "--max-det (infer.max_det)", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_model()->set_device("gpu"); },
      "--device (model.device)", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_profiler()->add_activities("cuda"); },
      "--activities (infer.profiler.activities): cuda needs a CUDA device", kInvalid);
  v1::SubmitJobRequest run;
  run.mutable_run()->mutable_model()->set_device("cpu");
  EXPECT_THAT(Message(check(run)), HasSubstr("run.data"));
  run.mutable_run()->set_data("synthetic:8");
  EXPECT_TRUE(check(run).ok());
  run.mutable_run()->set_steps(100000);
  EXPECT_EQ(check(run).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ValidateSubmit, LocalPathsOnlyForAPrivateDaemonsOwnUid) {
  DaemonConfig c;
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_infer()->mutable_model()->set_device("cpu");
  r.mutable_infer()->mutable_model()->set_weights("/home/me/best.pt");
  EXPECT_FALSE(ValidateSubmit(r, c, SameUidOnUnix(), &device).ok());  // not allowed by config
  c.allow_local_paths = true;
  EXPECT_TRUE(ValidateSubmit(r, c, SameUidOnUnix(), &device).ok());
  EXPECT_FALSE(ValidateSubmit(r, c, Tcp(), &device).ok());  // TCP callers never
  Identity other = SameUidOnUnix();
  other.uid = ::getuid() + 1;
  EXPECT_FALSE(ValidateSubmit(r, c, other, &device).ok());
}

TEST(CheckInputsExist, LooksInTheDaemonsDirectories) {
  const fs::path dir = fs::temp_directory_path() / ("rv-" + std::to_string(::getpid()));
  fs::create_directories(dir / "models");
  fs::create_directories(dir / "datasets" / "coco8");
  std::ofstream(dir / "models" / "best.pt") << "x";
  std::ofstream(dir / "datasets" / "coco8" / "data.yaml") << "nc: 1\n";
  DaemonConfig c;
  c.models_dir = (dir / "models").string();
  c.datasets_dir = (dir / "datasets").string();
  c.images_dir = (dir / "images").string();
  v1::SubmitJobRequest r;
  r.mutable_infer();
  EXPECT_TRUE(CheckInputsExist(r, c).ok());  // the default weights, absent: random init
  r.mutable_infer()->mutable_model()->set_weights("best.pt");
  EXPECT_TRUE(CheckInputsExist(r, c).ok());
  r.mutable_infer()->mutable_model()->set_weights("missing.pt");
  const absl::Status w = CheckInputsExist(r, c);
  EXPECT_EQ(w.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(w), HasSubstr("model.weights: missing.pt"));
  r.mutable_infer()->mutable_model()->set_weights("");
  r.mutable_infer()->set_source("street");
  EXPECT_EQ(CheckInputsExist(r, c).code(), absl::StatusCode::kNotFound);
  v1::SubmitJobRequest run;
  run.mutable_run()->set_data("coco8");
  EXPECT_TRUE(CheckInputsExist(run, c).ok());
  run.mutable_run()->set_data("coco128");
  const absl::Status d = CheckInputsExist(run, c);
  EXPECT_EQ(d.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(d), HasSubstr("coco128.yaml"));
  run.mutable_run()->set_data("synthetic:4");
  EXPECT_TRUE(CheckInputsExist(run, c).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace libreyolo::daemon
