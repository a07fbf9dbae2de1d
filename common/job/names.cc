#include "common/job/names.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/render/terminal_text.h"

namespace libreyolo {
namespace {

bool Alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

bool IsJobId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxJobIdBytes) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return Alnum(c) || c == '_' || c == '-'; });
}

std::string NotAJobIdMessage(absl::string_view id) {
  return absl::StrCat("'", Excerpt(std::string_view(id.data(), id.size())),
                      "' is not a job id (at most ", kMaxJobIdBytes,
                      " bytes of letters, digits, - and _; `libreyolo jobs list` shows yours)");
}

absl::Status CheckJobId(absl::string_view id, absl::string_view field) {
  if (IsJobId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, field.empty() ? "" : ": ", NotAJobIdMessage(id)));
}

bool IsPlainArtifactName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxArtifactNameBytes || name.front() == '.') return false;
  if (absl::StrContains(name, "..")) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return Alnum(c) || c == '_' || c == '-' || c == '.'; });
}

}  // namespace libreyolo
