// Pillow's Image.resize(..., BILINEAR) on 8-bit images, bit for bit: the resize the Python
// LibreYOLO's YOLOX, YOLO7, D-FINE, DEIM and LW-DETR preprocessing uses (through PIL), which is
// not OpenCV's INTER_LINEAR (an antialiased triangle filter widened by the downscale factor;
// against cv::resize it differs by up to 126 levels). A port of Pillow's libImaging/Resample.c
// (precompute_coeffs, normalize_coeffs_8bpc, ImagingResampleHorizontal/Vertical_8bpc).
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_PIL_RESIZE_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_PIL_RESIZE_H_

#include <opencv2/core.hpp>

namespace libreyolo::engine {

// `src`: CV_8UC1 or CV_8UC3 (channels are independent, so BGR and RGB give the same planes).
// The horizontal pass runs first, over the source rows the vertical pass reads, into 8 bits.
cv::Mat PilBilinearResize(const cv::Mat& src, int width, int height);

// The same with Pillow's BICUBIC filter too (a = -0.5, support 2; negative weights, clipped to
// 8 bits after each pass): torchvision's Resize of a PIL image, which the Python LibreYOLO's
// classification eval transform runs (interpolation "bicubic" in an export's metadata).
enum class PilFilter { kBilinear, kBicubic };
cv::Mat PilResize(const cv::Mat& src, int width, int height, PilFilter filter);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_PIL_RESIZE_H_
