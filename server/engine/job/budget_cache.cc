#include "server/engine/job/budget_cache.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/io/atomic_file.h"
#include "rapidjson/document.h"

namespace libreyolo::engine {
namespace {

std::string TriState(const std::optional<bool>& v) {
  if (!v.has_value()) return "auto";
  return *v ? "on" : "off";
}

// ---- the file (Persist) -------------------------------------------------------------------
// {"format": kFormat, "version": 1, "engine": "...", "entries": [{"key": ..., "order": ...,
// "outcome": {...}}]}: every field of a BudgetOutcome, doubles in their shortest exact form.
constexpr char kFormat[] = "libreyolo-switch-decisions";
constexpr int64_t kFormatVersion = 1;

void WriteEstimate(JsonWriter& w, const OverheadEstimate& e) {
  w.BeginObject()
      .Field("pairs", e.pairs)
      .Field("median_pct", e.median_pct)
      .Field("ci_low_pct", e.ci_low_pct)
      .Field("ci_high_pct", e.ci_high_pct)
      .Field("ci_level", e.ci_level)
      .Field("unprofiled_median_ms", e.unprofiled_median_ms)
      .Field("profiled_median_ms", e.profiled_median_ms)
      .EndObject();
}

void WriteStrings(JsonWriter& w, std::string_view key, const std::vector<std::string>& v) {
  w.Key(key).BeginArray();
  for (const std::string& s : v) w.String(s);
  w.EndArray();
}

void WriteOutcome(JsonWriter& w, const BudgetOutcome& o) {
  w.BeginObject();
  w.Key("switches").BeginObject();
  for (CostlySwitch c : kDisableOrder) w.Field(SwitchName(c), o.switches.Get(c));
  w.EndObject();
  WriteStrings(w, "auto_switches", o.auto_switches);
  WriteStrings(w, "auto_disabled", o.auto_disabled);
  w.Key("probes").BeginArray();
  for (const OverheadEstimate& e : o.probes) WriteEstimate(w, e);
  w.EndArray();
  w.Field("probe_note", o.probe_note);
  w.Key("overhead");
  if (o.overhead) {
    WriteEstimate(w, *o.overhead);
  } else {
    w.Null();
  }
  w.Field("overhead_from_probe", o.overhead_from_probe)
      .Field("probe_rounds", o.probe_rounds)
      .Field("probe_round_limit", o.probe_round_limit)
      .Field("probe_limit_note", o.probe_limit_note)
      .EndObject();
}

// The reader: numbers arrive as text (kParseNumbersAsStringsFlag) and are converted exactly.
using Value = rapidjson::Value;

const Value* Member(const Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  const auto it = v.FindMember(key);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

absl::Status Bad(const std::string& what) {
  return absl::DataLossError(absl::StrCat("switch decisions: ", what));
}

// An integer or a double, exactly as written; a double may be null (a non-finite value).
template <typename T>
absl::Status ReadNumber(const Value& v, const char* key, T* out) {
  const Value* m = Member(v, key);
  if constexpr (std::is_floating_point_v<T>) {
    if (m != nullptr && m->IsNull()) {
      *out = std::numeric_limits<T>::quiet_NaN();
      return absl::OkStatus();
    }
  }
  if (m == nullptr || !m->IsString()) return Bad(absl::StrCat("'", key, "' is not a number"));
  const char* b = m->GetString();
  const char* e = b + m->GetStringLength();
  const auto r = std::from_chars(b, e, *out);
  if (r.ec != std::errc() || r.ptr != e) {
    return Bad(absl::StrCat("'", key, "' is not ",
                            std::is_floating_point_v<T> ? "a number" : "an integer"));
  }
  return absl::OkStatus();
}
absl::Status ReadInt(const Value& v, const char* key, int64_t* out) {
  return ReadNumber(v, key, out);
}
absl::Status ReadDouble(const Value& v, const char* key, double* out) {
  return ReadNumber(v, key, out);
}

absl::Status ReadBool(const Value& v, const char* key, bool* out) {
  const Value* m = Member(v, key);
  if (m == nullptr || !m->IsBool()) return Bad(absl::StrCat("'", key, "' is not true or false"));
  *out = m->GetBool();
  return absl::OkStatus();
}

absl::Status ReadString(const Value& v, const char* key, std::string* out) {
  const Value* m = Member(v, key);
  if (m == nullptr || !m->IsString()) return Bad(absl::StrCat("'", key, "' is not a string"));
  out->assign(m->GetString(), m->GetStringLength());
  return absl::OkStatus();
}

absl::Status ReadStrings(const Value& v, const char* key, std::vector<std::string>* out) {
  const Value* m = Member(v, key);
  if (m == nullptr || !m->IsArray()) return Bad(absl::StrCat("'", key, "' is not a list"));
  for (const Value& s : m->GetArray()) {
    if (!s.IsString()) return Bad(absl::StrCat("'", key, "' holds a non-string"));
    out->emplace_back(s.GetString(), s.GetStringLength());
  }
  return absl::OkStatus();
}

absl::Status ReadEstimate(const Value& v, OverheadEstimate* e) {
  if (!v.IsObject()) return Bad("an estimate is not an object");
  for (auto [key, field] : {std::pair{"median_pct", &e->median_pct},
                            {"ci_low_pct", &e->ci_low_pct},
                            {"ci_high_pct", &e->ci_high_pct},
                            {"ci_level", &e->ci_level},
                            {"unprofiled_median_ms", &e->unprofiled_median_ms},
                            {"profiled_median_ms", &e->profiled_median_ms}}) {
    if (auto s = ReadDouble(v, key, field); !s.ok()) return s;
  }
  return ReadInt(v, "pairs", &e->pairs);
}

absl::Status ReadOutcome(const Value& v, BudgetOutcome* o) {
  const Value* switches = Member(v, "switches");
  if (switches == nullptr || !switches->IsObject()) return Bad("'switches' is not an object");
  for (CostlySwitch c : kDisableOrder) {
    bool on = false;
    if (auto s = ReadBool(*switches, SwitchName(c), &on); !s.ok()) return s;
    o->switches.Set(c, on);
  }
  if (auto s = ReadStrings(v, "auto_switches", &o->auto_switches); !s.ok()) return s;
  if (auto s = ReadStrings(v, "auto_disabled", &o->auto_disabled); !s.ok()) return s;
  const Value* probes = Member(v, "probes");
  if (probes == nullptr || !probes->IsArray()) return Bad("'probes' is not a list");
  for (const Value& p : probes->GetArray()) {
    OverheadEstimate e;
    if (auto s = ReadEstimate(p, &e); !s.ok()) return s;
    o->probes.push_back(e);
  }
  if (auto s = ReadString(v, "probe_note", &o->probe_note); !s.ok()) return s;
  const Value* overhead = Member(v, "overhead");
  if (overhead == nullptr) return Bad("'overhead' is missing");
  if (!overhead->IsNull()) {
    OverheadEstimate e;
    if (auto s = ReadEstimate(*overhead, &e); !s.ok()) return s;
    o->overhead = e;
  }
  if (auto s = ReadBool(v, "overhead_from_probe", &o->overhead_from_probe); !s.ok()) return s;
  if (auto s = ReadInt(v, "probe_rounds", &o->probe_rounds); !s.ok()) return s;
  if (auto s = ReadInt(v, "probe_round_limit", &o->probe_round_limit); !s.ok()) return s;
  return ReadString(v, "probe_limit_note", &o->probe_limit_note);
}

}  // namespace

std::string BudgetKey::Build() const {
  // %a: the budget's exact bits, so 3 and 3.0000001 are two kinds.
  return absl::StrFormat(
      "mode=%s|weights=%s|size=%s|imgsz=%d|batch=%d|device=%s|precision=%s|cuda_activity=%d|"
      "threads=%d|collector=%s|record_shapes=%s|profile_memory=%s|with_flops=%s|"
      "with_modules=%d|budget=%a|%s",
      mode, weights, size, imgsz, batch, device, precision, cuda_activity ? 1 : 0, threads,
      requested.collector, TriState(requested.record_shapes), TriState(requested.profile_memory),
      TriState(requested.with_flops), requested.with_modules ? 1 : 0,
      requested.overhead_budget_pct, extra);
}

std::string WeightsIdentity(const std::string& weights) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(weights);
  if (!fs::is_regular_file(path, ec)) return weights;
  const auto bytes = fs::file_size(path, ec);
  if (ec) return weights;
  const auto mtime = fs::last_write_time(path, ec);
  if (ec) return weights;
  const fs::path absolute = fs::absolute(path, ec);
  return absl::StrCat(ec ? weights : absolute.string(), "|", bytes, "|",
                      mtime.time_since_epoch().count());
}

BudgetDecisionCache& BudgetDecisionCache::Process() {
  static BudgetDecisionCache* cache = new BudgetDecisionCache();  // never destroyed
  return *cache;
}

std::optional<BudgetOutcome> BudgetDecisionCache::Find(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second.second;
}

absl::Status BudgetDecisionCache::Store(const std::string& key, const BudgetOutcome& o) {
  const std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = {next_++, o};
  while (entries_.size() > kMaxEntries) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.first < oldest->second.first) oldest = it;
    }
    entries_.erase(oldest);
  }
  if (path_.empty()) return absl::OkStatus();
  if (auto s = WriteFileAtomically(path_, SerializeLocked(), 0600); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("the switch decision is kept for this worker only: ",
                                               s.message()));
  }
  return absl::OkStatus();
}

