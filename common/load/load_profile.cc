#include "common/load/load_profile.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/trace_analyser.h"
#include "common/io/file_reader.h"
#include "common/profile/profile_json.h"
#include "common/status/status_macros.h"

namespace libreyolo {
namespace {

constexpr size_t kPeekBytes = 1 << 16;

// Profiles (ours and the Python tool's) write "schema" as their first key; traces start with
// "schemaVersion"/"traceEvents". Peeking at the head decides without reading a 1 GB trace twice.
absl::StatusOr<bool> LooksLikeProfile(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, ChunkedFileReader::Open(path));
  std::string head(kPeekBytes, '\0');
  size_t got = 0;
  while (got < head.size()) {
    ASSIGN_OR_RETURN(auto n, reader->Read(head.data() + got, head.size() - got));
    if (n == 0) break;
    got += n;
  }
  head.resize(got);
  const size_t schema = head.find("\"schema\"");
  const size_t events = head.find("\"traceEvents\"");
  if (schema == std::string::npos) return false;
  if (events != std::string::npos && events < schema) return false;
  return head.find(kProfileSchemaPrefix, schema) != std::string::npos;
}

}  // namespace

absl::StatusOr<Profile> LoadProfile(const std::string& path) {
  ASSIGN_OR_RETURN(auto is_profile, LooksLikeProfile(path));
  if (!is_profile) return AnalyseTraceFile(path);
  ASSIGN_OR_RETURN(auto text, ReadWholeFile(path));
  return ReadProfileJson(text, path);
}

namespace {

bool IsFile(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

std::optional<std::string> ProfileTracePath(const std::string& input, const Profile& p,
                                            std::string* why_not) {
  namespace fs = std::filesystem;
  if (p.source_kind == "trace") return input;
  if (!p.trace.has_value() || p.trace->empty()) {
    *why_not = "the profile names no Chrome trace (it was made with --no-trace)";
    return std::nullopt;
  }
  const fs::path t(*p.trace);
  if (t.is_absolute() && IsFile(t)) return *p.trace;
  const fs::path dir = fs::path(input).parent_path();
  if (!t.is_absolute()) {
    for (const fs::path& c : {dir / t, dir / t.filename(), t}) {
      if (!c.empty() && IsFile(c)) return c.string();
    }
  } else if (IsFile(dir / t.filename())) {
    return (dir / t.filename()).string();
  }
  *why_not = absl::StrCat("the profile's trace (", *p.trace,
                          ") is not next to it; keep profile_trace.json beside profile.json");
  return std::nullopt;
}

}  // namespace libreyolo
