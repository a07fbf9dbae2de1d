#include "common/analysis/kernel_classify.h"

#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace libreyolo {
namespace {

// The rules are alternations of literal substrings of the lower-cased name; a literal marked
// with a leading \b must start at a word boundary (as ECMAScript's \b there: the character
// before it, if any, is not [A-Za-z0-9_]). Matched by hand: std::regex (libstdc++'s backtracking
// executor) took most of the analysis of a 3 MiB trace (perf: 0.5 of 0.8 s), a fixed cost per
// distinct kernel name that no parser speed can hide.
struct Literal {
  std::string_view text;
  bool word_start;
};

std::vector<Literal> Alternatives(std::string_view pattern) {
  std::vector<Literal> out;
  while (true) {
    const size_t bar = pattern.find('|');
    std::string_view alt = pattern.substr(0, bar);
    const bool word_start = alt.starts_with("\\b");
    if (word_start) alt.remove_prefix(2);
    out.push_back(Literal{alt, word_start});
    if (bar == std::string_view::npos) return out;
    pattern.remove_prefix(bar + 1);
  }
}

bool IsWordChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool MatchesAny(std::string_view lower, const std::vector<Literal>& literals) {
  for (const Literal& lit : literals) {
    for (size_t at = lower.find(lit.text); at != std::string_view::npos;
         at = lower.find(lit.text, at + 1)) {
      if (!lit.word_start || at == 0 || !IsWordChar(lower[at - 1])) return true;
    }
  }
  return false;
}

struct CategoryRule {
  std::vector<Literal> pattern;
  const char* category;
};

const std::vector<CategoryRule>& CategoryRules() {
  static const auto* rules = new std::vector<CategoryRule>{
      {Alternatives("nccl|rccl|all_reduce|allreduce|all_gather|allgather|reduce_scatter|alltoall|"
                    "all_to_all"),
       kCategoryCommunication},
      {Alternatives("bn_bw|bn_fw|batchnorm|batch_norm|layer_norm|group_norm|instance_norm|softmax|"
                    "welford|\\breduce|variance|rms_norm|devicereduce"),
       kCategoryNorm},
      {Alternatives("nchwtonhwc|nhwctonchw"), kCategoryLayout},
      {Alternatives("gemm|conv|implicit|cutlass|cudnn|wgrad|dgrad|winograd"), kCategoryGemm},
      {Alternatives("memcpy|memset|\\bcopy|catarray|concat|contiguous|\\bgather|\\bscatter|"
                    "\\bpermute|\\btranspose"),
       kCategoryLayout},
      {Alternatives("elementwise|vectorized|pointwise|activation|silu|relu|sigmoid|unary|binary|"
                    "clamp|fill|arange|multi_tensor_apply"),
       kCategoryElementwise},
  };
  return *rules;
}

}  // namespace

std::string KernelOwnName(std::string_view name) {
  // Template argument lists, at any depth: dropped (an unclosed one runs to the end, as in a
  // name cut to 90 characters).
  std::string out;
  out.reserve(name.size());
  int depth = 0;
  for (const char c : name) {
    if (c == '<') {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      out.push_back(c);
    }
  }
  // The trailing parameter list: a balanced (...) that ends the name. "(anonymous namespace)"
  // inside the qualified name is not at the end and stays.
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (!out.empty() && out.back() == ')') {
    int d = 0;
    for (size_t i = out.size(); i-- > 0;) {
      if (out[i] == ')') ++d;
      if (out[i] == '(' && --d == 0) {
        if (i > 0) out.resize(i);  // a name that is only "(...)" is kept whole
        break;
      }
    }
  }
  return out;
}

std::string KernelCategory(std::string_view name) {
  const std::string own = KernelOwnName(name);
  const std::string lower = absl::AsciiStrToLower(own);
  for (const auto& rule : CategoryRules()) {
    if (MatchesAny(lower, rule.pattern)) return rule.category;
  }
  return kCategoryOther;
}

bool IsTensorCoreKernel(std::string_view name) {
  static const auto* pattern = new std::vector<Literal>(Alternatives(
      "h884|h1688|h16816|s1688|s16816|i8816|i16832|hmma|imma|xmma|gmma|tensorop|wmma|16816|"
      "16832|884gemm|1688gemm"));
  return MatchesAny(absl::AsciiStrToLower(absl::string_view(name.data(), name.size())), *pattern);
}

std::string FriendlyKernelName(std::string_view name) {
  // Ordered: the first substring (of the lower-cased name) that matches names the kernel.
  static const auto* rules = new std::vector<std::pair<const char*, const char*>>{
      {"bn_bw", "cudnn batchnorm (bwd)"},
      {"bn_fw_tr", "cudnn batchnorm (fwd, train)"},
      {"bn_fw_inf", "cudnn batchnorm (fwd, eval)"},
      {"batch_norm_backward", "batchnorm (bwd)"},
      {"batch_norm_collect_statistics", "batchnorm statistics"},
      {"batch_norm", "batchnorm"},
      {"implicit_convolve_sgemm", "cudnn conv (implicit sgemm)"},
      {"implicitgemm", "cutlass conv (implicit gemm)"},
      {"wgrad", "conv weight grad"},
      {"dgrad", "conv data grad"},
      {"winograd", "conv (winograd)"},
      {"nchwtonhwc", "layout NCHW->NHWC"},
      {"nhwctonchw", "layout NHWC->NCHW"},
      {"ampere_sgemm", "sgemm (ampere)"},
      {"volta_sgemm", "sgemm (volta)"},
      {"sm80_xmma_gemm", "xmma gemm (sm80)"},
      {"sm90_xmma", "xmma (sm90)"},
      {"cutlass", "cutlass gemm"},
      {"gemv", "gemv"},
      {"sgemm", "sgemm"},
      {"silu_backward", "silu (bwd)"},
      {"silu", "silu"},
      {"sigmoid", "sigmoid"},
      {"max_pool", "max pool"},
      {"avg_pool", "avg pool"},
      {"upsample", "upsample"},
      {"catarray", "cat"},
      {"direct_copy_kernel", "copy"},
      {"softmax", "softmax"},
      {"reduce_kernel", "reduce"},
      {"nccl", "nccl collective"},
      {"fill_kernel", "fill"},
      {"fillfunctor", "fill"},
      {"addfunctor", "add"},
      {"mulfunctor", "mul"},
      {"multi_tensor_apply", "multi-tensor apply (optimizer)"},
  };
  const std::string lower = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  for (const auto& [needle, friendly] : *rules) {
    if (absl::StrContains(lower, needle)) return friendly;
  }
  return std::string(name);
}

std::string CutName(std::string_view name, size_t max_chars) {
  if (name.size() <= max_chars) return std::string(name);
  size_t cut = max_chars;
  // Step back over UTF-8 continuation bytes so the result stays valid UTF-8.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return std::string(name.substr(0, cut));
}

}  // namespace libreyolo
