// SubmitJob's checks without a server: field validation names the field, paths are refused
// unless the caller may name them, and named inputs must exist in the daemon's directories.
#include "server/daemon/rpc/request_validation.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/job_spec/job_spec.h"
#include "server/daemon/rpc/rpc_edge.h"

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

// Issue 10: one validator (wire/job_spec/job_spec.h) with the limits. An unset option is
// checked at its default, the value the job will run with: a daemon whose max_imgsz is under
// the default 640 refuses a job that leaves --imgsz out (it used to run it at 640), and one
// whose max_batch is under run's default 16 refuses a run without --batch.
TEST(ValidateSubmit, AnUnsetOptionIsCheckedAtItsDefault) {
  DaemonConfig c;
  c.limits.max_imgsz = 320;
  c.limits.max_batch = 8;
  std::string device;
  v1::SubmitJobRequest infer;
  infer.mutable_infer()->mutable_model()->set_device("cpu");
  absl::Status s = ValidateSubmit(infer, c, Tcp(), &device);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(Message(s),
              HasSubstr("--imgsz (infer.imgsz): 640 exceeds this daemon's max_imgsz (320)"));
  infer.mutable_infer()->set_imgsz(320);
  EXPECT_TRUE(ValidateSubmit(infer, c, Tcp(), &device).ok());
  v1::SubmitJobRequest run;
  run.mutable_run()->set_data("synthetic:8");
  run.mutable_run()->set_imgsz(64);
  run.mutable_run()->mutable_model()->set_device("cpu");
  s = ValidateSubmit(run, c, Tcp(), &device);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(Message(s),
              HasSubstr("--batch (run.batch): 16 exceeds this daemon's max_batch (8)"));
  run.mutable_run()->set_batch(-1);  // auto stays allowed
  EXPECT_TRUE(ValidateSubmit(run, c, Tcp(), &device).ok());
}

// Issue 22: 0 silently meant the default (--imgsz 0 ran at 640, --steps 0 at 20 and the error
// then spoke of 20 steps). Absent is the default; a 0 that is set is refused, naming the field.
TEST(ValidateSubmit, ZeroIsAnErrorWhereZeroMakesNoSenseAbsentIsTheDefault) {
  DaemonConfig c;
  std::string device;
  using Set = std::function<void(v1::SubmitJobRequest&)>;
  const std::vector<std::pair<std::string, Set>> zeros = {
      {"--imgsz (infer.imgsz)", [](auto& r) { r.mutable_infer()->set_imgsz(0); }},
      {"--batch (infer.batch)", [](auto& r) { r.mutable_infer()->set_batch(0); }},
      {"--max-det (infer.max_det)", [](auto& r) { r.mutable_infer()->set_max_det(0); }},
      {"--repeat (infer.repeat)", [](auto& r) { r.mutable_infer()->set_repeat(0); }},
      {"--runs (infer.runs)", [](auto& r) { r.mutable_infer()->set_runs(0); }},
      {"--imgsz (run.imgsz)", [](auto& r) { r.mutable_run()->set_imgsz(0); }},
      {"--batch (run.batch)", [](auto& r) { r.mutable_run()->set_batch(0); }},
      {"--steps (run.steps)", [](auto& r) { r.mutable_run()->set_steps(0); }},
      {"--repeat (run.repeat)", [](auto& r) { r.mutable_run()->set_repeat(0); }},
      {"--cycles (run.cycles)", [](auto& r) { r.mutable_run()->set_cycles(0); }},
  };
  for (const auto& [field, set] : zeros) {
    v1::SubmitJobRequest r;
    const bool infer = field.find("infer.") != std::string::npos;
    if (infer) {
      r.mutable_infer()->mutable_model()->set_device("cpu");
    } else {
      r.mutable_run()->set_data("synthetic:8");
      r.mutable_run()->mutable_model()->set_device("cpu");
    }
    EXPECT_TRUE(ValidateSubmit(r, c, Tcp(), &device).ok()) << field << ": absent is the default";
    set(r);
    const absl::Status s = ValidateSubmit(r, c, Tcp(), &device);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field << ": " << s;
    EXPECT_THAT(Message(s), HasSubstr(field)) << s;
    EXPECT_THAT(Message(s), HasSubstr("0")) << s;
  }
}

