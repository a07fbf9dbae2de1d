// Tiny helpers for hand-made Chrome traces in tests: each function returns one JSON event, and
// Trace() wraps them in {"traceEvents": [...]}. Times are integer microseconds, as in Kineto.
#ifndef LIBREYOLO_TESTS_COMMON_TRACE_BUILDER_H_
#define LIBREYOLO_TESTS_COMMON_TRACE_BUILDER_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/analysis/trace_analyser.h"
#include "common/profile/profile.h"
#include "common/trace/trace_reader.h"

namespace libreyolo::testing {

// A thread as raw JSON values of "pid" and "tid" (so tests can use strings too).
struct Th {
  std::string pid = "1";
  std::string tid = "1";
};
inline Th Thread(int tid) { return Th{"1", absl::StrCat(tid)}; }
inline const Th kMain{"1", "1"};

// A complete event; `args` is the inside of the args object, e.g. R"("correlation": 5)".
inline std::string X(absl::string_view cat, absl::string_view name, int64_t ts, int64_t dur,
                     const Th& th = kMain, absl::string_view args = "") {
  std::string e = absl::StrCat(R"({"ph": "X", "cat": ")", cat, R"(", "name": ")", name,
                               R"(", "pid": )", th.pid, R"(, "tid": )", th.tid, R"(, "ts": )", ts,
                               R"(, "dur": )", dur);
  if (!args.empty()) absl::StrAppend(&e, R"(, "args": {)", args, "}");
  return e + "}";
}

inline std::string Step(int n, int64_t ts, int64_t dur, absl::string_view cat = "user_annotation",
                        const Th& th = kMain) {
  return X(cat, absl::StrCat("ProfilerStep#", n), ts, dur, th);
}

// A kernel on device 0, stream `stream`; corr < 0 means no args.correlation.
inline std::string Kernel(absl::string_view name, int64_t ts, int64_t dur, int64_t corr = -1,
                          int stream = 7) {
  return X("kernel", name, ts, dur, Th{"0", absl::StrCat(stream)},
           corr >= 0 ? absl::StrCat(R"("correlation": )", corr) : std::string());
}

// A runtime call; corr < 0 means no args.correlation.
inline std::string Runtime(absl::string_view name, int64_t ts, int64_t dur, int64_t corr = -1,
                           const Th& th = kMain) {
  return X("cuda_runtime", name, ts, dur, th,
           corr >= 0 ? absl::StrCat(R"("correlation": )", corr) : std::string());
}
inline std::string Launch(int64_t ts, int64_t dur, int64_t corr = -1, const Th& th = kMain) {
  return Runtime("cudaLaunchKernel", ts, dur, corr, th);
}

inline std::string Op(absl::string_view name, int64_t ts, int64_t dur, const Th& th = kMain,
                      absl::string_view args = "") {
  return X("cpu_op", name, ts, dur, th, args);
}
inline std::string Ann(absl::string_view name, int64_t ts, int64_t dur, const Th& th = kMain) {
  return X("user_annotation", name, ts, dur, th);
}

// An ac2g flow start (the launch side of a kernel's flow arrow).
inline std::string Flow(int64_t id, int64_t ts, const Th& th = kMain) {
  return absl::StrCat(R"({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": )", id,
                      R"(, "pid": )", th.pid, R"(, "tid": )", th.tid, R"(, "ts": )", ts, "}");
}

// A [memory] instant; total_allocated / total_reserved < 0 are left out.
inline std::string Mem(int64_t ts, int device_type, int64_t bytes, const Th& th = kMain,
                       int64_t total_allocated = -1, int64_t total_reserved = -1) {
  std::string args = absl::StrCat(R"("Device Type": )", device_type, R"(, "Bytes": )", bytes);
  if (total_allocated >= 0) absl::StrAppend(&args, R"(, "Total Allocated": )", total_allocated);
  if (total_reserved >= 0) absl::StrAppend(&args, R"(, "Total Reserved": )", total_reserved);
  return absl::StrCat(R"({"ph": "i", "s": "t", "name": "[memory]", "pid": )", th.pid,
                      R"(, "tid": )", th.tid, R"(, "ts": )", ts, R"(, "args": {)", args, "}}");
}

inline std::string Trace(const std::vector<std::string>& events) {
  return absl::StrCat(R"({"schemaVersion": 1, "traceEvents": [)", absl::StrJoin(events, ",\n"),
                      "]}");
}

// Reads and analyses a trace given as JSON text; a read error fails the test.
inline Profile Analyse(const std::string& json) {
  auto data = ReadTraceText(json);
  if (!data.ok()) {
    ADD_FAILURE() << "ReadTraceText failed: " << data.status();
    return Profile{};
  }
  return AnalyseTrace(std::move(*data));
}

inline Profile AnalyseEvents(const std::vector<std::string>& events) {
  return Analyse(Trace(events));
}

inline double Tol(double expected) { return std::max(std::fabs(expected) * 1e-9, 1e-15); }

}  // namespace libreyolo::testing

// Hand-computed values: 1e-9 relative tolerance.
#define EXPECT_CLOSE(actual, expected) \
  EXPECT_NEAR((actual), (expected), ::libreyolo::testing::Tol(expected))
// An optional that must hold a value close to `expected`.
#define EXPECT_OPT_CLOSE(opt, expected)                                              \
  do {                                                                               \
    const auto& opt_value_ = (opt);                                                  \
    ASSERT_TRUE(opt_value_.has_value()) << #opt " is empty";                         \
    EXPECT_NEAR(*opt_value_, (expected), ::libreyolo::testing::Tol(expected)) << #opt; \
  } while (0)

#endif  // LIBREYOLO_TESTS_COMMON_TRACE_BUILDER_H_
