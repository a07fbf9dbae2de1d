// Kernel name rules: category, Tensor Core use, and a friendly name (docs/metrics.md).
#ifndef LIBREYOLO_COMMON_ANALYSIS_KERNEL_CLASSIFY_H_
#define LIBREYOLO_COMMON_ANALYSIS_KERNEL_CLASSIFY_H_

#include <string>
#include <string_view>

namespace libreyolo {

inline constexpr char kCategoryCommunication[] = "communication";
inline constexpr char kCategoryNorm[] = "reduction / norm";
inline constexpr char kCategoryLayout[] = "layout / copy";
inline constexpr char kCategoryGemm[] = "gemm / conv";
inline constexpr char kCategoryElementwise[] = "elementwise";
inline constexpr char kCategoryOther[] = "other";

// The category of a kernel: the first rule of docs/metrics.md that matches its lower-cased name.
std::string KernelCategory(std::string_view name);

// The kernel's own name: the demangled signature without its template argument lists and its
// trailing parameter list ("void ns::k<T, fbgemm_gpu::X>(int)" -> "void ns::k"). Categories
// match this (docs/metrics.md), so a type in an argument never decides the category.
std::string KernelOwnName(std::string_view name);

// Whether the kernel name marks a Tensor Core kernel (docs/metrics.md, tensorcore_pct).
bool IsTensorCoreKernel(std::string_view name);

// A short human name for common kernels ("cutlass conv (implicit gemm)"); else the name itself.
std::string FriendlyKernelName(std::string_view name);

// Cuts a name to at most `max_chars` bytes without splitting a UTF-8 sequence.
std::string CutName(std::string_view name, size_t max_chars = 90);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_KERNEL_CLASSIFY_H_
