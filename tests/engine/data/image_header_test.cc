// Issue 40 A.9: an image's declared size is read from its header before anything is decoded,
// and one over the engine's bound is refused with its size (a 380 KB PNG of 20000 x 20000 used
// to decode to +1.1 GiB per job).
#include "server/engine/data/image_header.h"

#include <unistd.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/data/dataset.h"
#include "server/engine/data/image_io.h"
#include "server/engine/data/inference_source.h"

namespace libreyolo::engine {
namespace {

using ::testing::HasSubstr;

std::string Encode(const std::string& ext, int width, int height) {
  cv::Mat image(height, width, CV_8UC3, cv::Scalar(10, 200, 30));
  std::vector<uchar> out;
  EXPECT_TRUE(cv::imencode(ext, image, out)) << ext;
  return std::string(out.begin(), out.end());
}

TEST(DeclaredImageSize, ReadsTheHeaderOfEachFormatOpenCvWrites) {
  for (const std::string ext : {".png", ".jpg", ".bmp", ".webp"}) {
    const std::optional<ImageSize> size = DeclaredImageSize(Encode(ext, 37, 23));
    ASSERT_TRUE(size.has_value()) << ext;
    EXPECT_EQ(size->width, 37) << ext;
    EXPECT_EQ(size->height, 23) << ext;
  }
  // A progressive JPEG's start-of-frame is C2, after its tables.
  std::vector<uchar> progressive;
  ASSERT_TRUE(cv::imencode(".jpg", cv::Mat(19, 41, CV_8UC3, cv::Scalar(1, 2, 3)), progressive,
                           {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  const auto p = DeclaredImageSize(std::string(progressive.begin(), progressive.end()));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->width, 41);
  EXPECT_EQ(p->height, 19);
}

TEST(DeclaredImageSize, SaysNothingOfWhatItCannotRead) {
  EXPECT_FALSE(DeclaredImageSize("").has_value());
  EXPECT_FALSE(DeclaredImageSize("not an image at all").has_value());
  EXPECT_FALSE(DeclaredImageSize(std::string("\x89PNG\r\n\x1a\n", 8)).has_value());  // cut
  EXPECT_FALSE(DeclaredImageSize(std::string("\xFF\xD8\xFF\xE0\x00", 5)).has_value());
}

// A PNG whose header declares 20000 x 20000: refused before decoding, naming its size and the
// bound; an image within the bound decodes as before.
TEST(DecodeImageBytes, AnImageOverTheBoundIsRefusedFromItsHeader) {
  std::string png = Encode(".png", 8, 8);
  auto be32 = [&](size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) png[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  };
  be32(16, 20000);
  be32(20, 20000);
  const absl::StatusOr<cv::Mat> big = DecodeImageBytes(png, "huge.png");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("'huge.png' is 20000 x 20000 pixels, over the bound of 67108864 "
                        "decoded pixels (8192 x 8192): resize it"));
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("limits.max_decoded_pixels (--max-decoded-pixels)"));
  const absl::StatusOr<cv::Mat> small = DecodeImageBytes(Encode(".png", 8, 8), "small.png");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->cols, 8);
  be32(16, 0);
  EXPECT_THAT(std::string(DecodeImageBytes(png, "empty.png").status().message()),
              HasSubstr("an empty image"));
}

// Issue 40 A.9: the bound is the caller's (a daemon's limits.max_decoded_pixels): an image
// over a small configured bound is refused naming it and the option; one at the bound decodes.
TEST(DecodeImageBytes, TheBoundIsTheCallersAndNamesTheDaemonOption) {
  const std::string png = Encode(".png", 40, 30);  // 1200 pixels
  const absl::StatusOr<cv::Mat> over = DecodeImageBytes(png, "a.png", 1199);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(over.status().message()),
              HasSubstr("image 'a.png' is 40 x 30 pixels, over the bound of 1199 decoded pixels: "
                        "resize it"));
  EXPECT_THAT(std::string(over.status().message()),
              HasSubstr("limits.max_decoded_pixels (--max-decoded-pixels)"));
  const absl::StatusOr<cv::Mat> at = DecodeImageBytes(png, "a.png", 1200);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(at->cols, 40);
  // A square bound is shown as its side too.
  EXPECT_THAT(std::string(DecodeImageBytes(png, "a.png", 900).status().message()),
              HasSubstr("over the bound of 900 decoded pixels (30 x 30)"));
}

// A format whose header is not read here (TIFF) is held to the same bound once decoded.
TEST(DecodeImageBytes, AFormatWithoutAReadHeaderIsBoundAfterDecoding) {
  std::vector<uchar> out;
  bool encoded = false;
  try {
    encoded = cv::imencode(".tiff", cv::Mat(30, 40, CV_8UC3, cv::Scalar(1, 2, 3)), out);
  } catch (const cv::Exception&) {
  }
  if (!encoded) GTEST_SKIP() << "this OpenCV writes no TIFF";
  const std::string tiff(out.begin(), out.end());
  ASSERT_FALSE(DeclaredImageSize(tiff).has_value());
  EXPECT_THAT(std::string(DecodeImageBytes(tiff, "a.tiff", 1000).status().message()),
              HasSubstr("image 'a.tiff' is 40 x 30 pixels, over the bound of 1000"));
  EXPECT_TRUE(DecodeImageBytes(tiff, "a.tiff", 1200).ok());
}

// The dataset and the inference source pass their bound to the decoder.
TEST(DecodedPixelBound, ReachesTheDatasetAndTheInferenceSource) {
  const std::string dir = ::testing::TempDir() + "/pixel_bound_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/a.png";
  ASSERT_TRUE(cv::imwrite(path, cv::Mat(30, 40, CV_8UC3, cv::Scalar(1, 2, 3))));

  auto bounded = FileDataset::Open({path}, 1, "test", /*allow_empty=*/false, 1000);
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_THAT(std::string((*bounded)->Load(0).status().message()),
              HasSubstr("is 40 x 30 pixels, over the bound of 1000"));
  auto roomy = FileDataset::Open({path}, 1, "test", /*allow_empty=*/false, 1200);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  EXPECT_TRUE((*roomy)->Load(0).ok());

  absl::StatusOr<InferenceSource> source = ResolveInferenceSource(path);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_THAT(std::string(LoadInferenceImage(*source, 0, 1000).status().message()),
              HasSubstr("is 40 x 30 pixels, over the bound of 1000"));
  EXPECT_TRUE(LoadInferenceImage(*source, 0, 1200).ok());
  EXPECT_TRUE(LoadInferenceImage(*source, 0).ok());  // the engine's default bound
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace libreyolo::engine
