#include "client/commands/profile_summary_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"
#include "common/json/json_read.h"
#include "common/status/status_macros.h"
#include "rapidjson/document.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"

namespace libreyolo::cli {
namespace {

using Alloc = rapidjson::Document::AllocatorType;

// A copy of `src[key]` (null when absent).
rapidjson::Value Copy(const rapidjson::Value& src, const char* key, Alloc& a) {
  if (!src.IsObject()) return rapidjson::Value();
  const auto it = src.FindMember(key);
  return it == src.MemberEnd() ? rapidjson::Value() : rapidjson::Value(it->value, a);
}

// `src[key]` as a number, when it is one.
std::optional<double> Number(const rapidjson::Value& src, const char* key) {
  if (!src.IsObject()) return std::nullopt;
  const auto it = src.FindMember(key);
  if (it == src.MemberEnd() || !it->value.IsNumber()) return std::nullopt;
  return it->value.GetDouble();
}

rapidjson::Value NumberOrNull(std::optional<double> v) {
  return v ? rapidjson::Value(*v) : rapidjson::Value();
}

void Add(rapidjson::Value& obj, const char* key, rapidjson::Value v, Alloc& a) {
  obj.AddMember(rapidjson::Value(key, a), v, a);
}

// Copies each of `keys` from `src` into `dst` (null when `src` lacks it).
void CopyKeys(const rapidjson::Value& src, std::initializer_list<const char*> keys,
              rapidjson::Value& dst, Alloc& a) {
  for (const char* k : keys) Add(dst, k, Copy(src, k, a), a);
}

void AddInferBlocks(const rapidjson::Value& p, rapidjson::Document& d) {
  Alloc& a = d.GetAllocator();
  rapidjson::Value real(rapidjson::kObjectType);
  CopyKeys(p, {"step_ms", "img_per_s", "dataload_ms", "dataload_frac"}, real, a);
  Add(d, "real", std::move(real), a);
  rapidjson::Value latency = Copy(p, "latency", a);
  if (latency.IsObject()) latency.RemoveMember("samples_ms");  // ours only; the raw samples
  Add(d, "latency", std::move(latency), a);
  CopyKeys(p, {"stages_ms", "bound", "bound_why"}, d, a);
  if (Number(p, "peak_vram_mb")) {
    rapidjson::Value analysis(rapidjson::kObjectType);
    CopyKeys(p, {"peak_vram_mb"}, analysis, a);
    Add(d, "analysis", std::move(analysis), a);
  }
}

void AddRunBlocks(const rapidjson::Value& p, rapidjson::Document& d) {
  Alloc& a = d.GetAllocator();
  const rapidjson::Value empty(rapidjson::kObjectType);
  const auto window_it = p.FindMember("window");
  const rapidjson::Value& window =
      window_it != p.MemberEnd() && window_it->value.IsObject() ? window_it->value : empty;
  const auto config_it = p.FindMember("config");
  const rapidjson::Value& config =
      config_it != p.MemberEnd() && config_it->value.IsObject() ? config_it->value : empty;
  rapidjson::Value w(rapidjson::kObjectType);
  Add(w, "warmup", Copy(config, "warmup", a), a);
  Add(w, "real_steps", Copy(window, "real_steps", a), a);
  // Our phases are timed over the profiled window's steps themselves (no separate synced half).
  Add(w, "synced_steps", Copy(window, "real_steps", a), a);
  Add(d, "window", std::move(w), a);

  rapidjson::Value real(rapidjson::kObjectType);
  const std::optional<double> step = Number(p, "step_ms");
  const std::optional<double> dataload = Number(p, "dataload_ms");
  CopyKeys(p, {"step_ms", "dataload_ms"}, real, a);
  Add(real, "compute_ms",
      NumberOrNull(step ? std::optional<double>(std::max(*step - dataload.value_or(0), 0.0))
                        : std::nullopt),
      a);
  CopyKeys(p, {"img_per_s", "dataload_frac"}, real, a);
  Add(d, "real", std::move(real), a);

  rapidjson::Value composition(rapidjson::kObjectType);
  double total = 0;
  const auto phases = p.FindMember("phases");
  if (phases != p.MemberEnd() && phases->value.IsArray()) {
    for (const rapidjson::Value& row : phases->value.GetArray()) {
      if (!row.IsObject() || !row.HasMember("phase") || !row["phase"].IsString()) continue;
      const std::string name = row["phase"].GetString();
      if (name == "dataload") continue;  // real.dataload_ms
      const std::optional<double> wall = Number(row, "wall_ms_per_step");
      total += wall.value_or(0);
      composition.AddMember(rapidjson::Value(name.c_str(), a), NumberOrNull(wall), a);
    }
  }
  Add(d, "composition_ms", std::move(composition), a);
  Add(d, "composition_total_ms", rapidjson::Value(total), a);
  CopyKeys(p, {"bound", "bound_why", "trace"}, d, a);

  rapidjson::Value analysis(rapidjson::kObjectType);
  CopyKeys(p,
           {"gpu_util", "gpu_busy_ms_per_step", "mean_kernel_us", "kernels_per_step",
            "memcpy_ms_per_step", "tensorcore_pct", "cuda_mallocs_per_step", "gpu_util_raw",
            "memory_pressure"},
           analysis, a);
  Add(analysis, "window_real_steps", Copy(window, "real_steps", a), a);
  CopyKeys(p, {"top_kernels", "categories", "peak_vram_mb"}, analysis, a);
  Add(d, "analysis", std::move(analysis), a);
}

}  // namespace

absl::StatusOr<std::string> ProfileSummaryJson(std::string_view profile_json) {
  const rapidjson::Document p = JsonOrNull(profile_json);
  if (!p.IsObject()) {
    return absl::InvalidArgumentError("not a profile.json: the text is not a JSON object");
  }
  rapidjson::Document d(rapidjson::kObjectType);
  Alloc& a = d.GetAllocator();
  rapidjson::Value meta = Copy(p, "config", a);
  Add(d, "meta", meta.IsObject() ? std::move(meta) : rapidjson::Value(rapidjson::kObjectType), a);
  const auto mode = p.FindMember("mode");
  const bool inference = (mode != p.MemberEnd() && mode->value.IsString() &&
                          std::string_view(mode->value.GetString()) == "inference") ||
                         (p.HasMember("latency") && p["latency"].IsObject());
  if (inference) {
    AddInferBlocks(p, d);
  } else {
    AddRunBlocks(p, d);
  }
  rapidjson::StringBuffer b;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(b);
  w.SetIndent(' ', 2);
  d.Accept(w);
  return std::string(b.GetString()) + "\n";
}

absl::StatusOr<std::string> WriteProfileSummaryBeside(const std::string& profile_path) {
  std::ifstream in(profile_path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", profile_path));
  std::stringstream text;
  text << in.rdbuf();
  auto summary = ProfileSummaryJson(text.str());
  if (!summary.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(profile_path, ": ", summary.status().message()));
  }
  const std::string path =
      (std::filesystem::path(profile_path).parent_path() / kProfileSummaryFileName).string();
  RETURN_IF_ERROR(WriteFileAtomically(path, *summary));
  return path;
}

}  // namespace libreyolo::cli
