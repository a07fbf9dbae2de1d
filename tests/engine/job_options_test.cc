// Issue 10, section 2: a job's options have one schema (the proto's job spec), one flag table,
// one set of defaults, one validator and one conversion into the engine. These tests walk every
// field of InferSpec and RunSpec (with ModelOptions and ProfilerOptions) from the command-line
// flag through the spec, the validator and the conversion to a real engine job on the CPU, and
// read each value back from the written profile.json (common/load's reader): what was asked is
// what ran and what the profile says. A field added to the proto without a flag and a profile
// key fails the coverage check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/cli/args.h"
#include "client/cli/job_flags.h"
#include "common/load/load_profile.h"
#include "wire/job_spec/job_spec.h"
#include "server/engine/engine.h"
#include "server/worker/engine_spec.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::libreyolo::profiler::v1;
using ::testing::HasSubstr;

// One field: its flag words on the command line, and where its value shows in the profile
// ("config.imgsz", "profiler.record_shapes") with the JSON text expected there.
struct FieldWalk {
  std::string proto_field;  // "InferSpec.imgsz", "ModelOptions.threads"
  std::vector<std::string> words;
  std::string profile_key;
  std::string expected_json;
};

std::string JsonOf(const rapidjson::Value& v) {
  if (v.IsString()) return std::string("\"") + v.GetString() + "\"";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsNumber()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v.GetDouble());
    return buf;
  }
  return "?";
}

// The value at "config.x" / "profiler.x" of a profile read back by the profile reader.
std::string ProfileValue(const Profile& p, const std::string& key) {
  const std::vector<std::string> parts = absl::StrSplit(key, '.');
  rapidjson::Document d;
  const std::string& json = parts[0] == "config" ? p.config_json : p.profiler_json;
  d.Parse(json.data(), json.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember(parts[1].c_str())) return "<absent>";
  return JsonOf(d[parts[1].c_str()]);
}

// Every field of the messages a job spec is made of.
std::set<std::string> ProtoFields(const google::protobuf::Descriptor* d) {
  std::set<std::string> out;
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->message_type() != nullptr && f->name() != "images") {
      for (const std::string& sub : ProtoFields(f->message_type())) out.insert(sub);
    } else {
      out.insert(d->name() + "." + f->name());
    }
  }
  return out;
}

class JobOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/libreyolo_job_options_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Parses the walk's words with the shared flag table, as `libreyolo profile <cmd>` and
  // `libreyolo-engine <cmd>` do.
  cli::ParsedArgs Parse(const std::string& cmd, const std::vector<FieldWalk>& walk,
                        const std::vector<std::string>& positionals) {
    std::vector<std::string> words = positionals;
    for (const FieldWalk& w : walk) words.insert(words.end(), w.words.begin(), w.words.end());
    const cli::CommandSpec spec{cmd, "", "", {{"input", false, ""}},
                                cmd == "infer" ? cli::InferSpecFlags() : cli::RunSpecFlags()};
    auto parsed = cli::ParseArgs(spec, words);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() ? *parsed : cli::ParsedArgs{};
  }

  void ExpectWalked(const std::vector<FieldWalk>& walk, const Profile& p,
                    const std::set<std::string>& proto_fields,
                    const std::set<std::string>& not_in_profile) {
    std::set<std::string> walked;
    for (const FieldWalk& w : walk) {
      walked.insert(w.proto_field);
      if (w.profile_key.empty()) continue;
      EXPECT_EQ(ProfileValue(p, w.profile_key), w.expected_json)
          << w.proto_field << " (" << w.words[0] << ") at " << w.profile_key;
    }
    for (const std::string& f : proto_fields) {
      EXPECT_TRUE(walked.count(f) || not_in_profile.count(f))
          << f << ": a job spec field that no flag reaches or no profile key shows";
    }
  }

  fs::path dir_;
};

