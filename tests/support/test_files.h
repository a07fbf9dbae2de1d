// The tests' file helpers, one copy each: ReadFile, WriteFile (with a mode), and TempDir, a
// fresh directory per object, made with mkdtemp
// (unique across processes and threads, so tests may run in parallel), under /tmp with a short
// name so that Unix socket paths inside stay far below the 108-byte limit. Removed with
// everything in it when the object goes, permissions restored first (tests chmod folders to
// provoke errors).
#ifndef LIBREYOLO_TESTS_SUPPORT_TEST_FILES_H_
#define LIBREYOLO_TESTS_SUPPORT_TEST_FILES_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace libreyolo::test {

// The whole file; empty when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Replaces the file's content and sets its mode (0600 by default: tokens files and keys must
// be private to be accepted).
inline void WriteFile(const std::string& path, const std::string& data, mode_t mode = 0600) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
  }
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

class TempDir {
 public:
  // /tmp/<prefix>.XXXXXX
  explicit TempDir(const std::string& prefix = "lyt") {
    std::string pattern = "/tmp/" + prefix + ".XXXXXX";
    const char* made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "mkdtemp(" << pattern << ") failed";
    path_ = pattern;
  }
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    }
    ::chmod(path_.c_str(), 0700);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path/name (nothing is created).
  std::string File(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }
  // Writes `content` to path/name, creating the folders on the way; returns the file's path.
  std::string Write(const std::string& name, const std::string& content) const {
    const std::filesystem::path p = std::filesystem::path(path_) / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
    return p.string();
  }

 private:
  std::string path_;
};

}  // namespace libreyolo::test

#endif  // LIBREYOLO_TESTS_SUPPORT_TEST_FILES_H_
