// docs/metrics.md "Kernel categories", "Kernel rows" and tensorcore_pct.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/analysis/kernel_classify.h"
#include "common/readers/kernels_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using Cases = std::vector<std::pair<std::string, std::string>>;

void ExpectCategories(const Cases& cases) {
  for (const auto& [name, category] : cases) {
    EXPECT_EQ(KernelCategory(name), category) << name;
  }
}

TEST(KernelCategory, Communication) {
  ExpectCategories({
      {"ncclKernel_AllReduce_RING_LL_Sum_float", "communication"},
      {"ncclDevKernel_Generic_gemm", "communication"},  // nccl and gemm: rule 1 wins
      {"rcclKernel", "communication"},
      {"all_reduce_kernel", "communication"},
      {"custom_AllReduce", "communication"},
      {"all_gather_into_tensor", "communication"},
      {"AllGather", "communication"},
      {"reduce_scatter_kernel", "communication"},  // also matches \breduce: rule 1 first
      {"alltoall_kernel", "communication"},
      {"all_to_all_single", "communication"},
  });
}

TEST(KernelCategory, ReductionNorm) {
  ExpectCategories({
      {"cudnn::bn_bw_1C11_kernel_new", "reduction / norm"},  // bn_bw before cudnn (gemm)
      {"cudnn::bn_fw_tr_1C11_kernel_NCHW", "reduction / norm"},
      {"batchnorm_forward", "reduction / norm"},
      {"batch_norm_collect_statistics_kernel", "reduction / norm"},
      {"layer_norm_kernel", "reduction / norm"},
      {"group_norm_kernel", "reduction / norm"},
      {"instance_norm_fwd", "reduction / norm"},
      {"softmax_warp_forward", "reduction / norm"},
      {"welford_kernel", "reduction / norm"},
      {"reduce_kernel", "reduction / norm"},                 // \b at the start
      {"at::native::reduce_kernel<512, 1>", "reduction / norm"},  // ':' then reduce
      {"variance_kernel", "reduction / norm"},
      {"rms_norm_kernel", "reduction / norm"},
      {"softmax_gemm_fused", "reduction / norm"},  // softmax (rule 2) before gemm (rule 4)
  });
}

TEST(KernelCategory, WordBoundaryCases) {
  ExpectCategories({
      {"orphan_reduce", "other"},            // '_' is a word character: no \breduce
      {"rowreduce_kernel", "other"},
      {"direct_copy_kernel_cuda", "other"},  // no \bcopy after '_'
      {"index_gather_kernel", "other"},      // no \bgather
      {"my_scatter", "other"},
      {"fpermute", "other"},
      {"xtranspose", "other"},
      {"copy_kernel", "layout / copy"},      // \bcopy at the start
      {"at::native::gather_kernel", "layout / copy"},
      {"void scatter_kernel", "layout / copy"},  // space then scatter
      {"permute_kernel", "layout / copy"},
      {"transpose_kernel", "layout / copy"},
  });
}

TEST(KernelCategory, LayoutBeforeAndAfterGemm) {
  ExpectCategories({
      {"cudnn::nchwToNhwcKernel", "layout / copy"},  // rule 3 precedes gemm's cudnn
      {"nhwcToNchwKernel", "layout / copy"},
      {"cutlass_memcpy_kernel", "gemm / conv"},      // cutlass (rule 4) before memcpy (rule 5)
      {"memcpy_kernel", "layout / copy"},
      {"memset_kernel", "layout / copy"},
      {"CatArrayBatchedCopy", "layout / copy"},
      {"concat_kernel", "layout / copy"},
      {"contiguous_kernel", "layout / copy"},
  });
}

TEST(KernelCategory, GemmConv) {
  ExpectCategories({
      {"sm80_xmma_gemm_f16f16_f16f32", "gemm / conv"},
      {"implicit_convolve_sgemm", "gemm / conv"},
      {"conv2d_grouped_direct_kernel", "gemm / conv"},
      {"implicit_precomp", "gemm / conv"},
      {"cutlass_80_tensorop_s1688", "gemm / conv"},
      {"cudnn::detail::kernel", "gemm / conv"},
      {"wgrad_alg0_engine", "gemm / conv"},
      {"dgrad_engine", "gemm / conv"},
      {"winograd_nonfused", "gemm / conv"},
      {"gemm_relu_fused", "gemm / conv"},  // gemm (rule 4) before relu (rule 6)
  });
}

