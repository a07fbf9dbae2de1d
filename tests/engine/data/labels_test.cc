#include "server/engine/data/labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "server/engine/data/dataset.h"
#include "server/engine/data/dataset_spec.h"
#include "server/engine/data/image_io.h"
#include "server/engine/data/inference_source.h"
#include "server/engine/data/synthetic.h"
#include "tests/engine/data/test_util.h"

namespace libreyolo::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

std::string ParseError(const std::string& text, int nc = 80) {
  auto parsed = ParseLabelText(text, "lbl/a.txt", nc);
  EXPECT_FALSE(parsed.ok()) << text;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(LabelsTest, ParsesBoxesPolygonsBlankLinesAndCrlf) {
  auto parsed = ParseLabelText(
      "0 0.5 0.5 0.2 0.4\r\n\n  \n3 0.1 0.2 0.3 0.2 0.2 0.6\n"
      "7\t1.0005 0.5 0.1 0.1\n",
      "a.txt", 80);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].cls, 0);
  EXPECT_FLOAT_EQ((*parsed)[0].w, 0.2f);
  // Polygon (0.1,0.2) (0.3,0.2) (0.2,0.6) -> its bounding box.
  EXPECT_EQ((*parsed)[1].cls, 3);
  EXPECT_FLOAT_EQ((*parsed)[1].cx, 0.2f);
  EXPECT_FLOAT_EQ((*parsed)[1].cy, 0.4f);
  EXPECT_FLOAT_EQ((*parsed)[1].w, 0.2f);
  EXPECT_FLOAT_EQ((*parsed)[1].h, 0.4f);
  // Within the tolerance: accepted and clipped.
  EXPECT_FLOAT_EQ((*parsed)[2].cx, 1.0f);
}

TEST(LabelsTest, WrongFieldCount) {
  EXPECT_THAT(ParseError("0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2\n"),
              HasSubstr("lbl/a.txt:2: expected 5 fields, found 4"));
  EXPECT_THAT(ParseError("0 0.5 0.5 0.2 0.2 0.1\n"),
              HasSubstr("lbl/a.txt:1: expected 5 fields, found 6"));
}

TEST(LabelsTest, NonNumeric) {
  EXPECT_THAT(ParseError("\n\n0 0.5 abc 0.2 0.2\n"),
              HasSubstr("lbl/a.txt:3: cy 'abc' is not a finite number"));
  EXPECT_THAT(ParseError("person 0.5 0.5 0.2 0.2\n"),
              HasSubstr("lbl/a.txt:1: class 'person' is not a finite number"));
  EXPECT_THAT(ParseError("0 nan 0.5 0.2 0.2\n"), HasSubstr("cx 'nan' is not a finite number"));
}

TEST(LabelsTest, ClassOutOfRange) {
  EXPECT_THAT(ParseError("3 0.5 0.5 0.2 0.2\n", 3),
              HasSubstr("lbl/a.txt:1: class '3' is not an integer in [0, 3)"));
  EXPECT_THAT(ParseError("-1 0.5 0.5 0.2 0.2\n", 3), HasSubstr("class '-1'"));
  EXPECT_THAT(ParseError("1.5 0.5 0.5 0.2 0.2\n", 3), HasSubstr("class '1.5'"));
}

TEST(LabelsTest, CoordinatesOutsideUnitRange) {
  EXPECT_THAT(ParseError("0 0.5 0.5 0.2 0.2\n0 0.5 0.5 1.2 0.2\n"),
              HasSubstr("lbl/a.txt:2: w 1.2 is outside [0, 1]"));
  EXPECT_THAT(ParseError("0 -0.01 0.5 0.2 0.2\n"), HasSubstr("cx -0.01 is outside [0, 1]"));
  EXPECT_THAT(ParseError("0 0.5 0.5 0.2 -0.3\n"), HasSubstr("h -0.3 is outside"));
  // Pixel coordinates are the usual cause; the message says what is expected.
  EXPECT_THAT(ParseError("0 320 240 50 60\n"), HasSubstr("normalised by the image size"));
}

TEST(LabelsTest, MissingLabelFileIsBackground) {
  auto parsed = ReadLabelFile("/nonexistent/labels/x.txt", 3);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->empty());
}

