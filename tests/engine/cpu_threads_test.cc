// The CPU thread pools beside LibTorch's (server/engine/runtime/cpu_threads.h), in a torch-free process:
// how OMP_WAIT_POLICY values read, what the config records, and no OpenBLAS here. The OpenBLAS
// pool itself is checked where LibTorch brings it in (infer_job_test.cc).
#include "server/engine/runtime/cpu_threads.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace libreyolo::engine {
namespace {

TEST(CpuThreads, OmpWaitPolicyReadsAsLibgompDoes) {
  EXPECT_EQ(DescribeOmpWaitPolicy(nullptr), "default");
  EXPECT_EQ(DescribeOmpWaitPolicy("PASSIVE"), "passive");
  EXPECT_EQ(DescribeOmpWaitPolicy(" passive "), "passive");
  EXPECT_EQ(DescribeOmpWaitPolicy("Active"), "active");
  EXPECT_EQ(DescribeOmpWaitPolicy("sleepy"), "default");  // libgomp warns and keeps its default
  EXPECT_EQ(DescribeOmpWaitPolicy(""), "default");
}

TEST(CpuThreads, OmpWaitPolicyIsTheOneThisProcessStartedWith) {
  const std::string at_start = DescribeOmpWaitPolicy(std::getenv("OMP_WAIT_POLICY"));
  EXPECT_EQ(OmpWaitPolicy(), at_start);
  // Changing the variable now cannot change libgomp, so it does not change the record either.
  const char* other = at_start == "active" ? "PASSIVE" : "ACTIVE";
  const char* before = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = before != nullptr ? before : "";
  ASSERT_EQ(::setenv("OMP_WAIT_POLICY", other, 1), 0);
  EXPECT_EQ(OmpWaitPolicy(), at_start);
  // Set: the user's choice stands, so this returns without re-executing the test.
  ReexecWithPassiveOmpWaitPolicy(nullptr);
  char arg0[] = "cpu_threads_test";
  char* argv[] = {arg0, nullptr};
  ReexecWithPassiveOmpWaitPolicy(argv);
  EXPECT_STREQ(std::getenv("OMP_WAIT_POLICY"), other);
  if (before != nullptr) {
    ::setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  } else {
    ::unsetenv("OMP_WAIT_POLICY");
  }
}

TEST(CpuThreads, GompSpincountAloneIsAChoiceToo) {
  // Were the helper to re-execute below, this binary would start over with the marker set.
  ASSERT_EQ(std::getenv("LIBREYOLO_CPU_THREADS_TEST_MARKER"), nullptr) << "re-executed";
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const std::string saved_policy = policy != nullptr ? policy : "";
  const std::string saved_spin = spin != nullptr ? spin : "";
  const bool had_policy = policy != nullptr, had_spin = spin != nullptr;
  ::unsetenv("OMP_WAIT_POLICY");
  ::setenv("GOMP_SPINCOUNT", "300000", 1);  // libgomp's own default spin count
  ::setenv("LIBREYOLO_CPU_THREADS_TEST_MARKER", "1", 1);
  char arg0[] = "cpu_threads_test";
  char* argv[] = {arg0, nullptr};
  ReexecWithPassiveOmpWaitPolicy(argv);
  EXPECT_EQ(std::getenv("OMP_WAIT_POLICY"), nullptr);
  ::unsetenv("LIBREYOLO_CPU_THREADS_TEST_MARKER");
  if (had_policy) ::setenv("OMP_WAIT_POLICY", saved_policy.c_str(), 1);
  if (had_spin) {
    ::setenv("GOMP_SPINCOUNT", saved_spin.c_str(), 1);
  } else {
    ::unsetenv("GOMP_SPINCOUNT");
  }
}

TEST(CpuThreads, NoOpenBlasInATorchFreeProcess) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("openblas") != std::string::npos) GTEST_SKIP() << "OpenBLAS is loaded: " << line;
  }
  EXPECT_FALSE(OpenBlasThreads().has_value());
  EXPECT_FALSE(SetOpenBlasThreads(2).has_value());
}

TEST(CpuThreads, WritesTheConfigFields) {
  ThreadSettings t;
  t.threads = 2;
  t.interop_threads = 1;
  t.blas = "openblas-pthread";
  t.blas_threads = 2;
  t.omp_wait_policy = "passive";
  for (bool with_blas : {true, false}) {
    if (!with_blas) t.blas_threads.reset();
    JsonWriter w(/*pretty=*/false);
    w.BeginObject();
    WriteThreadFields(w, t);
    w.EndObject();
    const std::string json = w.Take();
    rapidjson::Document d;
    ASSERT_FALSE(d.Parse(json.c_str()).HasParseError()) << json;
    EXPECT_EQ(d["threads"].GetInt(), 2);
    EXPECT_EQ(d["interop_threads"].GetInt(), 1);
    EXPECT_STREQ(d["blas"].GetString(), "openblas-pthread");
    if (with_blas) {
      EXPECT_EQ(d["blas_threads"].GetInt(), 2);
    } else {
      EXPECT_TRUE(d["blas_threads"].IsNull());
    }
    EXPECT_STREQ(d["omp_wait_policy"].GetString(), "passive");
  }
}

}  // namespace
}  // namespace libreyolo::engine
