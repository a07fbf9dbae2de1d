// The CUDA queries a job makes, on whatever this host is. Without a driver (this project's CI)
// each must answer FAILED_PRECONDITION naming the missing piece, never crash; with a GPU (the
// device check in scripts/gpu-check.sh) the same calls must return real values.
#include "server/engine/runtime/cuda_runtime.h"

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "common/json/json_writer.h"

namespace libreyolo::engine {
namespace {

using ::testing::HasSubstr;

bool CudaUsable() { return CheckCuda().usable; }

TEST(CudaRuntimeTest, AvailabilityNamesWhatIsMissing) {
  const CudaAvailability a = CheckCuda();
  if (a.usable) {
    EXPECT_GT(a.device_count, 0);
    EXPECT_TRUE(a.note.empty());
    return;
  }
  EXPECT_EQ(a.device_count, 0);
  EXPECT_THAT(a.note, HasSubstr("CUDA: "));
  EXPECT_THAT(a.note, ::testing::AnyOf(HasSubstr("GPU jobs cannot run"),
                                       HasSubstr("sees no device"),
                                       HasSubstr("failed to initialise")));
}

TEST(CudaRuntimeTest, EveryQueryAnswersFailedPreconditionWithoutCuda) {
  if (CudaUsable()) GTEST_SKIP() << "a CUDA device is present: the no-driver answers do not apply";
  const std::string note = CheckCuda().note;
  auto expect_note = [&](const absl::Status& s, const char* what) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << what;
    EXPECT_EQ(s.message(), note) << what;
  };
  expect_note(RequireCudaDevice(0), "RequireCudaDevice");
  expect_note(CudaDeviceProperties(0).status(), "CudaDeviceProperties");
  expect_note(CudaComputeCapability(0).status(), "CudaComputeCapability");
  expect_note(ReadCudaAllocator(0).status(), "ReadCudaAllocator");
  expect_note(ResetCudaAllocatorPeaks(0), "ResetCudaAllocatorPeaks");
  expect_note(ReleaseCudaCache(0), "ReleaseCudaCache");
  expect_note(CudaEventTimer::Create(0).status(), "CudaEventTimer::Create");
  expect_note(CudaMemoryInfo(0).status(), "CudaMemoryInfo");
  EXPECT_FALSE(ReadCudnnSettings().available);
}

TEST(CudaRuntimeTest, ConfigFieldsAreNullWithoutCuda) {
  if (CudaUsable()) GTEST_SKIP() << "a CUDA device is present";
  JsonWriter w(/*pretty=*/false);
  w.BeginObject();
  WriteCudaFields(w, 0, std::nullopt);
  w.EndObject();
  const std::string json = w.Take();
  EXPECT_THAT(json, HasSubstr("\"compute_capability\":null"));
  EXPECT_THAT(json, HasSubstr("\"cudnn_version\":null"));
  EXPECT_THAT(json, HasSubstr("\"device_reserved_at_start_mb\":null"));
  EXPECT_THAT(json, HasSubstr("\"device_used_at_start_mb\":null"));
  EXPECT_THAT(json, HasSubstr("\"cudnn_benchmark\":"));
}

TEST(CudaRuntimeTest, DeviceIndexOutOfRangeIsRefused) {
  const absl::Status s = RequireCudaDevice(1 << 20);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("CUDA"));
  EXPECT_EQ(RequireCudaDevice(-1).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CudaRuntimeTest, CudnnBenchmarkRoundTrips) {
  const bool before = ReadCudnnSettings().benchmark;
  SetCudnnBenchmark(!before);
  EXPECT_EQ(ReadCudnnSettings().benchmark, !before);
  SetCudnnBenchmark(before);
  EXPECT_EQ(ReadCudnnSettings().benchmark, before);
}

TEST(CudaRuntimeTest, AutocastScopeRestoresTheStateEvenWhenTheWorkThrows) {
  ASSERT_FALSE(at::autocast::is_autocast_enabled(at::kCUDA));
  {
    const CudaAutocast off(false, false);
    EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCUDA));
  }
  try {
    const CudaAutocast on(true, /*bfloat16=*/true);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCUDA));
    EXPECT_EQ(at::autocast::get_autocast_dtype(at::kCUDA), at::kBFloat16);
    throw std::runtime_error("forward failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCUDA));
  {
    const CudaAutocast outer(true, false);
    {
      const CudaAutocast inner(true, false);
      EXPECT_EQ(at::autocast::get_autocast_dtype(at::kCUDA), at::kHalf);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCUDA)) << "inner scope switched it off";
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCUDA));
}

// On a GPU host: the same calls return real values.
TEST(CudaRuntimeTest, RealValuesOnAGpu) {
  if (!CudaUsable()) GTEST_SKIP() << CheckCuda().note;
  auto props = CudaDeviceProperties(0);
  ASSERT_TRUE(props.ok()) << props.status();
  EXPECT_FALSE(props->name.empty());
  EXPECT_GT(props->sm_count.value_or(0), 0);
  EXPECT_GT(props->memory_mb.value_or(0), 0);
  ASSERT_TRUE(ResetCudaAllocatorPeaks(0).ok());
  auto before = ReadCudaAllocator(0);
  ASSERT_TRUE(before.ok()) << before.status();
  auto timer = CudaEventTimer::Create(0);
  ASSERT_TRUE(timer.ok()) << timer.status();
  timer->Start();
  {
    auto x = torch::ones({1024, 1024}, torch::TensorOptions().device(torch::kCUDA, 0));
    auto y = torch::matmul(x, x);
    auto after = ReadCudaAllocator(0);
    ASSERT_TRUE(after.ok());
    EXPECT_GE(after->allocated - before->allocated, 2 * 4 * 1024 * 1024);
    EXPECT_GE(after->peak_allocated, after->allocated);
    EXPECT_GE(after->reserved, after->allocated);
  }
  auto ms = timer->StopMs();
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0);
  auto mem = CudaMemoryInfo(0);
  ASSERT_TRUE(mem.ok()) << mem.status();
  EXPECT_GT(mem->total, mem->free);
  EXPECT_TRUE(ReleaseCudaCache(0).ok());
}

}  // namespace
}  // namespace libreyolo::engine
