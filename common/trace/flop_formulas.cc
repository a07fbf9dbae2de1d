#include "common/trace/flop_formulas.h"

#include <algorithm>
#include <array>
#include <utility>

namespace libreyolo {
namespace {

using Sizes = std::span<const int64_t>;

// Where an op's convolution arguments sit in its schema (-1: not an argument of it; the
// default applies). x and w are inputs 0 and 1 of every one of them.
struct ConvSchema {
  std::string_view op;
  int stride, padding, dilation, output_padding, transposed_arg;
  bool transposed;  // a transposed convolution by name (conv_transpose2d ...)
};

constexpr std::array kConvSchemas = {
    // conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups)
    ConvSchema{"aten::conv1d", 3, 4, 5, -1, -1, false},
    ConvSchema{"aten::conv2d", 3, 4, 5, -1, -1, false},
    ConvSchema{"aten::conv3d", 3, 4, 5, -1, -1, false},
    // conv_transpose*(input, weight, bias, stride, padding, output_padding, groups, dilation)
    ConvSchema{"aten::conv_transpose1d", 3, 4, 7, 5, -1, true},
    ConvSchema{"aten::conv_transpose2d", 3, 4, 7, 5, -1, true},
    ConvSchema{"aten::conv_transpose3d", 3, 4, 7, 5, -1, true},
    // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
    // groups[, benchmark, deterministic, cudnn_enabled, allow_tf32])
    ConvSchema{"aten::convolution", 3, 4, 5, 7, 6, false},
    ConvSchema{"aten::_convolution", 3, 4, 5, 7, 6, false},
    ConvSchema{"aten::convolution_overrideable", 3, 4, 5, 7, 6, false},
    // mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups)
    ConvSchema{"aten::mkldnn_convolution", 4, 3, 5, -1, -1, false},
    // miopen_convolution(self, weight, bias, padding, stride, dilation, groups, ...)
    ConvSchema{"aten::miopen_convolution", 4, 3, 5, -1, -1, false},
    // _nnpack_spatial_convolution(input, weight, bias, padding, stride)
    ConvSchema{"aten::_nnpack_spatial_convolution", 4, 3, -1, -1, -1, false},
    // thnn_conv2d / _slow_conv2d_forward / slow_conv3d(self, weight, kernel_size, bias, stride,
    // padding)
    ConvSchema{"aten::thnn_conv2d", 4, 5, -1, -1, -1, false},
    ConvSchema{"aten::_slow_conv2d_forward", 4, 5, -1, -1, -1, false},
    ConvSchema{"aten::slow_conv3d", 4, 5, -1, -1, -1, false},
    ConvSchema{"aten::slow_conv3d_forward", 4, 5, -1, -1, -1, false},
    // slow_conv_dilated*d / _conv_depthwise2d(self, weight, kernel_size, bias, stride, padding,
    // dilation)
    ConvSchema{"aten::slow_conv_dilated2d", 4, 5, 6, -1, -1, false},
    ConvSchema{"aten::slow_conv_dilated3d", 4, 5, 6, -1, -1, false},
    ConvSchema{"aten::_conv_depthwise2d", 4, 5, 6, -1, -1, false},
    // slow_conv_transpose*d(self, weight, kernel_size, bias, stride, padding, output_padding,
    // dilation)
    ConvSchema{"aten::slow_conv_transpose2d", 4, 5, 7, 6, -1, true},
    ConvSchema{"aten::slow_conv_transpose3d", 4, 5, 7, 6, -1, true},
    // cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)
    ConvSchema{"aten::cudnn_convolution", 3, 2, 4, -1, -1, false},
    // cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation, ...)
    ConvSchema{"aten::cudnn_convolution_transpose", 4, 2, 5, 3, -1, true},
};

// Matrix products: the input indices of the two operands.
struct MatmulSchema {
  std::string_view op;
  int a, b;
};

constexpr std::array kMatmulSchemas = {
    MatmulSchema{"aten::mm", 0, 1},
    MatmulSchema{"aten::matmul", 0, 1},
    MatmulSchema{"aten::bmm", 0, 1},
    MatmulSchema{"aten::mv", 0, 1},
    MatmulSchema{"aten::dot", 0, 1},
    MatmulSchema{"aten::vdot", 0, 1},
    MatmulSchema{"aten::_scaled_mm", 0, 1},
    MatmulSchema{"aten::addmm", 1, 2},
    MatmulSchema{"aten::_addmm_activation", 1, 2},
    MatmulSchema{"aten::addmv", 1, 2},
    MatmulSchema{"aten::baddbmm", 1, 2},
    MatmulSchema{"aten::addbmm", 1, 2},
};

// linear(input, weight[, bias]): input [..., in] @ weight[out, in]^T.
constexpr std::array<std::string_view, 2> kLinearOps = {"aten::linear", "aten::mkldnn_linear"};

// Scaled dot-product attention, forward: (query, key, value, ...).
constexpr std::array<std::string_view, 7> kSdpaOps = {
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_attention_math",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_fused_attention_overrideable",
};

// Its backward: (grad_out, query, key, value, ...).
constexpr std::array<std::string_view, 5> kSdpaBackwardOps = {
    "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_cudnn_attention_backward",
    "aten::_scaled_dot_product_fused_attention_overrideable_backward",
};

// FLOP-bearing ops without a formula here: a total that holds one of them, and no count of the
// ops it dispatches to, is a lower bound.
constexpr std::array<std::string_view, 18> kNoFormulaOps = {
    "aten::_flash_attention_forward",
    "aten::_efficient_attention_forward",
    "aten::_flash_attention_backward",
    "aten::_efficient_attention_backward",
    "aten::lstm",
    "aten::gru",
    "aten::rnn_tanh",
    "aten::rnn_relu",
    "aten::lstm_cell",
    "aten::gru_cell",
    "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell",
    "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_gru_cell",
    "aten::mkldnn_rnn_layer",
    "aten::_cudnn_rnn",
    "aten::miopen_rnn",
    "aten::conv_tbc",
};

constexpr std::string_view kConvBackward = "aten::convolution_backward";

template <typename T>
const T* Find(const auto& table, std::string_view op) {
  for (const T& s : table) {
    if (s.op == op) return &s;
  }
  return nullptr;
}

bool In(const auto& names, std::string_view op) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

const FlopArg* Arg(std::span<const FlopArg> args, int i) {
  return i >= 0 && static_cast<size_t>(i) < args.size() ? &args[static_cast<size_t>(i)] : nullptr;
}

std::optional<Sizes> TensorArg(std::span<const FlopArg> args, int i) {
  const FlopArg* a = Arg(args, i);
  if (a == nullptr || a->kind != FlopArg::Kind::kTensor) return std::nullopt;
  return Sizes(a->values);
}

// Element d of a parameter given per spatial dim or once for all (empty: `fallback`).
int64_t Param(const std::vector<int64_t>& v, size_t d, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : d < v.size() ? v[d] : fallback;
}

double Product(Sizes s) {
  double p = 1;
  for (const int64_t v : s) p *= static_cast<double>(v);
  return p;
}

// The int list at input `i` into `out`; false when the schema has it (i >= 0) and the record
// does not (a collector without the op's scalar inputs: no guessing the defaults).
bool ReadInts(std::span<const FlopArg> args, int i, std::vector<int64_t>& out) {
  if (i < 0) return true;
  const FlopArg* a = Arg(args, i);
  if (a == nullptr || a->kind != FlopArg::Kind::kInts) return false;
  out = a->values;
  return true;
}

std::optional<double> ConvFlopsOf(const ConvSchema& s, std::span<const FlopArg> args) {
  const auto x = TensorArg(args, 0);
  const auto w = TensorArg(args, 1);
  if (!x || !w) return std::nullopt;
  ConvParams p;
  p.transposed = s.transposed;
  if (!ReadInts(args, s.stride, p.stride) || !ReadInts(args, s.dilation, p.dilation)) {
    return std::nullopt;
  }
  if (s.transposed_arg >= 0) {
    const FlopArg* t = Arg(args, s.transposed_arg);
    if (t == nullptr || t->kind != FlopArg::Kind::kBools || t->values.size() != 1) {
      return std::nullopt;
    }
    p.transposed = t->values[0] != 0;
  }
  if (s.padding >= 0) {
    const FlopArg* pad = Arg(args, s.padding);
    if (pad != nullptr && pad->kind == FlopArg::Kind::kString) {
      if (pad->text == "same") {
        p.padding_same = true;
      } else if (pad->text != "valid") {
        return std::nullopt;
      }
    } else if (!ReadInts(args, s.padding, p.padding)) {
      return std::nullopt;
    }
  }
  return ConvFlops(*x, *w, p);
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): grad_input and grad_weight each cost the
// forward's multiply-adds (torch.utils.flop_counter counts grad_weight of a grouped convolution
// `groups` times over; here it is the forward's count).
std::optional<double> ConvBackwardFlops(std::span<const FlopArg> args) {
  const auto x = TensorArg(args, 1);
  const auto w = TensorArg(args, 2);
  const FlopArg* mask = Arg(args, 10);
  const FlopArg* transposed = Arg(args, 7);
  if (!x || !w || mask == nullptr || mask->kind != FlopArg::Kind::kBools || transposed == nullptr ||
      transposed->kind != FlopArg::Kind::kBools || transposed->values.size() != 1) {
    return std::nullopt;
  }
  ConvParams p;
  if (!ReadInts(args, 4, p.stride) || !ReadInts(args, 5, p.padding) ||
      !ReadInts(args, 6, p.dilation)) {
    return std::nullopt;
  }
  p.transposed = transposed->values[0] != 0;
  const auto forward = ConvFlops(*x, *w, p);
  if (!forward) return std::nullopt;
  double passes = 0;
  for (size_t i = 0; i < mask->values.size() && i < 2; ++i) passes += mask->values[i] != 0 ? 1 : 0;
  return *forward * passes;
}

std::optional<double> LinearFlops(std::span<const FlopArg> args) {
  const auto x = TensorArg(args, 0);
  const auto w = TensorArg(args, 1);
  if (!x || !w || x->empty() || w->size() > 2 || w->empty()) return std::nullopt;
  // weight [out, in] (or [in] for a vector weight): x @ weight^T.
  std::vector<int64_t> wt =
      w->size() == 2 ? std::vector<int64_t>{(*w)[1], (*w)[0]} : std::vector<int64_t>{(*w)[0]};
  return MatmulFlops(*x, wt);
}

std::optional<double> SdpaBackwardFlops(std::span<const FlopArg> args) {
  const auto q = TensorArg(args, 1);
  const auto k = TensorArg(args, 2);
  const auto v = TensorArg(args, 3);
  if (!q || !k || !v || q->size() < 2 || k->size() != q->size() || v->size() != q->size()) {
    return std::nullopt;
  }
  const size_t r = q->size();
  const double batch = Product(q->subspan(0, r - 2));
  const double l = static_cast<double>((*q)[r - 2]), e = static_cast<double>((*q)[r - 1]);
  const double s = static_cast<double>((*k)[r - 2]), ev = static_cast<double>((*v)[r - 1]);
  // torch.utils.flop_counter's five products: scores again, grad scores, grad V, grad Q, grad K.
  return 2 * batch * l * s * (3 * e + 2 * ev);
}

}  // namespace

FlopArg FlopArg::Tensor(std::vector<int64_t> sizes) {
  FlopArg a;
  a.kind = Kind::kTensor;
  a.values = std::move(sizes);
  return a;
}

FlopArg FlopArg::Ints(std::vector<int64_t> v) {
  FlopArg a;
  a.kind = Kind::kInts;
  a.values = std::move(v);
  return a;
}

FlopArg FlopArg::Bools(std::vector<bool> v) {
  FlopArg a;
  a.kind = Kind::kBools;
  for (const bool b : v) a.values.push_back(b ? 1 : 0);
  return a;
}

FlopArg FlopArg::String(std::string s) {
  FlopArg a;
  a.kind = Kind::kString;
  a.text = std::move(s);
  return a;
}

FlopOpClass ClassifyFlopOp(std::string_view op) {
  if (Find<ConvSchema>(kConvSchemas, op) != nullptr ||
      Find<MatmulSchema>(kMatmulSchemas, op) != nullptr || In(kLinearOps, op) || In(kSdpaOps, op) ||
      In(kSdpaBackwardOps, op) || op == kConvBackward) {
    return FlopOpClass::kFormula;
  }
  return In(kNoFormulaOps, op) ? FlopOpClass::kNoFormula : FlopOpClass::kNone;
}

std::optional<double> FlopsOf(std::string_view op, std::span<const FlopArg> args) {
  if (const ConvSchema* s = Find<ConvSchema>(kConvSchemas, op)) return ConvFlopsOf(*s, args);
  if (const MatmulSchema* s = Find<MatmulSchema>(kMatmulSchemas, op)) {
    const auto a = TensorArg(args, s->a);
    const auto b = TensorArg(args, s->b);
    if (!a || !b) return std::nullopt;
    return MatmulFlops(*a, *b);
  }
  if (In(kLinearOps, op)) return LinearFlops(args);
  if (In(kSdpaOps, op)) {
    const auto q = TensorArg(args, 0);
    const auto k = TensorArg(args, 1);
    const auto v = TensorArg(args, 2);
    if (!q || !k || !v) return std::nullopt;
    return SdpaFlops(*q, *k, *v);
  }
  if (In(kSdpaBackwardOps, op)) return SdpaBackwardFlops(args);
  if (op == kConvBackward) return ConvBackwardFlops(args);
  return std::nullopt;
}

std::optional<double> ConvFlops(Sizes x, Sizes w, const ConvParams& p) {
  // x [N, C_in, *in], w [*, *, *k]: the same number of spatial dims (>= 1). An unbatched
  // input [C_in, *in] counts as N = 1.
  if (w.size() < 3) return std::nullopt;
  const size_t spatial = w.size() - 2;
  if (x.size() == spatial + 1) {
    std::vector<int64_t> batched{1};
    batched.insert(batched.end(), x.begin(), x.end());
    return ConvFlops(batched, w, p);
  }
  if (x.size() != spatial + 2) return std::nullopt;
  const double n = static_cast<double>(x[0]);
  if (p.transposed) {
    // Every input point meets the whole filter: N * prod(in) * C_in * C_out/g * prod(k).
    return 2.0 * n * Product(x.subspan(2)) * Product(w);
  }
  double out_points = 1;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = x[2 + d];
    const int64_t k = w[2 + d];
    int64_t out = in;
    if (!p.padding_same) {
      const int64_t stride = Param(p.stride, d, 1);
      const int64_t pad = Param(p.padding, d, 0);
      const int64_t dil = Param(p.dilation, d, 1);
      if (stride <= 0) return std::nullopt;
      const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
      out = span < 0 ? 0 : span / stride + 1;
    }
    out_points *= static_cast<double>(out);
  }
  // Each output point: C_out * (C_in/g) * prod(k) multiply-adds = prod(w).
  return 2.0 * n * out_points * Product(w);
}