// The imgsz grid is the engine's (32..4096, multiples of 32) whatever a daemon's max_imgsz
// says: a daemon configured above it refuses 6400 at submission (it used to accept it and the
// engine failed the job), and below it the configured limit is what the message names.
// A further CPU slot is a CPU device: what a cpu job may not ask for, a cpu:1 job may not either.
TEST(ValidateSubmit, ACpuSlotIsCheckedAsTheCpu) {
  DaemonConfig c;
  c.devices = {"cpu", "cpu:1"};
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_infer()->mutable_model()->set_device("cpu:1");
  ASSERT_TRUE(ValidateSubmit(r, c, Tcp(), &device).ok());
  EXPECT_EQ(device, "cpu:1");
  r.mutable_infer()->set_half(true);
  const absl::Status s = ValidateSubmit(r, c, Tcp(), &device);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("infer.half"));
}

// limits.max_attach_duration_ms (--max-attach-duration-ms): an operator's cap on how long an
// attach job may trace a running process, under the job spec's own bound (10 minutes).
TEST(ValidateSubmit, AnAttachLongerThanTheDaemonsCapIsRefusedNamingIt) {
  DaemonConfig c;
  c.attach_dir = "/run/libreyolo/attach";
  c.limits.max_attach_duration_ms = 5000;
  Identity admin = Tcp();
  admin.admin = true;  // may attach to any process (the caller's identity is not what is tested)
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_attach()->add_pids(4242);
  r.mutable_attach()->set_duration_ms(5000);
  const absl::Status at = ValidateSubmit(r, c, admin, &device);
  ASSERT_TRUE(at.ok()) << at;
  EXPECT_EQ(device, "attach");  // the attach lane
  r.mutable_attach()->set_duration_ms(5001);
  const absl::Status over = ValidateSubmit(r, c, admin, &device);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_THAT(Message(over), HasSubstr("attach.duration_ms"));
  EXPECT_THAT(Message(over), HasSubstr("5001 exceeds this daemon's max_attach_duration_ms (5000)"));
  // Past the job spec's own bound it is the request that is wrong, whatever the cap.
  c.limits.max_attach_duration_ms = jobspec::bounds::kMaxAttachDurationMs;
  r.mutable_attach()->set_duration_ms(jobspec::bounds::kMaxAttachDurationMs + 1);
  EXPECT_EQ(ValidateSubmit(r, c, admin, &device).code(),
            absl::StatusCode::kInvalidArgument);
  // Iterations are not a duration: the cap does not apply to them.
  c.limits.max_attach_duration_ms = 1;
  r.mutable_attach()->clear_duration_ms();
  r.mutable_attach()->set_iterations(3);
  EXPECT_TRUE(ValidateSubmit(r, c, admin, &device).ok());
}

