// Helpers shared by the TorchScript export tests: the Python tool's .npy blobs and reference
// JSON, and the comparison of our detections with its backend's.
#ifndef LIBREYOLO_TESTS_ENGINE_INFER_DETECTION_MATCH_H_
#define LIBREYOLO_TESTS_ENGINE_INFER_DETECTION_MATCH_H_

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/engine/engine.h"
#include "server/engine/infer/postprocess.h"

namespace libreyolo::engine::test_match {

// A little-endian float32, C-order .npy file (what numpy.save writes for the blobs).
inline torch::Tensor ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  EXPECT_GE(bytes.size(), 10u) << path;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return {};
  const size_t header_len = static_cast<unsigned char>(bytes[8]) |
                            (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  const bool fortran = header.find("'fortran_order': True") != std::string::npos;
  std::vector<int64_t> shape;
  const size_t open = header.find("'shape': (");
  size_t p = open + 10;
  while (p < header.size() && header[p] != ')') {
    size_t used = 0;
    shape.push_back(std::stoll(header.substr(p), &used));
    p += used;
    while (p < header.size() && (header[p] == ',' || header[p] == ' ')) ++p;
  }
  const size_t data = 10 + header_len;
  torch::Tensor t = torch::empty(shape, torch::kFloat);
  EXPECT_EQ(bytes.size() - data, static_cast<size_t>(t.numel()) * 4) << path;
  if (fortran) {  // column-major: the reversed shape in C order, transposed back
    std::vector<int64_t> reversed(shape.rbegin(), shape.rend());
    t = torch::empty(reversed, torch::kFloat);
  }
  std::memcpy(t.data_ptr<float>(), bytes.data() + data, static_cast<size_t>(t.numel()) * 4);
  if (fortran) {
    std::vector<int64_t> dims;
    for (int64_t d = t.dim() - 1; d >= 0; --d) dims.push_back(d);
    t = t.permute(dims).contiguous();
  }
  return t;
}

inline rapidjson::Document ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  return d;
}

// `box_px`, `score`: the tolerances. Decoding the Python tool's own outputs agrees to float32
// rounding (1e-3 px on ~1000 px coordinates, 1e-6 on scores). Our forward is not bit for bit
// the Python one (LibTorch picks kernels and splits reductions by thread count and CPU), so end to
// end the same detections means: the same count, classes and order, each box within half a
// source pixel, each score within 1e-4 (the reference's scores are distinct and further apart);
// a detection scored within that of --conf may fall on either side of it (both lists are by
// descending score, so those are their tails): at most `max_at_threshold` of them. Returns the
// largest coordinate difference of a matched pair.
inline double ExpectSameDetections(const Detections& got, const rapidjson::Value& want,
                                   const std::string& what, double box_px, double score, double conf,
                                   size_t max_at_threshold = 2) {
  const auto above = [&](double s) { return s > conf + score; };
  rapidjson::SizeType n_want = 0;
  while (n_want < want.Size() && above(want[n_want]["score"].GetDouble())) ++n_want;
  int64_t n_got = 0;
  while (n_got < got.scores.size(0) && above(got.scores[n_got].item<double>())) ++n_got;
  double max_diff = 0;  // the largest coordinate difference of a matched pair
  EXPECT_EQ(n_got, static_cast<int64_t>(n_want)) << what;
  if (n_got != static_cast<int64_t>(n_want)) return max_diff;
  EXPECT_LE(want.Size() - n_want, max_at_threshold)
      << what << ": more detections at the threshold than the tolerance allows";
  const auto boxes = got.boxes.accessor<float, 2>();
  const auto scores = got.scores.accessor<float, 1>();
  const auto classes = got.classes.accessor<int64_t, 1>();
  // In order; two detections whose scores are within the tolerance of each other may come in
  // either order (whichever kernels the CPU's libraries pick), so each is matched to an unused
  // one of the same class, score and box among those.
  const auto matches = [&](int64_t k, const rapidjson::Value& w) {
    if (classes[k] != w["cls"].GetInt64() || std::abs(static_cast<double>(scores[k]) - w["score"].GetDouble()) > score) {
      return false;
    }
    for (rapidjson::SizeType c = 0; c < 4; ++c) {
      if (std::abs(static_cast<double>(boxes[k][c]) - w["box"][c].GetDouble()) > box_px) return false;
    }
    return true;
  };
  std::vector<bool> used(static_cast<size_t>(n_got), false);
  for (rapidjson::SizeType i = 0; i < n_want; ++i) {
    const rapidjson::Value& w = want[i];
    int64_t found = -1;
    for (int64_t k = 0; k < n_got && found < 0; ++k) {
      if (!used[static_cast<size_t>(k)] && matches(k, w)) found = k;
    }
    EXPECT_GE(found, 0) << what << " detection " << i << " (class " << w["cls"].GetInt64()
                        << ", score " << w["score"].GetDouble() << ") has no match; ours at "
                        << i << ": class " << classes[i] << ", score " << scores[i];
    if (found < 0) return max_diff;
    for (rapidjson::SizeType c = 0; c < 4; ++c) {
      max_diff = std::max(max_diff, std::abs(static_cast<double>(boxes[found][c]) -
                                             w["box"][c].GetDouble()));
    }
    // Out of order only among scores within the tolerance.
    EXPECT_LE(std::abs(scores[found] - scores[static_cast<int64_t>(i)]), 2 * score)
        << what << " detection " << i;
    used[static_cast<size_t>(found)] = true;
  }
  return max_diff;
}

// The job both export tests run on the Python tool's export and image: the CPU, one thread, a
// warm-up, two measured runs and one profiled, without the overhead probes (17 to 51 more
// forwards; engine_infer_job_test covers them): the trace, its analysis and the profile are what
// an export adds.
inline InferJobSpec ExportJobSpec(const std::string& weights, const std::string& image,
                                  const std::string& project) {
  InferJobSpec spec;
  spec.model.device = "cpu";
  spec.model.threads = 1;
  spec.model.weights = weights;
  spec.source = image;
  spec.warmup = 1;
  spec.runs = 2;
  spec.profiled_runs = 1;
  spec.profiler.probe_overhead = false;
  spec.project = project;
  return spec;
}

}  // namespace libreyolo::engine::test_match

#endif  // LIBREYOLO_TESTS_ENGINE_INFER_DETECTION_MATCH_H_
