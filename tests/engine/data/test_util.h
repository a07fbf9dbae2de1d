// Helpers for the data tests: a self-cleaning temp folder and a tiny on-disk YOLO dataset made
// by the test itself (PNG images of coloured rectangles with matching labels).
#ifndef LIBREYOLO_TESTS_ENGINE_DATA_TEST_UTIL_H_
#define LIBREYOLO_TESTS_ENGINE_DATA_TEST_UTIL_H_

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace libreyolo::engine::testing {

namespace fs = std::filesystem;

using ::libreyolo::test::TempDir;

// The pure colour of class `cls` in the test images (BGR), far from the grey background.
inline cv::Scalar ClassColor(int cls) {
  static const cv::Scalar kColors[] = {{0, 0, 255},   {0, 255, 0},   {255, 0, 0},
                                       {0, 255, 255}, {255, 0, 255}, {255, 255, 0}};
  return kColors[cls % 6];
}

// Writes <root>/images/train/img<i>.png and <root>/labels/train/img<i>.txt for `count`
// images of varied sizes, each with one or two rectangles of class colour, and data.yaml.
inline std::string WriteTinyDataset(const std::string& root, int count, int nc = 3) {
  fs::create_directories(fs::path(root) / "images" / "train");
  fs::create_directories(fs::path(root) / "labels" / "train");
  for (int i = 0; i < count; ++i) {
    const int w = 64 + 16 * (i % 4), h = 48 + 16 * ((i / 2) % 3);
    cv::Mat image(h, w, CV_8UC3, cv::Scalar(128, 128, 128));
    std::string labels;
    const int boxes = 1 + i % 2;
    for (int k = 0; k < boxes; ++k) {
      const int cls = (i + k) % nc;
      const cv::Rect r(4 + k * w / 2, 6 + k * 4, w / 3, h / 2);
      cv::rectangle(image, r, ClassColor(cls), cv::FILLED);
      labels += std::to_string(cls) + " " + std::to_string((r.x + r.width / 2.0) / w) + " " +
                std::to_string((r.y + r.height / 2.0) / h) + " " +
                std::to_string(static_cast<double>(r.width) / w) + " " +
                std::to_string(static_cast<double>(r.height) / h) + "\n";
    }
    const std::string stem = "img" + std::to_string(i);
    cv::imwrite((fs::path(root) / "images" / "train" / (stem + ".png")).string(), image);
    std::ofstream(fs::path(root) / "labels" / "train" / (stem + ".txt")) << labels;
  }
  const std::string yaml = (fs::path(root) / "data.yaml").string();
  std::ofstream(yaml) << "path: " << root << "\ntrain: images/train\nval: images/train\nnc: " << nc
                      << "\n";
  return yaml;
}

}  // namespace libreyolo::engine::testing

#endif  // LIBREYOLO_TESTS_ENGINE_DATA_TEST_UTIL_H_
