#include "common/io/atomic_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace libreyolo {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "atomic_file_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    return names;
  }
  std::string dir_;
};

TEST_F(AtomicFileTest, WritesReplacesAndSetsTheModeExactly) {
  const std::string path = dir_ + "/profile.json";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  EXPECT_EQ(Read(path), "first");
  const mode_t old_umask = ::umask(0077);  // the mode is not masked
  const absl::Status second = WriteFileAtomically(path, "second", 0640);
  ::umask(old_umask);
  ASSERT_TRUE(second.ok()) << second;
  EXPECT_EQ(Read(path), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_THAT(Names(), ::testing::ElementsAre("profile.json"));  // no temp file left
}

TEST_F(AtomicFileTest, AMissingDirectoryIsNotFoundNamingThePath) {
  const std::string path = dir_ + "/no/such/dir/x.json";
  const absl::Status s = WriteFileAtomically(path, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
}

TEST_F(AtomicFileTest, AReadOnlyDirectoryIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  const absl::Status s = WriteFileAtomically(dir_ + "/x.json", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr(dir_ + "/x.json"));
}

// A full disk, simulated with RLIMIT_FSIZE (EFBIG, SIGXFSZ ignored): RESOURCE_EXHAUSTED, the
// previous file untouched, no temp file left.
TEST_F(AtomicFileTest, AFullDiskKeepsTheOldFileAndLeavesNoTemp) {
  const std::string path = dir_ + "/libreyolod.prom";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::Status s = WriteFileAtomically(path, std::string(4096, 'x'));
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr(dir_ + "/.tmp.libreyolod.prom."));
  EXPECT_EQ(Read(path), "old");
  EXPECT_THAT(Names(), ::testing::ElementsAre("libreyolod.prom"));
}

// Threads of one process writing the same file (the daemon's metrics, a job's record) each
// publish whole contents: no shared temp name, no file mixed from two writers.
TEST_F(AtomicFileTest, ConcurrentWritersOfOnePathNeverPublishAMixedFile) {
  const std::string path = dir_ + "/record.json";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(1 << 16, 'a')).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, mixed{0};
  std::vector<std::thread> writers;
  for (char c = 'b'; c < 'f'; ++c) {
    writers.emplace_back([&, c] {
      for (int i = 0; i < 50; ++i) {
        if (!WriteFileAtomically(path, std::string(1 << 16, c)).ok()) ++failures;
      }
    });
  }
  std::thread reader([&] {
    while (!stop) {
      const std::string s = Read(path);
      if (s.size() != (1u << 16) || s.find_first_not_of(s.front()) != std::string::npos) ++mixed;
    }
  });
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(mixed, 0);
  EXPECT_THAT(Names(), ::testing::ElementsAre("record.json"));
}

TEST_F(AtomicFileTest, PublishTempFileRenamesACallerWrittenFile) {
  const std::string path = dir_ + "/profile_trace.json";
  const std::string tmp = TempPathBeside(path);
  EXPECT_NE(tmp, TempPathBeside(path));
  EXPECT_EQ(fs::path(tmp).parent_path(), fs::path(dir_));
  EXPECT_EQ(fs::path(tmp).filename().string().rfind(".tmp.profile_trace.json.", 0), 0u) << tmp;
  std::ofstream(tmp) << "{}";
  ASSERT_TRUE(PublishTempFile(tmp, path).ok());
  EXPECT_EQ(Read(path), "{}");
  EXPECT_FALSE(fs::exists(tmp));

  const absl::Status missing = PublishTempFile(dir_ + "/.tmp.gone", path);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr(dir_ + "/.tmp.gone"));
  EXPECT_EQ(Read(path), "{}");
}

// An output the user names: a regular file is replaced atomically; a link, FIFO or device is
// written through and stays what it was (a rename over /dev/null as root would replace it).
TEST_F(AtomicFileTest, ANamedOutputIsWrittenThroughALinkAFifoOrADevice) {
  const std::string file = dir_ + "/report.html";
  ASSERT_TRUE(WriteNamedOutput(file, "one").ok());
  ASSERT_TRUE(WriteNamedOutput(file, "two").ok());
  EXPECT_EQ(Read(file), "two");
  EXPECT_FALSE(WritesThrough(file));
  // A link keeps being a link; its target gets the content.
  const std::string link = dir_ + "/latest.html";
  fs::create_symlink(file, link);
  ASSERT_TRUE(WritesThrough(link));
  ASSERT_TRUE(WriteNamedOutput(link, "three").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Read(file), "three");
  // A named pipe: its reader gets the bytes, and it is still a pipe.
  const std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Read(fifo); });
  const absl::Status through = WriteNamedOutput(fifo, "four");
  reader.join();
  ASSERT_TRUE(through.ok()) << through;
  EXPECT_EQ(got, "four");
  ASSERT_TRUE(fs::is_fifo(fifo));  // before the devices below: this path must not rename
  EXPECT_THAT(Names(), ::testing::UnorderedElementsAre("report.html", "latest.html", "pipe"));
  // Devices: /dev/null takes it; /dev/full's ENOSPC is the answer; both stay devices.
  ASSERT_TRUE(WriteNamedOutput("/dev/null", "five").ok());
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (fs::is_character_file("/dev/full")) {
    const absl::Status full = WriteNamedOutput("/dev/full", std::string(8192, 'x'));
    EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
    EXPECT_THAT(full.message(), HasSubstr("/dev/full"));
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  EXPECT_EQ(WriteNamedOutput(dir_, "six").code(), absl::StatusCode::kInvalidArgument);
}

TEST(TempPathBeside, ABareNameStaysInTheWorkingDirectory) {
  EXPECT_EQ(TempPathBeside("x.json").rfind(".tmp.x.json.", 0), 0u);
}

}  // namespace
}  // namespace libreyolo
