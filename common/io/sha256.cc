#include "common/io/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"
#include "common/io/unique_fd.h"

namespace libreyolo {

absl::StatusOr<std::string> Sha256Fd(int fd, absl::string_view path, int64_t* size) {
  struct CtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError(absl::StrCat("cannot initialise SHA-256 for ", path));
  }
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError(errno, "cannot read", path);
    }
    if (n == 0) break;
    if (EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n)) != 1) {
      return absl::InternalError(absl::StrCat("SHA-256 update failed for ", path));
    }
    total += n;
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md.data(), &len) != 1) {
    return absl::InternalError(absl::StrCat("SHA-256 final failed for ", path));
  }
  if (size != nullptr) *size = total;
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(md.data()), len));
}

absl::StatusOr<std::string> Sha256File(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return FileError(errno, "cannot open", path);
  return Sha256Fd(fd.get(), path, nullptr);
}

}  // namespace libreyolo
