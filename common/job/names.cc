#include "common/job/names.h"

#include <algorithm>

#include "absl/strings/match.h"

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

bool IsPlainArtifactName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxArtifactNameBytes || name.front() == '.') return false;
  if (absl::StrContains(name, "..")) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return Alnum(c) || c == '_' || c == '-' || c == '.'; });
}

}  // namespace libreyolo