std::string BudgetDecisionCache::Serialize() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return SerializeLocked();
}

std::string BudgetDecisionCache::SerializeLocked() const {
  JsonWriter w(/*pretty=*/false);
  w.BeginObject()
      .Field("format", kFormat)
      .Field("version", kFormatVersion)
      .Field("engine", engine_version_);
  w.Key("entries").BeginArray();
  for (const auto& [key, entry] : entries_) {
    w.BeginObject().Field("key", key).Field("order", entry.first);
    w.Key("outcome");
    WriteOutcome(w, entry.second);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

absl::Status BudgetDecisionCache::Parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseNumbersAsStringsFlag>(text.c_str(), text.size());
  if (d.HasParseError() || !d.IsObject()) return Bad("not a JSON object");
  const rapidjson::Document& doc = d;
  std::string format, engine;
  int64_t version = 0;
  if (auto s = ReadString(doc, "format", &format); !s.ok() || format != kFormat) {
    return Bad(absl::StrCat("not a ", kFormat, " file"));
  }
  if (auto s = ReadInt(doc, "version", &version); !s.ok() || version != kFormatVersion) {
    return Bad(absl::StrCat("format version ", version, ", this engine reads ", kFormatVersion));
  }
  if (auto s = ReadString(doc, "engine", &engine); !s.ok()) return s;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!engine_version_.empty() && engine != engine_version_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "switch decisions of another engine (", engine, "; this one is ", engine_version_,
          "): probed again"));
    }
  }
  const Value* entries = Member(doc, "entries");
  if (entries == nullptr || !entries->IsArray()) return Bad("'entries' is not a list");
  std::map<std::string, std::pair<int64_t, BudgetOutcome>> read;
  int64_t next = 0;
  for (const Value& e : entries->GetArray()) {
    std::string key;
    int64_t order = 0;
    BudgetOutcome o;
    if (auto s = ReadString(e, "key", &key); !s.ok()) return s;
    if (auto s = ReadInt(e, "order", &order); !s.ok()) return s;
    const Value* outcome = Member(e, "outcome");
    if (outcome == nullptr) return Bad("an entry has no outcome");
    if (auto s = ReadOutcome(*outcome, &o); !s.ok()) return s;
    read[key] = {order, std::move(o)};
    next = std::max(next, order + 1);
  }
  if (read.size() > kMaxEntries) return Bad(absl::StrCat(read.size(), " entries"));
  const std::lock_guard<std::mutex> lock(mu_);
  entries_ = std::move(read);
  next_ = next;
  return absl::OkStatus();
}

