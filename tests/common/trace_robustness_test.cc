// docs/metrics.md "Events": what the reader accepts, skips and rejects.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;

const PhaseRow* FindPhase(const Profile& p, const std::string& name) {
  for (const PhaseRow& r : p.phases) {
    if (r.phase == name) return &r;
  }
  return nullptr;
}

TEST(Robustness, MissingDurCountsAsZero) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      R"({"ph": "X", "cat": "kernel", "name": "no_dur", "pid": 0, "tid": 7, "ts": 100})",
      Kernel("k", 200, 300),
  });
  EXPECT_OPT_CLOSE(p.kernels_per_step, 2.0);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.3);
  EXPECT_OPT_CLOSE(p.mean_kernel_us, 150.0);  // 300 us / 2 kernels
  EXPECT_EQ(p.parse_stats.skipped_events, 0);
}

TEST(Robustness, OnlyCompleteEventsTakePart) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      R"({"ph": "B", "cat": "kernel", "name": "begin", "pid": 0, "tid": 7, "ts": 100})",
      R"({"ph": "E", "cat": "kernel", "name": "begin", "pid": 0, "tid": 7, "ts": 200})",
      R"({"ph": "i", "cat": "kernel", "name": "instant", "pid": 0, "tid": 7, "ts": 300})",
      R"({"ph": "C", "cat": "kernel", "name": "counter", "pid": 0, "ts": 300, "args": {"v": 1}})",
      R"({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}})",
      R"({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 400})",
      Kernel("real", 500, 100),
  });
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.1);
  EXPECT_EQ(p.parse_stats.events, 8);
  EXPECT_EQ(p.parse_stats.complete_events, 2);
  EXPECT_EQ(p.parse_stats.skipped_events, 0);
}

TEST(Robustness, CategoriesAreLowerCasedAndUnknownOnesIgnored) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      X("Kernel", "upper_cat", 100, 100, Th{"0", "7"}),      // a kernel
      X("CPU_OP", "aten::upper", 200, 50),                    // a CPU op
      X("python_function", "torch/nn/modules/conv.py", 300, 400),  // ignored
      X("cuda_sync", "cudaDeviceSynchronize", 400, 100),      // ignored
      X("some_new_category", "whatever", 500, 100),           // ignored
  });
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);
  ASSERT_EQ(p.ops.size(), 1u);
  EXPECT_EQ(p.ops[0].op, "aten::upper");
  EXPECT_EQ(p.launches_source, std::optional<std::string>("kernels"));  // no runtime events
}

TEST(Robustness, IdsBeyondInt64StillLink) {
  // Launches inside a forward span; kernels outside any span: only a correlation link puts
  // them in forward.
  const std::string max_u64 = "18446744073709551615";
  const Profile q = Analyse(Trace({
      Step(1, 0, 1000),
      Ann("## forward ##", 0, 100),
      X("cuda_runtime", "cudaLaunchKernel", 10, 10, kMain,
        absl::StrCat(R"("correlation": )", max_u64)),
      X("kernel", "k_u64", 500, 100, Th{"0", "7"}, absl::StrCat(R"("correlation": )", max_u64)),
      X("cuda_runtime", "cudaLaunchKernel", 30, 10, kMain, R"("correlation": 1e30)"),
      X("kernel", "k_1e30", 700, 50, Th{"0", "7"}, R"("correlation": 1e30)"),
      X("kernel", "k_other", 800, 10, Th{"0", "7"}, R"("correlation": 12345)"),
  }));
  const PhaseRow* fwd = FindPhase(q, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_CLOSE(fwd->gpu_ms_per_step, 0.15);  // k_u64 100 + k_1e30 50; k_other unlinked
  EXPECT_CLOSE(fwd->kernels_per_step, 2.0);
  EXPECT_EQ(q.host_overhead_method, std::optional<std::string>("measured"));
  EXPECT_EQ(q.parse_stats.skipped_events, 0);
}

TEST(Robustness, StringPidAndTid) {
  const Th spawned{R"("Spawned")", R"("main thread")"};
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000, "user_annotation", spawned),
      Ann("## forward ##", 0, 100, spawned),
      Op("aten::mm", 5, 50, spawned),
      Launch(10, 10, 1, spawned),
      X("kernel", "k", 500, 100, Th{R"("GPU 0")", R"("stream 7")"}, R"("correlation": 1)"),
  });
  const PhaseRow* fwd = FindPhase(p, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_CLOSE(fwd->gpu_ms_per_step, 0.1);
  EXPECT_CLOSE(fwd->ops_per_step, 1.0);
  EXPECT_OPT_CLOSE(p.ops[0].self_device_ms_per_step, 0.1);
}

