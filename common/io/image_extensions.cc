#include "common/io/image_extensions.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace libreyolo {

bool HasImageExtension(absl::string_view path) {
  const size_t slash = path.rfind('/');
  const absl::string_view name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  if (dot == absl::string_view::npos || dot == 0) return false;  // none, or a hidden file's name
  const std::string ext = absl::AsciiStrToLower(name.substr(dot));
  return std::find(kImageExtensions.begin(), kImageExtensions.end(), ext) != kImageExtensions.end();
}

std::string ImageExtensionList() {
  std::string out;
  for (absl::string_view ext : kImageExtensions) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", "*", ext);
  }
  return out;
}

}  // namespace libreyolo