TEST(LabelsTest, DatasetOpenReportsTheBadLabelFileAndLine) {
  TempDir dir;
  testing::WriteTinyDataset(dir.path(), 3);
  const std::string bad =
      dir.Write("labels/train/img2.txt", "0 0.5 0.5 0.2 0.2\n9 0.5 0.5 0.1 0.1\n");
  auto dataset = FileDataset::Open(
      {dir.path() + "/images/train/img0.png", dir.path() + "/images/train/img2.png"}, 3, "test");
  ASSERT_FALSE(dataset.ok());
  EXPECT_THAT(dataset.status().message(), HasSubstr(bad + ":2: class '9'"));
}

TEST(ImageIoTest, LabelPathForImage) {
  EXPECT_EQ(LabelPathForImage("/d/images/train/a.jpg"), "/d/labels/train/a.txt");
  EXPECT_EQ(LabelPathForImage("/images/x/images/b.PNG"), "/images/x/labels/b.txt");
  EXPECT_EQ(LabelPathForImage("/d/pics/c.jpeg"), "/d/pics/c.txt");
}

// A JPEG whose EXIF says "rotate 90 degrees clockwise to display" (Orientation = 6), as phones
// write them: an APP1 segment put after SOI. The TIFF block is big-endian with one IFD entry.
std::string WithExifOrientation(const std::vector<uchar>& jpeg, uint16_t orientation) {
  const std::string tiff = std::string("MM\x00\x2a\x00\x00\x00\x08", 8) +
                           std::string("\x00\x01", 2) +              // one entry
                           std::string("\x01\x12\x00\x03", 4) +      // Orientation, SHORT
                           std::string("\x00\x00\x00\x01", 4) +      // count 1
                           std::string(1, '\0') + std::string(1, static_cast<char>(orientation)) +
                           std::string("\x00\x00", 2) + std::string(4, '\0');  // no next IFD
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const size_t length = payload.size() + 2;
  std::string app1 = std::string("\xFF\xE1", 2) + static_cast<char>(length >> 8) +
                     static_cast<char>(length & 0xFF) + payload;
  std::string out(jpeg.begin(), jpeg.end());
  out.insert(2, app1);  // after SOI (FF D8)
  return out;
}

TEST(ImageIoTest, ExifOrientationIsNotAppliedAsInThePythonTool) {
  // 40 wide, 20 tall: the left half red, the right half blue (BGR).
  cv::Mat image(20, 40, CV_8UC3, cv::Scalar(0, 0, 255));
  image(cv::Rect(20, 0, 20, 20)).setTo(cv::Scalar(255, 0, 0));
  std::vector<uchar> jpeg;
  ASSERT_TRUE(cv::imencode(".jpg", image, jpeg, {cv::IMWRITE_JPEG_QUALITY, 100}));
  const std::string rotated = WithExifOrientation(jpeg, 6);
  // The file really is flagged: OpenCV's default reading turns it to 20 x 40.
  const cv::Mat raw(1, static_cast<int>(rotated.size()), CV_8UC1,
                    const_cast<char*>(rotated.data()));
  ASSERT_EQ(cv::imdecode(raw, cv::IMREAD_COLOR).size(), cv::Size(20, 40));

  TempDir dir;
  const std::string path = dir.Write("images/train/phone.jpg", rotated);
  for (const auto& decoded : {DecodeImageFile(path), DecodeImageBytes(rotated, "phone.jpg")}) {
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->size(), cv::Size(40, 20));  // as stored, as PIL and cv2's UNCHANGED read it
    const cv::Vec3b left = decoded->at<cv::Vec3b>(10, 5), right = decoded->at<cv::Vec3b>(10, 35);
    EXPECT_GT(left[2], 200);  // red stays left
    EXPECT_GT(right[0], 200);  // blue stays right
  }
}

TEST(ImageIoTest, CorruptAndMissingImages) {
  TempDir dir;
  const std::string corrupt = dir.Write("images/train/bad.jpg", std::string("\xFF\xD8garbage", 9));
  auto decoded = DecodeImageFile(corrupt);
  ASSERT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(decoded.status().message(), HasSubstr("image '" + corrupt + "' cannot be decoded"));
  const std::string empty = dir.Write("images/train/empty.png", "");
  EXPECT_THAT(DecodeImageFile(empty).status().message(), HasSubstr(empty));
  EXPECT_EQ(DecodeImageFile(dir.path() + "/nope.png").status().code(), absl::StatusCode::kNotFound);

  // Through a dataset: the error surfaces at Load, naming the file.
  auto dataset = FileDataset::Open({corrupt}, 1, "test");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  auto sample = (*dataset)->Load(0);
  EXPECT_THAT(sample.status().message(), HasSubstr(corrupt));
}