TEST(Robustness, BareListForm) {
  const std::string json = "[" + Step(1, 0, 1000) + ", " + Kernel("k", 100, 400) + "]";
  const Profile p = Analyse(json);
  EXPECT_OPT_CLOSE(p.gpu_util, 0.4);
  EXPECT_EQ(p.real_steps, std::optional<int64_t>(1));
}

TEST(Robustness, MalformedEventsAreCountedAndSkipped) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      R"({"ph": "X", "cat": "kernel", "name": "no_ts", "dur": 5})",
      R"({"ph": "X", "cat": "kernel", "name": "string_ts", "ts": "100", "dur": 5})",
      R"({"ph": "X", "cat": "kernel", "name": "string_dur", "ts": 100, "dur": "5"})",
      R"({"ph": "X", "cat": "kernel", "name": 42, "ts": 100, "dur": 5})",
      R"({"ph": "X", "cat": ["kernel"], "name": "list_cat", "ts": 100, "dur": 5})",
      R"({"ph": "X", "cat": "kernel", "name": "null_ts", "ts": null, "dur": 5})",
      Kernel("good", 200, 100),
  });
  EXPECT_EQ(p.parse_stats.skipped_events, 6);
  EXPECT_EQ(p.parse_stats.complete_events, 2);  // the step and "good"
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.1);
}

TEST(Robustness, NonObjectElementsOfTraceEventsAreCountedAsSkipped) {
  // profile.h: events = "every element of traceEvents", skipped_events includes "non-object".
  const Profile p = Analyse(R"({"traceEvents": [42, "text", null, [1, 2], )" +
                            Kernel("good", 0, 100) + "]}");
  EXPECT_EQ(p.parse_stats.events, 5);
  EXPECT_EQ(p.parse_stats.skipped_events, 4);
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);
}

TEST(Robustness, NonNumericIdsAreCounted) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      X("kernel", "k", 100, 10, Th{"0", "7"}, R"("correlation": "abc")"),
  });
  EXPECT_EQ(p.parse_stats.non_numeric_ids, 1);
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);
}

TEST(Robustness, BadJsonIsAnErrorWithTheByteOffset) {
  // `{"traceEvents": [` is 17 bytes; the '}' at byte 17 is not a value.
  auto r = ReadTraceText(R"({"traceEvents": [})");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("byte 17"));
  auto cut = ReadTraceText(R"({"traceEvents": [{"ph": "X", "ts": 1)");
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTraceText("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Robustness, NotATraceIsAnError) {
  for (const char* json : {R"({"foo": 1})", "42", R"("text")", R"({"traceEvents": 5})"}) {
    auto r = ReadTraceText(json);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(r.status().message(), HasSubstr("not a Chrome trace")) << json;
  }
}

TEST(Robustness, EmptyTraceAnalysesToZerosAndNoGpu) {
  auto r = ReadTraceText(R"({"traceEvents": []})");
  ASSERT_TRUE(r.ok()) << r.status();
  const Profile p = AnalyseTrace(std::move(*r));
  EXPECT_EQ(p.real_steps, std::optional<int64_t>(1));
  EXPECT_OPT_CLOSE(p.step_ms, 0.0);
  EXPECT_FALSE(p.gpu_util.has_value());  // nothing ran on a GPU: a CPU job's n/a
  EXPECT_EQ(p.bound, "compute");  // no kernels at all
}

TEST(Robustness, FloatTimestamps) {
  // ts/dur with fractions of a microsecond (AMD traces): 0.5 us kernels.
  const Profile p = Analyse(Trace({
      Step(1, 0, 10),
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1.25, "dur": 0.5})",
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1.5, "dur": 0.5})",
  }));
  // union [1.25, 2.0) = 0.75 us; sum 1.0 us; step 10 us.
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.00075);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.001);
  EXPECT_OPT_CLOSE(p.gpu_util, 0.075);
}

}  // namespace
}  // namespace libreyolo::testing
