// Issue 40 A.9: an image's declared size is read from its header before anything is decoded,
// and one over the engine's bound is refused with its size (a 380 KB PNG of 20000 x 20000 used
// to decode to +1.1 GiB per job).
#include "server/engine/data/image_header.h"

#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/data/image_io.h"

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
              HasSubstr("'huge.png' declares 20000 x 20000 pixels, over the engine's bound of "
                        "67108864 decoded pixels"));
  const absl::StatusOr<cv::Mat> small = DecodeImageBytes(Encode(".png", 8, 8), "small.png");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->cols, 8);
  be32(16, 0);
  EXPECT_THAT(std::string(DecodeImageBytes(png, "empty.png").status().message()),
              HasSubstr("an empty image"));
}

}  // namespace
}  // namespace libreyolo::engine