std::optional<double> MatmulFlops(Sizes a, Sizes b) {
  if (a.empty() || b.empty()) return std::nullopt;
  // torch.matmul: a 1-D left operand is a row [1, k], a 1-D right one a column [k, 1].
  const int64_t m = a.size() == 1 ? 1 : a[a.size() - 2];
  const int64_t k = a.back();
  const int64_t k2 = b.size() == 1 ? b[0] : b[b.size() - 2];
  const int64_t n = b.size() == 1 ? 1 : b.back();
  if (k != k2) return std::nullopt;
  // Broadcast batch dims.
  const Sizes ab = a.size() > 2 ? a.subspan(0, a.size() - 2) : Sizes();
  const Sizes bb = b.size() > 2 ? b.subspan(0, b.size() - 2) : Sizes();
  double batch = 1;
  const size_t dims = std::max(ab.size(), bb.size());
  for (size_t i = 0; i < dims; ++i) {
    const int64_t da = i < ab.size() ? ab[ab.size() - 1 - i] : 1;
    const int64_t db = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    batch *= static_cast<double>(std::max(da, db));
  }
  return 2.0 * batch * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
}

std::optional<double> SdpaFlops(Sizes q, Sizes k, Sizes v) {
  if (q.size() < 2 || k.size() < 2 || v.size() < 2) return std::nullopt;
  const double batch = Product(q.subspan(0, q.size() - 2));
  const double l = static_cast<double>(q[q.size() - 2]), e = static_cast<double>(q.back());
  const double s = static_cast<double>(k[k.size() - 2]), ev = static_cast<double>(v.back());
  if (k.back() != q.back() || v[v.size() - 2] != k[k.size() - 2]) return std::nullopt;
  return 2.0 * batch * l * s * e + 2.0 * batch * l * s * ev;
}

}  // namespace libreyolo