TEST(KernelCategory, ElementwiseAndOther) {
  ExpectCategories({
      {"vectorized_elementwise_kernel<4, FillFunctor>", "elementwise"},
      {"unrolled_elementwise_kernel", "elementwise"},
      {"vectorized_kernel", "elementwise"},
      {"pointwise_kernel", "elementwise"},
      {"activation_kernel", "elementwise"},
      {"silu_kernel", "elementwise"},
      {"relu_kernel", "elementwise"},
      {"sigmoid_kernel", "elementwise"},
      {"unary_op_kernel", "elementwise"},
      {"binary_op_kernel", "elementwise"},
      {"clamp_kernel", "elementwise"},
      {"fill_kernel", "elementwise"},
      {"arange_kernel", "elementwise"},
      {"my_custom_kernel", "other"},
      {"", "other"},
  });
}

TEST(KernelCategory, CaseInsensitive) {
  ExpectCategories({
      {"NCCLKERNEL", "communication"},
      {"SOFTMAX", "reduction / norm"},
      {"GEMM", "gemm / conv"},
      {"RELU", "elementwise"},
  });
}

TEST(TensorCore, NamesMatchingTheRegex) {
  for (const char* name :
       {"volta_h884gemm_64x64_nn", "turing_h1688gemm", "ampere_h16816gemm_128x128",
        "turing_fp16_s1688gemm_fp16", "ampere_fp16_s16816gemm_fp16_128x128",
        "int8_i8816cudnn", "ampere_i16832gemm", "HMMA_kernel", "imma_kernel",
        "sm80_xmma_gemm_f16f16", "sm90_gmma_kernel", "cutlass_tensorop_kernel", "wmma_gemm",
        "kernel_16816", "kernel_16832", "volta_884gemm", "turing_1688gemm"}) {
    EXPECT_TRUE(IsTensorCoreKernel(name)) << name;
  }
  for (const char* name : {"ampere_sgemm_128x64_nn", "volta_sgemm_64x32",
                           "implicit_convolve_sgemm", "vectorized_elementwise_kernel", "h88"}) {
    EXPECT_FALSE(IsTensorCoreKernel(name)) << name;
  }
}

TEST(Categories, RowsPctTensorCoreAndKernelRowsFromATrace) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Step(2, 1000, 1000),
      Kernel("ampere_fp16_s16816gemm_fp16_128x128", 0, 600),   // gemm, Tensor Core
      Kernel("ampere_sgemm_128x64_nn", 700, 200),               // gemm, no Tensor Core
      Kernel("vectorized_elementwise_kernel", 1000, 100),       // elementwise
      Kernel("vectorized_elementwise_kernel", 1200, 100),
      Kernel("ncclKernel_AllReduce", 1400, 200),                // communication
      Kernel("orphan_reduce", 1700, 100),                       // other
  });
  // Total 1300 us over 2 steps. Tensor Core: 600 / 1300.
  EXPECT_OPT_CLOSE(p.tensorcore_pct, 100.0 * 600 / 1300);
  EXPECT_EQ(*p.unique_kernels, 5);

  // Categories by time descending, ties by name: gemm 800, communication 200 and
  // elementwise 200 (c < e), other 100.
  ASSERT_EQ(p.categories.size(), 4u);
  EXPECT_EQ(p.categories[0].name, "gemm / conv");
  EXPECT_CLOSE(p.categories[0].pct, 100.0 * 800 / 1300);
  EXPECT_CLOSE(p.categories[0].ms_per_step, 0.4);  // 800 us / 2
  EXPECT_EQ(p.categories[1].name, "communication");
  EXPECT_CLOSE(p.categories[1].pct, 100.0 * 200 / 1300);
  EXPECT_CLOSE(p.categories[1].ms_per_step, 0.1);
  EXPECT_EQ(p.categories[2].name, "elementwise");
  EXPECT_CLOSE(p.categories[2].ms_per_step, 0.1);
  EXPECT_EQ(p.categories[3].name, "other");
  EXPECT_CLOSE(p.categories[3].pct, 100.0 * 100 / 1300);
  EXPECT_CLOSE(p.categories[3].ms_per_step, 0.05);

  // Kernel rows by time descending, ties by raw name ascending.
  ASSERT_EQ(p.kernels.size(), 5u);
  EXPECT_EQ(p.kernels[0].raw_name, "ampere_fp16_s16816gemm_fp16_128x128");
  EXPECT_TRUE(p.kernels[0].tensorcore);
  EXPECT_EQ(p.kernels[0].category, "gemm / conv");
  EXPECT_CLOSE(p.kernels[0].ms_per_step, 0.3);
  EXPECT_CLOSE(p.kernels[0].count_per_step, 1.0);  // 1 launch in 2 steps: a row shows >= 1
  EXPECT_CLOSE(p.kernels[0].pct_of_gpu, 100.0 * 600 / 1300);
  EXPECT_EQ(p.kernels[1].raw_name, "ampere_sgemm_128x64_nn");
  EXPECT_FALSE(p.kernels[1].tensorcore);
  EXPECT_EQ(p.kernels[2].raw_name, "ncclKernel_AllReduce");
  EXPECT_EQ(p.kernels[3].raw_name, "vectorized_elementwise_kernel");
  EXPECT_CLOSE(p.kernels[3].ms_per_step, 0.1);
  EXPECT_CLOSE(p.kernels[3].count_per_step, 1.0);  // 2 calls / 2 steps
  EXPECT_CLOSE(p.kernels[3].pct_of_gpu, 100.0 * 200 / 1300);
  EXPECT_EQ(p.kernels[3].category, "elementwise");
  EXPECT_EQ(p.kernels[4].raw_name, "orphan_reduce");
  EXPECT_EQ(p.kernels[4].category, "other");
}