TEST(ValidateSubmit, ImgszGridIsTheEnginesWhateverTheLimit) {
  DaemonConfig c;
  c.limits.max_imgsz = 8192;
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_infer()->mutable_model()->set_device("cpu");
  r.mutable_infer()->set_imgsz(6400);
  const absl::Status s = ValidateSubmit(r, c, Tcp(), &device);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(Message(s), HasSubstr("6400 is outside 32..4096 (a multiple of 32 in that range, e.g. 640)"));
  r.mutable_infer()->set_imgsz(4096);
  EXPECT_TRUE(ValidateSubmit(r, c, Tcp(), &device).ok());
  // The engine tool validates with no daemon limits: the same grid.
  EXPECT_TRUE(jobspec::ValidateInferSpec(r.infer(), {}, true).ok());
  r.mutable_infer()->set_imgsz(4128);
  EXPECT_TRUE(absl::IsInvalidArgument(jobspec::ValidateInferSpec(r.infer(), {}, true)));
}

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
  // The CPU collector: native or libtorch; the message names the field, the flag and the values.
  bad([](auto& x) { x.mutable_infer()->mutable_profiler()->set_collector("kineto"); },
      "--collector (infer.profiler.collector): 'kineto' is not native or libtorch", kInvalid);
  bad([](auto& x) { x.mutable_infer()->mutable_profiler()->set_collector("NATIVE"); },
      "infer.profiler.collector", kInvalid);
  bad([](auto& x) { (*x.mutable_labels())["Team"] = "a"; }, "labels", kInvalid);
  bad([](auto& x) { x.set_priority(99); }, "priority", kInvalid);
  bad([](auto& x) { x.set_max_wall_seconds(-1); }, "max_wall_seconds: -1 is outside", kInvalid);
  bad([](auto& x) { x.set_max_wall_seconds(INT64_MAX); }, "max_wall_seconds", kInvalid);
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
  // Issue 38: auto or none ("" is auto); anything else names the flag and the two values.
  bad([](auto& x) { x.mutable_infer()->set_postprocess("nms"); },
      "--postprocess (infer.postprocess): 'nms' is not auto (the model's decode) or none",
      kInvalid);
  bad([](auto& x) { x.mutable_infer()->set_postprocess("None"); }, "--postprocess", kInvalid);
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

