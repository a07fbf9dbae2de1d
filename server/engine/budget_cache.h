// Same job, same choice (issue 11 item 4): the overhead budget's decision per job kind, kept
// for the life of the process. The daemon runs each device's jobs in one long-lived
// `libreyolod-worker`; the first job of a kind probes (overhead_budget.h) and every identical
// job after it reuses that outcome (its switches, its probes and its overhead estimate)
// without probing again, so a borderline model (a true cost near the budget, decided either way
// under load) gets one answer. The profile says which: `switch_decision` "probed" or "cached".
// Torch-free.
#ifndef LIBREYOLO_SERVER_ENGINE_BUDGET_CACHE_H_
#define LIBREYOLO_SERVER_ENGINE_BUDGET_CACHE_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/json/json_writer.h"
#include "server/engine/overhead_budget.h"

namespace libreyolo::engine {

// What makes two jobs "identical" for the budget: everything that changes what a profiled step
// costs or what is decided. Build() joins the parts into the cache's key.
struct BudgetKey {
  std::string mode;      // "inference" or "training"
  std::string weights;   // the weights file (path, size and modification time) or its name
  std::string size;      // t, s, m, c
  int64_t imgsz = 0;
  int64_t batch = 0;
  std::string device;    // "cpu", "cuda:0"
  std::string precision;  // "fp32", "fp16 autocast", ...
  bool cuda_activity = false;
  int64_t threads = 0;   // the CPU threads asked for
  ProfilerSwitches requested;  // tri-state switches and the budget
  std::string Build() const;
};

// "path|bytes|mtime" of a weights file, or the name as given when no such file exists (the
// default name: a seeded random init).
std::string WeightsIdentity(const std::string& weights);

class BudgetDecisionCache {
 public:
  // The process's cache (a worker's jobs share it).
  static BudgetDecisionCache& Process();
  std::optional<BudgetOutcome> Find(const std::string& key) const;
  // Keeps at most kMaxEntries kinds; the oldest goes first.
  void Store(const std::string& key, const BudgetOutcome& o);
  void Clear();
  size_t size() const;
  static constexpr size_t kMaxEntries = 64;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<int64_t, BudgetOutcome>> entries_;  // key -> (order, outcome)
  int64_t next_ = 0;
};

// The decision through the cache: a stored outcome for `key` is returned as is with
// `*cached` true and `probe` is not called; otherwise ApplyOverheadBudget decides (within
// `max_rounds`, its round limit) and a successful outcome is stored.
absl::StatusOr<BudgetOutcome> ApplyOverheadBudgetCached(BudgetDecisionCache& cache,
                                                        const std::string& key,
                                                        const ProfilerSwitches& requested,
                                                        double budget_pct, const ProbeFn& probe,
                                                        bool* cached, int64_t max_rounds = 0);

// The profile's `switch_decision`: "cached" or "probed".
void WriteSwitchDecision(JsonWriter& w, bool cached);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_BUDGET_CACHE_H_