TEST(InferenceSourceTest, DirectoryListingIsSortedAndFlat) {
  TempDir dir;
  const cv::Mat pixel(4, 4, CV_8UC3, cv::Scalar(1, 2, 3));
  for (const char* name : {"b.png", "a.JPG", "c.bmp", "sub/d.png"}) {
    const std::string path = dir.path() + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::string ext = std::filesystem::path(path).extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(ch));
    cv::imwrite(path + ext, pixel);             // encode by the lower-case extension...
    std::filesystem::rename(path + ext, path);  // ...then give it the tested name
  }
  dir.Write("notes.txt", "not an image");
  auto source = ResolveInferenceSource(dir.path());
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE(source->sample);
  EXPECT_THAT(source->paths,
              ElementsAre(dir.path() + "/a.JPG", dir.path() + "/b.png", dir.path() + "/c.bmp"));
  auto image = LoadInferenceImage(*source, 1);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->at<cv::Vec3b>(0, 0), cv::Vec3b(1, 2, 3));

  auto single = ResolveInferenceSource(dir.path() + "/b.png");
  ASSERT_TRUE(single.ok());
  EXPECT_THAT(single->paths, ElementsAre(dir.path() + "/b.png"));
}

TEST(InferenceSourceTest, Errors) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/empty");
  dir.Write("empty/readme.txt", "x");
  auto none = ResolveInferenceSource(dir.path() + "/empty");
  ASSERT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("no images in folder '" + dir.path() + "/empty'"));
  EXPECT_THAT(none.status().message(),
              HasSubstr("*.jpg, *.jpeg, *.png, *.bmp, *.webp, *.tif, *.tiff"));
  EXPECT_EQ(ResolveInferenceSource(dir.path() + "/missing.jpg").status().code(),
            absl::StatusCode::kNotFound);
  auto not_image = ResolveInferenceSource(dir.path() + "/empty/readme.txt");
  EXPECT_EQ(not_image.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(not_image.status().message(), HasSubstr("is not an image"));
}

// A FIFO or a device where a file is read (a source named x.jpg, a path in a .txt image list, a
// label file, a dataset YAML) fails at once naming what it is: reading it blocked the job until a
// writer came (a FIFO) or never ended (/dev/zero).
TEST(InferenceSourceTest, AFifoOrADeviceIsRefusedNotRead) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/labels");
  for (const std::string name : {"/x.jpg", "/labels/x.txt", "/data.yaml"}) {
    ASSERT_EQ(::mkfifo((dir.path() + name).c_str(), 0600), 0) << name;
  }
  auto source = ResolveInferenceSource(dir.path() + "/x.jpg");
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(source.status().message(), HasSubstr("x.jpg' is a FIFO (a pipe), not an image file"));
  // An empty image file names itself so, not through OpenCV's assertion text.
  const std::string empty = dir.Write("empty.jpg", "");
  auto nothing = DecodeImageFile(empty);
  EXPECT_EQ(nothing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nothing.status().message(), HasSubstr("empty.jpg' is an empty file (0 bytes)"));
  EXPECT_THAT(nothing.status().message(), ::testing::Not(HasSubstr("\n")));
  auto image = DecodeImageFile("/dev/zero");
  EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(image.status().message(), HasSubstr("'/dev/zero' is a character device"));
  auto labels = ReadLabelFile(dir.path() + "/labels/x.txt", 3);
  EXPECT_EQ(labels.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(labels.status().message(), HasSubstr("is a FIFO (a pipe)"));
  auto yaml = ParseDatasetYaml(dir.path() + "/data.yaml", "");
  EXPECT_EQ(yaml.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(yaml.status().message(), HasSubstr("data.yaml' is a FIFO (a pipe), not a file"));
}

TEST(InferenceSourceTest, SampleImage) {
  auto source = ResolveInferenceSource("");
  ASSERT_TRUE(source.ok());
  EXPECT_TRUE(source->sample);
  ASSERT_EQ(source->size(), 1u);
  auto image = LoadInferenceImage(*source, 0);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->cols, 810);
  EXPECT_EQ(image->rows, 1080);
  EXPECT_EQ(image->type(), CV_8UC3);
  // Deterministic and not flat.
  const cv::Mat again = MakeSampleImage();
  EXPECT_EQ(cv::norm(*image, again, cv::NORM_INF), 0.0);
  cv::Scalar mean, stddev;
  cv::meanStdDev(*image, mean, stddev);
  EXPECT_GT(stddev[0], 20.0);
}

}  // namespace
}  // namespace libreyolo::engine