// A data-parallel run's options (issue 21): bounds from the one validator, named by their
// flags; the slots say the device when the request does not.
TEST(ValidateSubmit, DataParallelOptions) {
  DaemonConfig c;
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_run()->set_data("synthetic:8");
  r.mutable_run()->mutable_model()->set_device("cpu");
  r.mutable_run()->mutable_data_parallel()->set_nproc(2);
  EXPECT_TRUE(ValidateSubmit(r, c, Tcp(), &device).ok());
  auto bad = [&](auto mutate, const std::string& what) {
    v1::SubmitJobRequest x = r;
    mutate(*x.mutable_run()->mutable_data_parallel());
    const absl::Status s = ValidateSubmit(x, c, Tcp(), &device);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what << ": " << s;
    EXPECT_THAT(Message(s), HasSubstr(what));
  };
  using Dp = v1::DataParallelOptions;
  bad([](Dp& d) { d.set_nproc(65); }, "--nproc (run.data_parallel.nproc): 65 is outside 0..64");
  bad([](Dp& d) { d.set_nproc(-1); }, "--nproc (run.data_parallel.nproc)");
  bad([](Dp& d) { d.set_nproc(3); d.add_devices("cpu"); d.add_devices("cpu:1"); },
      "3 ranks but --devices names 2 slots");
  bad([](Dp& d) { d.set_backend("mpi"); }, "--dist-backend (run.data_parallel.backend): 'mpi'");
  bad([](Dp& d) { d.set_backend("nccl"); }, "nccl needs CUDA devices");
  bad([](Dp& d) { d.set_bucket_cap_mb(0); }, "--bucket-cap-mb (run.data_parallel.bucket_cap_mb)");
  bad([](Dp& d) { d.set_bucket_cap_mb(std::nan("")); }, "--bucket-cap-mb");
  bad([](Dp& d) { d.set_bucket_cap_mb(1e9); }, "--bucket-cap-mb");
  bad([](Dp& d) { d.set_timeout_s(0); }, "--dist-timeout (run.data_parallel.timeout_s)");
  bad([](Dp& d) { d.set_timeout_s(INT64_MAX); }, "--dist-timeout");
  bad([](Dp& d) { d.set_nproc(0); d.add_devices(std::string(100, 'x')); },
      "run.data_parallel.devices");
  // Across hosts: the scheduler's rendezvous, every value bounded and named by its flag.
  auto hosts = [](Dp& d) {
    v1::Rendezvous* h = d.mutable_rendezvous();
    h->set_nnodes(2);
    h->set_node_rank(1);
    h->set_master_addr("node0.cluster");
    h->set_master_port(29500);
  };
  {
    v1::SubmitJobRequest x = r;
    hosts(*x.mutable_run()->mutable_data_parallel());
    EXPECT_TRUE(ValidateSubmit(x, c, Tcp(), &device).ok());
  }
  using Rv = v1::Rendezvous;
  auto bad_host = [&](void (*mutate)(Rv&), const std::string& what) {
    bad(
        [&](Dp& d) {
          hosts(d);
          mutate(*d.mutable_rendezvous());
        },
        what);
  };
  bad_host([](Rv& h) { h.set_node_rank(2); },
           "--node-rank (run.data_parallel.rendezvous.node_rank): 2 is outside 0..1");
  bad_host([](Rv& h) { h.set_node_rank(-1); }, "--node-rank");
  bad_host([](Rv& h) { h.set_nnodes(INT32_MAX); },
           "--nnodes (run.data_parallel.rendezvous.nnodes): 2147483647 is outside 0..1024");
  bad_host([](Rv& h) { h.set_nnodes(600); }, "600 hosts of 2 ranks are 1200 ranks; at most 1024");
  bad_host([](Rv& h) { h.set_master_addr(""); }, "--master-addr");
  bad_host([](Rv& h) { h.set_master_addr(std::string(300, 'a')); }, "--master-addr");
  bad_host([](Rv& h) { h.set_master_addr("evil\x1b[2J;rm"); }, "is not a host name or address");
  bad_host([](Rv& h) { h.set_master_port(0); },
           "--master-port (run.data_parallel.rendezvous.master_port): required");
  bad_host([](Rv& h) { h.set_master_port(65536); }, "65536 is outside 1..65535");
  bad_host([](Rv& h) { h.set_master_port(-5); }, "--master-port");
  bad_host([](Rv& h) { h.set_group_id(std::string(129, 'g')); }, "--group-id");
  bad_host([](Rv& h) { h.set_group_id("a b"); }, "--group-id");
  // A rendezvous without a host count is refused, not ignored.
  bad([](Dp& d) { d.mutable_rendezvous()->set_master_addr("node0"); },
      "--nnodes (run.data_parallel.rendezvous.nnodes): 0 hosts, but a rendezvous across hosts");
  // Without model.device, the first slot is the job's device.
  v1::SubmitJobRequest slots;
  slots.mutable_run()->set_data("synthetic:8");
  slots.mutable_run()->mutable_data_parallel()->add_devices("cpu:1");
  slots.mutable_run()->mutable_data_parallel()->add_devices("cpu");
  EXPECT_TRUE(ValidateSubmit(slots, c, Tcp(), &device).ok());
  EXPECT_EQ(device, "cpu:1");
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

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Issue 9 item 7: with limits as high as an admin may set them, no sum or product of counts
// wraps around to pass the check.
TEST(ValidateSubmit, SumsAndProductsOfCountsDoNotWrap) {
  DaemonConfig c;
  c.limits.max_runs = kMax;
  c.limits.max_steps = kMax;
  c.limits.max_repeat = kMax;
  std::string device;
  v1::SubmitJobRequest infer;
  infer.mutable_infer()->mutable_model()->set_device("cpu");
  infer.mutable_infer()->set_warmup(kMax);
  infer.mutable_infer()->set_runs(1);
  absl::Status s = ValidateSubmit(infer, c, Tcp(), &device);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(Message(s), HasSubstr("infer.warmup + infer.runs"));
  v1::SubmitJobRequest run;
  run.mutable_run()->mutable_model()->set_device("cpu");
  run.mutable_run()->set_data("synthetic");
  for (auto set : std::vector<std::function<void(v1::RunSpec*)>>{
           [](v1::RunSpec* r) {
             r->set_repeat(2);
             r->set_steps(int64_t{1} << 62);
           },
           [](v1::RunSpec* r) {
             r->set_repeat(4);
             r->set_steps((int64_t{1} << 62) + 1);
           },
           [](v1::RunSpec* r) {
             r->set_cycles(100);
             r->set_wait(kMax / 64);
           },
           [](v1::RunSpec* r) {
             r->set_skip_first(kMax);
             r->set_steps(1);
           }}) {
    v1::SubmitJobRequest x = run;
    set(x.mutable_run());
    s = ValidateSubmit(x, c, Tcp(), &device);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_THAT(Message(s), HasSubstr("more than 2^63"));
  }
  // With the default limits each count is bounded on its own, naming the field and the limit.
  c = DaemonConfig();
  run.mutable_run()->set_wait(kMax);
  s = ValidateSubmit(run, c, Tcp(), &device);
  EXPECT_THAT(Message(s),
              HasSubstr("--wait (run.wait): 9223372036854775807 exceeds this daemon's max_steps "
                        "(1000)"));
}

TEST(ValidateSubmit, NonFiniteNumbersAndSyntheticCounts) {
  DaemonConfig c;
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_infer()->mutable_model()->set_device("cpu");
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1e-9, 1.0000001}) {
    v1::SubmitJobRequest x = r;
    x.mutable_infer()->set_conf(bad);
    EXPECT_THAT(Message(ValidateSubmit(x, c, Tcp(), &device)), HasSubstr("infer.conf"));
  }
  v1::SubmitJobRequest run;
  run.mutable_run()->mutable_model()->set_device("cpu");
  for (const char* ok : {"synthetic", "synthetic:1", "synthetic:1000000", "coco128"}) {
    run.mutable_run()->set_data(ok);
    EXPECT_TRUE(ValidateSubmit(run, c, Tcp(), &device).ok()) << ok;
  }
  for (const char* bad : {"synthetic:0", "synthetic:-5", "synthetic:abc", "synthetic:99999999999",
                          "synthetic:1000001", "synthetic:", "synthetic:0x10"}) {
    run.mutable_run()->set_data(bad);
    const absl::Status s = ValidateSubmit(run, c, Tcp(), &device);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(Message(s), HasSubstr("1..1000000"));
  }
}

