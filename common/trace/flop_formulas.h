// FLOPs of the convolutions and matrix products a trace records, from an op's recorded inputs
// (issue 38 §3): whatever aten entry point a graph reaches them by (a traced TorchScript graph
// records aten::_convolution, eager code aten::conv2d, the backends mkldnn_convolution,
// thnn_conv2d, cudnn_convolution ...), with torch.utils.flop_counter's conventions: 2 FLOPs per
// multiply-add, bias and softmax not counted, a convolution's padding counted as its output
// size says. Torch-free, so the collectors (server/engine/collect) and the analyser (which names
// the ops a total lacks) share one table, and it is tested without LibTorch.
//
// One FLOP-bearing computation reaches the recorder as a chain (conv2d -> convolution ->
// _convolution -> mkldnn_convolution, matmul -> mm, sdpa -> its _scaled_dot_product_* kernel):
// it is counted once, on the outermost op of the chain that has a formula (flop_attribution.h).
#ifndef LIBREYOLO_COMMON_TRACE_FLOP_FORMULAS_H_
#define LIBREYOLO_COMMON_TRACE_FLOP_FORMULAS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace libreyolo {

// One recorded input of an op, as the formulas need it: a tensor's sizes, an int or int list
// (stride, padding, groups ...), a bool or bool list (transposed, output_mask), a string
// (conv2d's padding="same"), or anything else / none.
struct FlopArg {
  enum class Kind : uint8_t { kNone, kTensor, kInts, kBools, kString };
  Kind kind = Kind::kNone;
  std::vector<int64_t> values;  // kTensor: its sizes; kInts: the ints; kBools: 0/1
  std::string text;             // kString

  static FlopArg Tensor(std::vector<int64_t> sizes);
  static FlopArg Ints(std::vector<int64_t> v);
  static FlopArg Bools(std::vector<bool> v);
  static FlopArg String(std::string s);
  static FlopArg None() { return {}; }
};

enum class FlopOpClass : uint8_t {
  kNone,       // not a convolution or matrix product (add, mul, relu ...)
  kFormula,    // one we count (FlopsOf)
  kNoFormula,  // FLOP-bearing, but no formula here (RNN cells, raw attention kernels ...)
};

// Whether `op` ("aten::_convolution", ...) is a convolution or matrix product, and whether we
// have its formula.
FlopOpClass ClassifyFlopOp(std::string_view op);
inline bool IsFlopBearingOp(std::string_view op) {
  return ClassifyFlopOp(op) != FlopOpClass::kNone;
}

// The FLOPs of `op` on `args` (its inputs in schema order); nullopt when `op` has no formula or
// its inputs cannot be read (a missing shape, an unexpected rank).
std::optional<double> FlopsOf(std::string_view op, std::span<const FlopArg> args);

// The formulas themselves, for the tests and for callers with shapes at hand.
// Convolution: x [N, C_in, *in], w [C_out, C_in/g, *k] (transposed: [C_in, C_out/g, *k]);
// stride/padding/dilation/output_padding broadcast from one value; empty: the defaults.
struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  bool padding_same = false;  // conv*d(padding="same"): the output keeps the input's size
};
std::optional<double> ConvFlops(std::span<const int64_t> x, std::span<const int64_t> w,
                                const ConvParams& p);
// a [..., m, k] @ b [..., k, n] with broadcast batch dims; 1-D operands as torch.matmul reads them.
std::optional<double> MatmulFlops(std::span<const int64_t> a, std::span<const int64_t> b);
// Attention: q [..., L, E], k [..., S, E], v [..., S, Ev]: q k^T and (scores) v.
std::optional<double> SdpaFlops(std::span<const int64_t> q, std::span<const int64_t> k,
                                std::span<const int64_t> v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_FLOP_FORMULAS_H_
