#include "server/engine/budget_cache.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace libreyolo::engine {
namespace {

std::string TriState(const std::optional<bool>& v) {
  if (!v.has_value()) return "auto";
  return *v ? "on" : "off";
}

}  // namespace

std::string BudgetKey::Build() const {
  // %a: the budget's exact bits, so 3 and 3.0000001 are two kinds.
  return absl::StrFormat(
      "mode=%s|weights=%s|size=%s|imgsz=%d|batch=%d|device=%s|precision=%s|cuda_activity=%d|"
      "threads=%d|collector=%s|record_shapes=%s|profile_memory=%s|with_flops=%s|"
      "with_modules=%d|budget=%a",
      mode, weights, size, imgsz, batch, device, precision, cuda_activity ? 1 : 0, threads,
      requested.collector, TriState(requested.record_shapes), TriState(requested.profile_memory),
      TriState(requested.with_flops), requested.with_modules ? 1 : 0,
      requested.overhead_budget_pct);
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

void BudgetDecisionCache::Store(const std::string& key, const BudgetOutcome& o) {
  const std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = {next_++, o};
  while (entries_.size() > kMaxEntries) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.first < oldest->second.first) oldest = it;
    }
    entries_.erase(oldest);
  }
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
                                                        bool* cached, int64_t max_rounds) {
  if (cached != nullptr) *cached = false;
  if (auto hit = cache.Find(key); hit.has_value()) {
    if (cached != nullptr) *cached = true;
    return *std::move(hit);
  }
  auto decided = ApplyOverheadBudget(requested, budget_pct, probe, max_rounds);
  if (!decided.ok()) return decided.status();
  cache.Store(key, *decided);
  return decided;
}

void WriteSwitchDecision(JsonWriter& w, bool cached) {
  w.Field("switch_decision", cached ? "cached" : "probed");
}

}  // namespace libreyolo::engine