std::string BudgetDecisionCache::Persist(const std::string& path,
                                         const std::string& engine_version) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    path_ = path;
    engine_version_ = engine_version;
    entries_.clear();
    next_ = 0;
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) return absl::StrCat(path, ": cannot be read; probing afresh");
  if (auto s = Parse(text.str()); !s.ok()) {
    const std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
    next_ = 0;
    return absl::StrCat(path, ": ", s.message(), "; set aside, probing afresh");
  }
  return "";
}

void BudgetDecisionCache::Clear() {
  const std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

size_t BudgetDecisionCache::size() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

absl::StatusOr<BudgetOutcome> ApplyOverheadBudgetCached(BudgetDecisionCache& cache,
                                                        const std::string& key,
                                                        const ProfilerSwitches& requested,
                                                        double budget_pct, const ProbeFn& probe,
                                                        bool* cached, int64_t max_rounds,
                                                        std::string* store_note) {
  if (cached != nullptr) *cached = false;
  if (store_note != nullptr) store_note->clear();
  if (auto hit = cache.Find(key); hit.has_value()) {
    if (cached != nullptr) *cached = true;
    return *std::move(hit);
  }
  auto decided = ApplyOverheadBudget(requested, budget_pct, probe, max_rounds);
  if (!decided.ok()) return decided.status();
  if (auto s = cache.Store(key, *decided); !s.ok() && store_note != nullptr) {
    *store_note = std::string(s.message());
  }
  return decided;
}

void WriteSwitchDecision(JsonWriter& w, bool cached) {
  w.Field("switch_decision", cached ? "cached" : "probed");
}

}  // namespace libreyolo::engine