// Item 8: values are echoed as short excerpts, with control characters escaped.
TEST(ValidateSubmit, EchoesOnlyAShortEscapedExcerpt) {
  DaemonConfig c;
  std::string device;
  v1::SubmitJobRequest r;
  r.mutable_infer()->mutable_model()->set_device("cpu");
  r.mutable_infer()->mutable_model()->set_weights(std::string(10 << 20, 'w') + "/x");
  absl::Status s = ValidateSubmit(r, c, Tcp(), &device);
  EXPECT_THAT(Message(s), HasSubstr("(10485762 bytes)"));
  EXPECT_LT(Message(s).size(), 300u);
  r.mutable_infer()->mutable_model()->set_weights("\x1b[31mred/x");
  s = ValidateSubmit(r, c, Tcp(), &device);
  EXPECT_THAT(Message(s), HasSubstr("\\x1b[31mred/x"));
  EXPECT_EQ(Message(s).find('\x1b'), std::string::npos);
}

TEST(ValidateSubmit, LabelCharacterSet) {
  EXPECT_TRUE(IsLabelKey("team"));
  EXPECT_TRUE(IsLabelKey("ci/run-id_2.x"));
  EXPECT_FALSE(IsLabelKey("Team"));
  EXPECT_FALSE(IsLabelKey(std::string(64, 'k')));
  EXPECT_TRUE(IsLabelValue("Grüße, 東京 – ok"));
  EXPECT_TRUE(IsLabelValue(""));
  for (const std::string& bad : {std::string("a\x1b[2J"), std::string("a\rb"), std::string("a\nb"),
                                std::string("a\tb"), std::string("\xc2\x9b"),
                                std::string("\xe2\x80\xae"), std::string("\xff"),
                                std::string(257, 'v')}) {
    EXPECT_FALSE(IsLabelValue(bad)) << bad.size();
  }
}

