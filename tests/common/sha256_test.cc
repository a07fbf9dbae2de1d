#include "common/io/sha256.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/io/unique_fd.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// FIPS 180-2 test vectors.
constexpr char kSha256Abc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kSha256Empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kSha256MillionA[] =
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

class Sha256Test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sha256_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& data) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }
  std::string dir_;
};

TEST_F(Sha256Test, KnownDigests) {
  EXPECT_EQ(*Sha256File(Write("abc", "abc")), kSha256Abc);
  EXPECT_EQ(*Sha256File(Write("empty", "")), kSha256Empty);
  // More than one read buffer (1 MiB): a million 'a', the FIPS long vector, and 3 MiB.
  EXPECT_EQ(*Sha256File(Write("million", std::string(1000000, 'a'))), kSha256MillionA);
  const std::string big(3u << 20, 'a');
  EXPECT_EQ(*Sha256File(Write("big", big)), *Sha256File(Write("big2", big)));
}

TEST_F(Sha256Test, FromADescriptorCountsTheBytesFromItsOffset) {
  const std::string path = Write("xabc", "xabc");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  char skip;
  ASSERT_EQ(fd.Read(&skip, 1), 1);
  int64_t size = -1;
  EXPECT_EQ(*Sha256Fd(fd.get(), path, &size), kSha256Abc);
  EXPECT_EQ(size, 3);
}

TEST_F(Sha256Test, AMissingFileIsNotFoundNamingThePath) {
  const auto missing = Sha256File(dir_ + "/missing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir_ + "/missing"));
  EXPECT_THAT(missing.status().message(), HasSubstr("No such file or directory"));
}

TEST_F(Sha256Test, ADirectoryIsAReadErrorNotAnEmptyDigest) {
  // The client's old copy read a directory as an empty stream and returned the empty digest.
  const auto dir = Sha256File(dir_);
  EXPECT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr(dir_));
}

}  // namespace
}  // namespace libreyolo
