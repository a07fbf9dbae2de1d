#include "common/analysis/load_shift.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json/json_read.h"
#include "common/json/json_writer.h"

namespace libreyolo {
namespace {

// The last number of profiler.<key> (an array: the accepted probe is the last one).
std::optional<double> LastOf(const rapidjson::Document& d, const char* key) {
  auto it = d.FindMember(key);
  if (it == d.MemberEnd() || !it->value.IsArray() || it->value.Empty()) return std::nullopt;
  const auto& last = it->value[it->value.Size() - 1];
  if (!last.IsNumber()) return std::nullopt;
  return last.GetDouble();
}

// How many times larger the larger of a and b is; 0 when either is not positive.
double Apart(double a, double b) {
  if (a <= 0 || b <= 0) return 0;
  return std::max(a, b) / std::min(a, b);
}

}  // namespace

std::optional<LoadShift> DetectLoadShift(const Profile& p) {
  if (StepTimingOf(p) != StepTiming::kUnprofiled || !p.step_ms.has_value() || *p.step_ms <= 0) {
    return std::nullopt;
  }
  LoadShift s;
  s.step_ms = *p.step_ms;
  s.profiled_step_ms = ProfiledStepMs(p);
  const rapidjson::Document d = JsonOrNull(p.profiler_json);
  if (d.IsObject()) {
    s.probe_baseline_ms = LastOf(d, "probe_baseline_ms");
    s.overhead_ci_high_pct = LastOf(d, "overhead_ci_pct");
  }
  std::vector<std::string> found;
  if (s.probe_baseline_ms && Apart(*s.probe_baseline_ms, s.step_ms) > kLoadShiftFactor) {
    found.push_back(absl::StrFormat(
        "the same step without the profiler took %.2f ms while measuring and %.2f ms while the "
        "overhead was probed (%.1fx)",
        s.step_ms, *s.probe_baseline_ms, Apart(*s.probe_baseline_ms, s.step_ms)));
  }
  if (s.profiled_step_ms) {
    // What the profiled window may take: the headline plus at most the overhead's upper bound.
    const double allowed = 1 + std::max(0.0, s.overhead_ci_high_pct.value_or(0)) / 100;
    const double expected = s.step_ms * allowed;
    if (Apart(*s.profiled_step_ms, expected) > kLoadShiftFactor) {
      found.push_back(absl::StrFormat(
          "the profiled window's step took %.2f ms where the measured step (%.2f ms) and the "
          "profiler's overhead (at most %.1f %%) allow %.2f ms (%.1fx)",
          *s.profiled_step_ms, s.step_ms, (allowed - 1) * 100, expected,
          Apart(*s.profiled_step_ms, expected)));
    }
  }
  if (found.empty()) return std::nullopt;
  s.note = absl::StrCat(
      "the machine's load changed during the job: ", absl::StrJoin(found, "; "),
      ". These cannot both describe one machine state: the headline, the phases and the overhead "
      "estimate may come from different conditions. Re-run on a quieter machine, or with "
      "--repeat 3 to see the spread");
  return s;
}

void RecordLoadShift(Profile* p) {
  const std::optional<LoadShift> s = DetectLoadShift(*p);
  if (!s) return;
  // Read only, to see what the record is added to: re-writing the whole object from
  // RapidJSON's DOM would move some of its numbers by an ulp (its default parse is not exact),
  // so that a job with a load shift and an identical one without would print different
  // overheads. The record is spliced in before the object's closing brace instead.
  const rapidjson::Document d = JsonOrNull(p->profiler_json);
  const bool object = d.IsObject();
  if (object && d.HasMember("load_shift")) return;  // recorded once
  JsonWriter w(/*pretty=*/false);
  w.BeginObject()
      .Field("step_ms", s->step_ms)
      .Field("probe_baseline_ms", s->probe_baseline_ms)
      .Field("profiled_step_ms", s->profiled_step_ms)
      .Field("overhead_ci_high_pct", s->overhead_ci_high_pct)
      .Field("factor", kLoadShiftFactor)
      .Field("note", s->note)
      .EndObject();
  std::string record = w.Take();
  while (!record.empty() && (record.back() == '\n' || record.back() == ' ')) record.pop_back();
  if (!object) {
    p->profiler_json = absl::StrCat("{\"load_shift\":", record, "}");
    return;
  }
  const size_t close = p->profiler_json.rfind('}');
  p->profiler_json.insert(close,
                          absl::StrCat(d.ObjectEmpty() ? "" : ",", "\"load_shift\":", record));
}

std::string RecordedLoadShiftNote(const Profile& p) {
  const rapidjson::Document doc = JsonOrNull(p.profiler_json);
  if (!doc.IsObject()) return "";
  auto it = doc.FindMember("load_shift");
  if (it == doc.MemberEnd() || !it->value.IsObject()) return "";
  auto note = it->value.FindMember("note");
  if (note == it->value.MemberEnd() || !note->value.IsString()) return "";
  return note->value.GetString();
}

}  // namespace libreyolo
