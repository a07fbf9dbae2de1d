#include "server/engine/data/pil_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace libreyolo::engine {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Resample.c: PRECISION_BITS

// For each output index: the first source index and how many, and their fixed-point weights.
struct Coefficients {
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // out_size x ksize
  int ksize = 0;
};

// Resample.c's bilinear_filter and bicubic_filter (a = -0.5); their supports are 1 and 2.
double FilterWeight(PilFilter filter, double x) {
  x = std::fabs(x);
  if (filter == PilFilter::kBilinear) return x < 1.0 ? 1.0 - x : 0.0;
  constexpr double a = -0.5;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

Coefficients Precompute(int in_size, int out_size, PilFilter filter = PilFilter::kBilinear) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  // The filter's support (bilinear 1, bicubic 2), widened when downscaling.
  const double support = (filter == PilFilter::kBicubic ? 2.0 : 1.0) * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<size_t>(out_size));
  c.count.resize(static_cast<size_t>(out_size));
  c.weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(c.ksize), 0);
  std::vector<double> w(static_cast<size_t>(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double total = 0;
    for (int x = 0; x < xmax; ++x) {
      w[static_cast<size_t>(x)] = FilterWeight(filter, (x + xmin - center + 0.5) / filterscale);
      total += w[static_cast<size_t>(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = total != 0.0 ? w[static_cast<size_t>(x)] / total : w[static_cast<size_t>(x)];
      // normalize_coeffs_8bpc: round half away from zero (bicubic's weights can be negative).
      c.weights[static_cast<size_t>(xx) * static_cast<size_t>(c.ksize) + static_cast<size_t>(x)] =
          static_cast<int32_t>((v < 0 ? -0.5 : 0.5) + v * (1 << kPrecisionBits));
    }
    c.first[static_cast<size_t>(xx)] = xmin;
    c.count[static_cast<size_t>(xx)] = xmax;
  }
  return c;
}

// Sums are 32-bit, as Resample.c's INT32 ss: the weights of one output sum to ~2^22 (each
// rounded up by at most 1/2), so 255 x that plus the rounding term stays below 2^31 for any
// kernel size a downscale can make.
uint8_t Clip8(int32_t v) {
  if (v >= (int32_t{1} << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

constexpr int32_t kHalf = int32_t{1} << (kPrecisionBits - 1);

// One pass along columns (horizontal) of rows [row0, row0 + rows) of `src`: per output pixel,
// every channel's sum over the same taps at once (one read of the weights). kChannels is known
// at compile time for the common cases (1, 3, 4); 0 reads it from `src` (at most cv::Mat's 512).
template <int kChannels>
void HorizontalRows(const cv::Mat& src, const Coefficients& c, int row0, cv::Mat& out) {
  constexpr size_t kMax = kChannels > 0 ? size_t{kChannels} : size_t{CV_CN_MAX};
  const int channels = kChannels > 0 ? kChannels : src.channels();
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* in = src.ptr<uint8_t>(row0 + y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int xx = 0; xx < out.cols; ++xx) {
      const int32_t* k = &c.weights[static_cast<size_t>(xx) * static_cast<size_t>(c.ksize)];
      const uint8_t* px = in + static_cast<ptrdiff_t>(c.first[static_cast<size_t>(xx)]) * channels;
      const int n = c.count[static_cast<size_t>(xx)];
      int32_t ss[kMax];
      for (int b = 0; b < channels; ++b) ss[b] = kHalf;
      for (int x = 0; x < n; ++x, px += channels) {
        for (int b = 0; b < channels; ++b) ss[b] += int32_t{px[b]} * k[x];
      }
      for (int b = 0; b < channels; ++b) o[xx * channels + b] = Clip8(ss[b]);
    }
  }
}

cv::Mat Horizontal(const cv::Mat& src, int row0, int rows, int width, PilFilter filter) {
  const Coefficients c = Precompute(src.cols, width, filter);
  cv::Mat out(rows, width, src.type());
  switch (src.channels()) {
    case 1: HorizontalRows<1>(src, c, row0, out); break;
    case 3: HorizontalRows<3>(src, c, row0, out); break;
    case 4: HorizontalRows<4>(src, c, row0, out); break;
    default: HorizontalRows<0>(src, c, row0, out); break;
  }
  return out;
}

// One pass along rows (vertical); `c` computed for the full source height, shifted by `row0`.
// Each output row is its taps' source rows weighted and summed row by row (contiguous, so the
// compiler vectorises it); integer sums in any order are Resample.c's per-pixel sums exactly.
cv::Mat Vertical(const cv::Mat& src, const Coefficients& c, int row0, int height) {
  const int n_values = src.cols * src.channels();
  cv::Mat out(height, src.cols, src.type());
  std::vector<int32_t> ss(static_cast<size_t>(n_values));
  for (int yy = 0; yy < height; ++yy) {
    const int32_t* k = &c.weights[static_cast<size_t>(yy) * static_cast<size_t>(c.ksize)];
    const int ymin = c.first[static_cast<size_t>(yy)] - row0;
    const int n = c.count[static_cast<size_t>(yy)];
    std::fill(ss.begin(), ss.end(), kHalf);
    for (int y = 0; y < n; ++y) {
      const uint8_t* row = src.ptr<uint8_t>(y + ymin);
      const int32_t w = k[y];
      int32_t* acc = ss.data();
      for (int i = 0; i < n_values; ++i) acc[i] += int32_t{row[i]} * w;
    }
    uint8_t* o = out.ptr<uint8_t>(yy);
    for (int i = 0; i < n_values; ++i) o[i] = Clip8(ss[static_cast<size_t>(i)]);
  }
  return out;
}

}  // namespace

cv::Mat PilBilinearResize(const cv::Mat& src, int width, int height) {
  return PilResize(src, width, height, PilFilter::kBilinear);
}

cv::Mat PilResize(const cv::Mat& src, int width, int height, PilFilter filter) {
  const Coefficients vertical = Precompute(src.rows, height, filter);
  cv::Mat tmp = src;
  int row0 = 0;
  if (width != src.cols) {
    // ImagingResampleInner: the horizontal pass only over the rows the vertical pass reads.
    row0 = vertical.first.front();
    const int row_end = vertical.first.back() + vertical.count.back();
    tmp = Horizontal(src, row0, row_end - row0, width, filter);
  }
  if (height == src.rows) return tmp.clone();
  return Vertical(tmp, vertical, row0, height);
}

}  // namespace libreyolo::engine