TEST_F(JobOptions, EveryInferFieldFromTheFlagToProfileJsonAndBack) {
  // Every value differs from its default, so a dropped flag shows.
  const std::vector<FieldWalk> walk = {
      {"ModelOptions.weights", {"--weights", "LibreYOLO9t.pt"}, "config.weights",
       "\"random-init\""},
      {"ModelOptions.size", {"--size", "s"}, "config.size", "\"s\""},
      {"ModelOptions.device", {"--device", "cpu"}, "config.device", "\"cpu\""},
      {"ModelOptions.threads", {"--threads", "2"}, "config.threads", "2"},
      {"InferSpec.batch", {"--batch", "2"}, "config.batch", "2"},
      {"InferSpec.imgsz", {"--imgsz", "64"}, "config.imgsz", "64"},
      {"InferSpec.half", {"--no-half"}, "config.half", "false"},
      {"InferSpec.amp_dtype", {"--amp-dtype", "bfloat16"}, "config.amp_dtype", "\"bfloat16\""},
      {"InferSpec.warmup", {"--warmup", "1"}, "config.warmup", "1"},
      {"InferSpec.runs", {"--runs", "3"}, "config.runs", "3"},
      {"InferSpec.repeat", {"--repeat", "2"}, "config.repeat", "2"},
      {"InferSpec.conf", {"--conf", "0.3"}, "config.conf", "0.3"},
      {"InferSpec.iou", {"--iou", "0.6"}, "config.iou", "0.6"},
      {"InferSpec.max_det", {"--max-det", "50"}, "config.max_det", "50"},
      {"InferSpec.postprocess", {"--postprocess", "none"}, "config.postprocess", "\"none\""},
      {"InferSpec.trace", {"--no-trace"}, "profiler.profiled_iterations", "0"},
      {"ProfilerOptions.activities", {"--activities", "cpu"}, "profiler.activities", "\"cpu\""},
      // Asked for, but --no-trace records nothing: the record says false (a switch record is
      // true only when the trace holds its data; switch_notes says why). The run walk below
      // has a trace and shows the switch reaching the engine.
      {"ProfilerOptions.record_shapes", {"--record-shapes"}, "profiler.record_shapes", "false"},
      {"ProfilerOptions.profile_memory", {"--no-profile-memory"}, "profiler.profile_memory",
       "false"},
      {"ProfilerOptions.with_flops", {"--no-with-flops"}, "profiler.with_flops", "false"},
      {"ProfilerOptions.with_modules", {"--no-with-modules"}, "profiler.with_modules", "false"},
      // Likewise: no collector recorded anything (the run walk shows libtorch recording).
      {"ProfilerOptions.collector", {"--collector", "libtorch"}, "profiler.cpu_collector",
       "\"none\""},
      {"ProfilerOptions.overhead_budget_pct", {"--overhead-budget", "7"},
       "profiler.overhead_budget_pct", "7"},
      {"ProfilerOptions.probe_overhead", {"--no-probe-overhead"}, "profiler.probe_overhead",
       "false"},
  };
  const cli::ParsedArgs args = Parse("infer", walk, {});
  v1::InferSpec spec;
  ASSERT_TRUE(cli::ReadInferSpec(args, &spec).ok());
  ASSERT_TRUE(jobspec::ValidateInferSpec(spec, {}, /*cpu=*/true).ok());
  const engine::InferJobSpec e = worker::ToEngineInferSpec(spec, "cpu", dir_.string());
  auto r = engine::RunInferJob(e, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  auto p = LoadProfile(r->profile_path);  // the reader every `profile` command uses
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(r->trace_path.empty());  // --no-trace
  // source (no flag: the positional; empty = the sample image, as here), images (the client
  // sends a local source inline to a --remote daemon), with_stack (the deprecated alias of
  // with_modules, JobOptionDefaults below; the profile's with_stack is always false).
  // weights_searched: no flag; the client fills it with where it looked for a bare --weights
  // (config.weights_searched of a random init: daemon_private_share_test).
  ExpectWalked(walk, *p, ProtoFields(v1::InferSpec::descriptor()),
               {"InferSpec.source", "InferSpec.images", "ProfilerOptions.with_stack",
                "ModelOptions.weights_searched"});
  EXPECT_EQ(ProfileValue(*p, "config.source"), "\"sample\"");
  // --postprocess none: the stage not run, its time null, the reason in the config.
  ASSERT_TRUE(p->stages_ms.has_value());
  EXPECT_FALSE(p->stages_ms->postprocess.has_value());
  EXPECT_TRUE(p->stages_ms->forward.has_value());
  EXPECT_NE(ProfileValue(*p, "config.postprocess_skipped").find("--postprocess none"),
            std::string::npos);
}

TEST_F(JobOptions, EveryRunFieldFromTheFlagToProfileJsonAndBack) {
  const std::string weights =
      std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";
  const std::vector<FieldWalk> walk = {
      {"ModelOptions.weights", {"--weights", weights}, "config.weights",
       "\"" + weights + "\""},
      {"ModelOptions.size", {"--size", "t"}, "config.size", "\"t\""},
      {"ModelOptions.device", {"--device", "cpu"}, "config.device", "\"cpu\""},
      {"ModelOptions.threads", {"--threads", "1"}, "config.threads", "1"},
      {"RunSpec.batch", {"--batch", "2"}, "config.batch", "2"},
      {"RunSpec.imgsz", {"--imgsz", "64"}, "config.imgsz", "64"},
      {"RunSpec.workers", {"--workers", "0"}, "config.workers", "0"},
      {"RunSpec.amp", {"--no-amp"}, "config.amp", "false"},
      {"RunSpec.steps", {"--steps", "2"}, "config.steps", "2"},
      {"RunSpec.warmup", {"--warmup", "1"}, "config.warmup", "1"},
      {"RunSpec.repeat", {"--repeat", "2"}, "config.repeat", "2"},
      {"RunSpec.skip_first", {"--skip-first", "1"}, "config.skip_first", "1"},
      {"RunSpec.wait", {"--wait", "1"}, "config.wait", "1"},
      {"RunSpec.cycles", {"--cycles", "2"}, "config.cycles", "2"},
      {"RunSpec.aux_weight", {"--aux-weight", "0.5"}, "config.aux_weight", "0.5"},
      {"ProfilerOptions.activities", {"--activities", "cpu"}, "profiler.activities", "\"cpu\""},
      {"ProfilerOptions.record_shapes", {"--no-record-shapes"}, "profiler.record_shapes",
       "false"},
      {"ProfilerOptions.profile_memory", {"--profile-memory"}, "profiler.profile_memory", "true"},
      {"ProfilerOptions.with_flops", {"--no-with-flops"}, "profiler.with_flops", "false"},
      {"ProfilerOptions.with_modules", {"--no-with-modules"}, "profiler.with_modules", "false"},
      {"ProfilerOptions.collector", {"--collector", "libtorch"}, "profiler.cpu_collector",
       "\"libtorch\""},
      {"ProfilerOptions.probe_overhead", {"--no-probe-overhead"}, "profiler.probe_overhead",
       "false"},
      {"ProfilerOptions.overhead_budget_pct", {"--overhead-budget", "9"},
       "profiler.overhead_budget_pct", "9"},
  };
  const cli::ParsedArgs args = Parse("run", walk, {"synthetic:16"});
  v1::RunSpec spec;
  ASSERT_TRUE(cli::ReadRunSpec(args, &spec).ok());
  ASSERT_TRUE(jobspec::ValidateRunSpec(spec, {}, /*cpu=*/true).ok());
  const engine::TrainJobSpec e = worker::ToEngineTrainSpec(spec, "cpu", dir_.string());
  auto r = engine::RunTrainJob(e, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  auto p = LoadProfile(r->profile_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ProfileValue(*p, "config.data"), "\"synthetic:16\"");  // the positional
  // The data-parallel options: a single-device run's profile has no data_parallel block
  // (engine_ddp_test and daemon_ddp_test check it on real ranks), so they are walked from the
  // flag to the spec and into the engine's options here.
  ExpectWalked(walk, *p, ProtoFields(v1::RunSpec::descriptor()),
               {"RunSpec.data", "ProfilerOptions.with_stack", "ModelOptions.weights_searched",
                "DataParallelOptions.nproc",
                "DataParallelOptions.devices", "DataParallelOptions.backend",
                "DataParallelOptions.bucket_cap_mb", "DataParallelOptions.gradient_as_bucket_view",
                "DataParallelOptions.broadcast_buffers", "DataParallelOptions.timeout_s",
                "Rendezvous.nnodes", "Rendezvous.node_rank", "Rendezvous.master_addr",
                "Rendezvous.master_port", "Rendezvous.group_id"});
  const cli::ParsedArgs dp_args =
      Parse("run", {},
            {"synthetic:16", "--devices", "cpu,cpu:1", "--nproc", "2", "--dist-backend", "GLOO",
             "--bucket-cap-mb", "5", "--gradient-as-bucket-view", "--no-broadcast-buffers",
             "--dist-timeout", "9"});
  v1::RunSpec dp_spec;
  ASSERT_TRUE(cli::ReadRunSpec(dp_args, &dp_spec).ok());
  const v1::DataParallelOptions& d = dp_spec.data_parallel();
  EXPECT_EQ(d.nproc(), 2);
  ASSERT_EQ(d.devices_size(), 2);
  EXPECT_EQ(d.devices(1), "cpu:1");
  EXPECT_EQ(dp_spec.model().device(), "cpu");  // the first slot, --device not given
  EXPECT_TRUE(jobspec::ValidateRunSpec(dp_spec, {}, /*cpu=*/true).ok());
  worker::RankPlacement placement;
  placement.rank = 1;
  placement.world_size = 2;
  const engine::TrainJobSpec de =
      worker::ToEngineTrainSpec(dp_spec, "cpu", dir_.string(), placement);
  EXPECT_EQ(de.data_parallel.backend, "gloo");
  EXPECT_EQ(de.data_parallel.bucket_cap_mb, 5);
  EXPECT_TRUE(de.data_parallel.gradient_as_bucket_view);
  EXPECT_FALSE(de.data_parallel.broadcast_buffers);
  EXPECT_EQ(de.data_parallel.timeout_s, 9);
  EXPECT_EQ(de.data_parallel.rank, 1);
  EXPECT_EQ(de.data_parallel.world_size, 2);
  EXPECT_FALSE(d.has_rendezvous());  // one host: no rendezvous in the request
}

// Across hosts: the rendezvous from the flags, or from the scheduler's environment where a
// flag is absent (torchrun's, Slurm's, a Kubernetes Indexed Job's); without --nnodes the
// environment is not read.
TEST_F(JobOptions, TheRendezvousComesFromTheFlagsOrTheSchedulersEnvironment) {
  std::map<std::string, std::string> vars;
  const auto env = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  auto read = [&](const std::vector<std::string>& words, v1::Rendezvous* r) {
    std::vector<FieldWalk> none;
    const cli::ParsedArgs args = Parse("run", none, words);
    return cli::ReadRendezvous(args, env, r);
  };
  vars = {{"SLURM_NODEID", "1"},
          {"SLURM_JOB_ID", "4242"},
          {"MASTER_ADDR", "node0"},
          {"MASTER_PORT", "29511"},
          {"JOB_COMPLETION_INDEX", "7"}};
  v1::Rendezvous r;
  ASSERT_TRUE(read({"synthetic", "--nnodes", "2"}, &r).ok());
  EXPECT_EQ(r.nnodes(), 2);
  EXPECT_EQ(r.node_rank(), 1);  // SLURM_NODEID before JOB_COMPLETION_INDEX
  EXPECT_EQ(r.master_addr(), "node0");
  EXPECT_EQ(r.master_port(), 29511);
  EXPECT_EQ(r.group_id(), "slurm-4242");
  // A flag wins over the environment; NODE_RANK (torchrun) over SLURM_NODEID.
  vars["NODE_RANK"] = "0";
  r.Clear();
  ASSERT_TRUE(
      read({"synthetic", "--nnodes", "2", "--master-port", "1234", "--group-id", "g1"}, &r).ok());
  EXPECT_EQ(r.node_rank(), 0);
  EXPECT_EQ(r.master_port(), 1234);
  EXPECT_EQ(r.group_id(), "g1");
  // A Kubernetes Indexed Job: only its index.
  vars = {{"JOB_COMPLETION_INDEX", "3"}, {"MASTER_ADDR", "svc-0"}, {"MASTER_PORT", "1"}};
  r.Clear();
  ASSERT_TRUE(read({"synthetic", "--nnodes", "4"}, &r).ok());
  EXPECT_EQ(r.node_rank(), 3);
  EXPECT_EQ(r.group_id(), "");  // the daemon's default: master_addr:master_port
  // No node rank anywhere: said, with where a scheduler puts it.
  vars.clear();
  r.Clear();
  absl::Status s = read({"synthetic", "--nnodes", "2"}, &r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("--node-rank: required with --nnodes 2"));
  vars = {{"MASTER_PORT", "eighty"}};
  r.Clear();
  s = read({"synthetic", "--nnodes", "2", "--node-rank", "1"}, &r);
  EXPECT_THAT(std::string(s.message()), HasSubstr("$MASTER_PORT needs an integer, got 'eighty'"));
  // Without --nnodes the environment stays unread; a rendezvous flag alone goes to the
  // validator, which refuses it naming --nnodes.
  vars = {{"NODE_RANK", "1"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}};
  r.Clear();
  ASSERT_TRUE(read({"synthetic"}, &r).ok());
  EXPECT_EQ(r.ByteSizeLong(), 0u);
  v1::RunSpec spec;
  const cli::ParsedArgs alone = Parse("run", {}, {"synthetic:8", "--master-port", "29500"});
  ASSERT_TRUE(cli::ReadRunSpec(alone, &spec).ok());
  s = jobspec::ValidateRunSpec(spec, {}, /*cpu=*/true);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("--nnodes (run.data_parallel.rendezvous.nnodes)"));
}

// Unset fields: the spec's defaults (job_defaults.h) reach the engine, whichever way a job
// comes in; the engine structs' own initialisers agree with them.
TEST(JobOptionDefaults, OnePlaceForTheDefaults) {
  namespace def = jobspec::defaults;
  const engine::InferJobSpec i = worker::ToEngineInferSpec(v1::InferSpec(), "cuda:1", "p");
  const engine::InferJobSpec i0;
  EXPECT_EQ(i.imgsz, def::kImgsz);
  EXPECT_EQ(i0.imgsz, def::kImgsz);
  EXPECT_EQ(i.model.device, "1");
  EXPECT_EQ(i.batch, i0.batch);
  EXPECT_EQ(i.warmup, i0.warmup);
  EXPECT_EQ(i.runs, i0.runs);
  EXPECT_EQ(i.repeat, i0.repeat);
  EXPECT_EQ(i.conf, i0.conf);
  EXPECT_EQ(i.iou, i0.iou);
  EXPECT_EQ(i.max_det, i0.max_det);
  EXPECT_EQ(i.postprocess, "auto");  // "" in the request is auto
  EXPECT_EQ(i0.postprocess, "auto");
  EXPECT_EQ(i.trace, i0.trace);
  EXPECT_EQ(i.amp_dtype, i0.amp_dtype);
  EXPECT_EQ(i.model.weights, i0.model.weights);
  EXPECT_EQ(i.profiler.overhead_budget_pct, i0.profiler.overhead_budget_pct);
  EXPECT_EQ(i.profiler.with_modules, i0.profiler.with_modules);
  const engine::TrainJobSpec t = worker::ToEngineTrainSpec(v1::RunSpec(), "cpu", "p");
  const engine::TrainJobSpec t0;
  EXPECT_EQ(t.batch, t0.batch);
  EXPECT_EQ(t.imgsz, t0.imgsz);
  EXPECT_EQ(t.workers, t0.workers);
  EXPECT_EQ(t.amp, t0.amp);
  EXPECT_EQ(t.steps, t0.steps);
  EXPECT_EQ(t.warmup, t0.warmup);
  EXPECT_EQ(t.repeat, t0.repeat);
  EXPECT_EQ(t.cycles, t0.cycles);
  // The flag table prints the same defaults.
  std::map<std::string, std::string> help;
  for (const cli::FlagSpec& f : cli::InferSpecFlags()) help[f.name] = f.default_value;
  EXPECT_EQ(help["imgsz"], std::to_string(def::kImgsz));
  EXPECT_EQ(help["runs"], std::to_string(def::kRuns));
  EXPECT_EQ(help["conf"], "0.25");
  // --with-stack (the alias) turns module scopes on when --with-modules is not given.
  v1::InferSpec alias;
  alias.mutable_profiler()->set_with_stack(true);
  EXPECT_TRUE(worker::ToEngineInferSpec(alias, "cpu", "p").profiler.with_modules);
}

// Issue 40 A.9: the daemon's limits.max_decoded_pixels (worker.proto's RunJob) reaches both
// engine specs; 0 (the engine tool, a daemon that sent none) is the engine's own bound.
TEST(JobOptionDefaults, TheDecodedPixelBoundReachesTheEngine) {
  EXPECT_EQ(worker::ToEngineInferSpec(v1::InferSpec(), "cpu", "p", 4096).max_decoded_pixels, 4096);
  EXPECT_EQ(worker::ToEngineTrainSpec(v1::RunSpec(), "cpu", "p", {}, 4096).max_decoded_pixels,
            4096);
  EXPECT_EQ(worker::ToEngineInferSpec(v1::InferSpec(), "cpu", "p").max_decoded_pixels,
            engine::kMaxDecodedPixels);
  EXPECT_EQ(worker::ToEngineTrainSpec(v1::RunSpec(), "cpu", "p", {}, 0).max_decoded_pixels,
            engine::kMaxDecodedPixels);
  EXPECT_EQ(engine::InferJobSpec().max_decoded_pixels, engine::kMaxDecodedPixels);
  EXPECT_EQ(engine::TrainJobSpec().max_decoded_pixels, engine::kMaxDecodedPixels);
}

}  // namespace
}  // namespace libreyolo