TEST(ValidateRequest, JobIdsAndReaderOptions) {
  EXPECT_THAT(Message(ValidateJobId("job_id", "")), HasSubstr("job_id: required"));
  EXPECT_TRUE(ValidateJobId("job_id", "20261130-0123456789abcdef").ok());
  EXPECT_EQ(ValidateJobId("job_id", std::string(1 << 20, 'j')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_LT(Message(ValidateJobId("job_id", std::string(1 << 20, 'j'))).size(), 300u);
  EXPECT_FALSE(ValidateJobId("job_id", "../x").ok());
  v1::GetJobRequest get;
  EXPECT_THAT(Message(ValidateRequest(get)), HasSubstr("job_id: required"));
  v1::WatchJobRequest watch;
  watch.set_job_id("a");
  watch.set_from_sequence(-1);
  EXPECT_THAT(Message(ValidateRequest(watch)), HasSubstr("from_sequence"));
  v1::KernelsRequest k;
  k.mutable_profile()->set_job_id("a");
  EXPECT_TRUE(ValidateRequest(k).ok());
  k.set_top(-5);
  EXPECT_THAT(Message(ValidateRequest(k)), HasSubstr("top: -5 is outside 0..100000"));
  k.set_top(0);
  k.set_grep(std::string(257, 'g'));
  EXPECT_THAT(Message(ValidateRequest(k)), HasSubstr("grep"));
  v1::OpsRequest o;
  o.mutable_profile()->set_job_id("a");
  o.set_top(-1);
  EXPECT_THAT(Message(ValidateRequest(o)), HasSubstr("top"));
  v1::WhatIfRequest w;
  w.mutable_profile()->set_job_id("a");
  w.set_remove_launches(std::nan(""));
  EXPECT_THAT(Message(ValidateRequest(w)), HasSubstr("remove_launches"));
  v1::CompareRequest cmp;
  cmp.mutable_before()->set_job_id("a");
  EXPECT_THAT(Message(ValidateRequest(cmp)), HasSubstr("after.job_id: required"));
  v1::ListJobsRequest list;
  list.add_states(static_cast<v1::JobState>(99));
  EXPECT_THAT(Message(ValidateRequest(list)), HasSubstr("states"));
}

// Item 11: the daemon's directories become their short names, at path boundaries only.
TEST(PathRedactor, ShowsDirectoriesByTheirShortNames) {
  DaemonConfig c;
  c.models_dir = "/srv/lyd/models";
  c.datasets_dir = "/srv/lyd/data/";
  c.images_dir = "/srv/lyd/images";
  c.state_dir = "/srv/lyd/state";
  c.store_dir = "/srv/lyd/state/store";
  const PathRedactor r(c);
  EXPECT_EQ(r.Redact("model.weights: x.pt not found (looked at /srv/lyd/models/x.pt)"),
            "model.weights: x.pt not found (looked at models/x.pt)");
  EXPECT_EQ(r.Redact("cannot write /srv/lyd/state/store/.tmp/j1/profile.json: No space"),
            "cannot write store/.tmp/j1/profile.json: No space");
  EXPECT_EQ(r.Redact("/srv/lyd/state/jobs/a.json, /srv/lyd/data/coco.yaml"),
            "state/jobs/a.json, datasets/coco.yaml");
  EXPECT_EQ(r.Redact("in /srv/lyd/models."), "in models.");
  // Not a directory of the daemon: a longer name, or the prefix inside another path.
  EXPECT_EQ(r.Redact("/srv/lyd/models2/x and /x/srv/lyd/models/y"),
            "/srv/lyd/models2/x and /x/srv/lyd/models/y");
  // A relative directory in the config is found in its absolute form too.
  DaemonConfig rel;
  rel.models_dir = "m";
  const PathRedactor rr(rel);
  const std::string abs = (fs::current_path() / "m").string();
  EXPECT_EQ(rr.Redact("looked at " + abs + "/x.pt"), "looked at models/x.pt");
}

TEST(CapStatusMessage, CutsLongMessages) {
  EXPECT_EQ(CapStatusMessage("short"), "short");
  const std::string cut = CapStatusMessage(std::string(1 << 20, 'm'));
  EXPECT_LE(cut.size(), kMaxStatusMessageBytes);
  EXPECT_THAT(cut, HasSubstr("(1048576 bytes)"));
}

}  // namespace
}  // namespace libreyolo::daemon