TEST(KernelsView, CategoryGrepTensorCoreAndPhaseFilters) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Ann("## forward ##", 0, 500),
      Kernel("ampere_fp16_s16816gemm_fp16_128x128", 0, 300),  // forward (overlap), TC
      Kernel("ampere_sgemm_128x64_nn", 600, 200),              // no phase
      Kernel("vectorized_elementwise_kernel", 850, 100),       // no phase
  });
  KernelsOptions o;
  o.category = "gemm";  // substring of "gemm / conv"
  auto v = BuildKernels(p, o, "t.json");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->rows.size(), 2u);
  EXPECT_CLOSE(v->matched_ms_per_step, 0.5);  // 300 + 200 us
  o = KernelsOptions{};
  o.tensorcore_only = true;
  v = BuildKernels(p, o, "t.json");
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->rows.size(), 1u);
  EXPECT_EQ(v->rows[0].raw_name, "ampere_fp16_s16816gemm_fp16_128x128");
  o = KernelsOptions{};
  o.grep = "ELEMENTWISE";  // case-insensitive
  v = BuildKernels(p, o, "t.json");
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->rows.size(), 1u);
  o = KernelsOptions{};
  o.phase = "forward";
  v = BuildKernels(p, o, "t.json");
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->rows.size(), 1u);
  EXPECT_CLOSE(v->rows[0].ms_per_step, 0.3);
  o.phase = "backward";
  EXPECT_EQ(BuildKernels(p, o, "t.json").status().code(), absl::StatusCode::kNotFound);
  o = KernelsOptions{};
  o.grep = "(";
  EXPECT_EQ(BuildKernels(p, o, "t.json").status().code(), absl::StatusCode::kInvalidArgument);
  o = KernelsOptions{};
  o.sort = "size";
  EXPECT_EQ(BuildKernels(p, o, "t.json").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CutName, CutsAt90BytesWithoutSplittingUtf8) {
  const std::string long_name(100, 'k');
  EXPECT_EQ(CutName(long_name), std::string(90, 'k'));
  EXPECT_EQ(CutName("short"), "short");
  // 89 ASCII bytes then a 2-byte character straddling byte 90: the character is dropped.
  const std::string utf8 = std::string(89, 'a') + "\xC3\xA9" + "zz";
  EXPECT_EQ(CutName(utf8), std::string(89, 'a'));
}

}  // namespace
}  // namespace libreyolo::testing
