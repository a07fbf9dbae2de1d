#include "common/report/profiler_record.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json/json_read.h"
#include "common/render/html_escape.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace libreyolo {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

std::string ValueText(const rapidjson::Value& v) {
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsNull()) return "n/a";
  if (v.IsArray()) {
    bool scalars = true;
    for (const auto& e : v.GetArray()) scalars = scalars && !e.IsObject() && !e.IsArray();
    if (scalars) {
      std::string s;
      for (const auto& e : v.GetArray()) absl::StrAppend(&s, s.empty() ? "" : ", ", ValueText(e));
      return s.empty() ? "(none)" : s;
    }
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

// The top-level keys of a JSON object with their values; one "(unreadable)" row otherwise.
Pairs ObjectPairs(const std::string& json) {
  Pairs out;
  if (json.empty()) return out;
  const rapidjson::Document doc = JsonOrNull(json);
  if (!doc.IsObject()) return {{"(unreadable)", json}};
  for (const auto& m : doc.GetObject()) {
    out.emplace_back(std::string(m.name.GetString(), m.name.GetStringLength()), ValueText(m.value));
  }
  return out;
}

std::string List(const std::string& heading, const Pairs& pairs, const std::string& empty) {
  std::string s = absl::StrCat("<h3>", HtmlEscape(heading), "</h3>\n");
  if (pairs.empty()) return absl::StrCat(s, "<p class=\"na\">", HtmlEscape(empty), "</p>\n");
  s += "<dl class=\"kv\">";
  for (const auto& [k, v] : pairs) {
    absl::StrAppend(&s, "<dt>", HtmlEscape(k), "</dt><dd>", HtmlEscapeCut(v, 4000), "</dd>");
  }
  s += "</dl>\n";
  return s;
}

}  // namespace

std::string ProfilerRecord(const ReportInput& in) {
  const Profile& p = in.profile;
  Pairs source = {
      {"input", in.label},
      {"read as", p.source_kind == "trace" ? "Chrome trace (analysed now)" : "profile.json"},
      {"schema", p.schema}};
  if (p.trace) source.emplace_back("trace named by the profile", *p.trace);
  source.emplace_back("timeline drawn from",
                      in.trace_path.empty() ? in.timeline_note : in.trace_path);
  if (!p.tool_name.empty()) {
    source.emplace_back("written by", absl::StrCat(p.tool_name, " ", p.tool_version));
  }
  if (!p.libtorch_version.empty()) source.emplace_back("LibTorch", p.libtorch_version);
  if (p.created_at) source.emplace_back("created at", *p.created_at);
  if (p.device) {
    source.emplace_back(
        "device", absl::StrCat(p.device->type, p.device->name.empty() ? "" : " ", p.device->name));
  }
  const ParseStats& st = p.parse_stats;
  Pairs stats;
  if (p.source_kind == "trace" || st.events > 0) {
    stats = {{"events", absl::StrCat(st.events)},
             {"complete events", absl::StrCat(st.complete_events)},
             {"malformed events skipped", absl::StrCat(st.skipped_events)},
             {"non-numeric ids", absl::StrCat(st.non_numeric_ids)},
             {"duplicate ProfilerStep copies", absl::StrCat(st.duplicate_steps)}};
  }
  return absl::StrCat(
      List("switches, overhead and collector", ObjectPairs(p.profiler_json),
           "not recorded: the profiler's settings are written by libreyolo profile run/infer; "
           "a raw trace or the Python tool's profile does not carry them"),
      List("source", source, ""),
      List("job configuration", ObjectPairs(p.config_json), "no configuration recorded"),
      List("trace parse statistics", stats, "not applicable: read from a stored profile"));
}

}  // namespace libreyolo
