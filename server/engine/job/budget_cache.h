// Same job, same choice (issue 11 item 4, issue 22 section 3): the overhead budget's decision
// per job kind. The first job of a kind probes (overhead_budget.h) and every identical job
// after it reuses that outcome (its switches, its probes and its overhead estimate) without
// probing again, so a borderline model (a true cost near the budget, decided either way under
// load) gets one answer. The profile says which: `switch_decision` "probed" or "cached".
// The daemon's engine worker keeps its device's decisions in the daemon's state directory
// (Persist: `<state_dir>/switch-decisions/<slot>.json`), so identical jobs decide alike across
// worker and daemon restarts: the private daemon that each `libreyolo profile` command starts
// afresh included. Torch-free.
#ifndef LIBREYOLO_SERVER_ENGINE_JOB_BUDGET_CACHE_H_
#define LIBREYOLO_SERVER_ENGINE_JOB_BUDGET_CACHE_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/json/json_writer.h"
#include "server/engine/job/overhead_budget.h"

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
  // What else changes a step's cost for this kind of job (training: the dataset, its classes
  // and the loader's workers); empty for inference.
  std::string extra;
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
  // Keeps at most kMaxEntries kinds; the oldest goes first. With a file (Persist), the whole
  // cache is written to it (atomically: a crash leaves the old file or the new one); a write
  // that fails (a full disk) keeps the decision in memory and returns why, for the log.
  absl::Status Store(const std::string& key, const BudgetOutcome& o);
  void Clear();
  size_t size() const;
  static constexpr size_t kMaxEntries = 64;

  // Keeps the cache in `path` from now on, starting from what the file holds. A file that is
  // absent starts empty; one that cannot be read or parsed, or was written by another engine
  // version (LibreYOLO profiler and LibTorch versions: a probe's cost is theirs), is set aside
  // (the cache starts empty and the next Store replaces it) and the returned note says why.
  // The note is empty when the file was read whole or did not exist.
  std::string Persist(const std::string& path, const std::string& engine_version);

  // The file's text for these entries, and back (Persist's format; exposed for its tests).
  std::string Serialize() const;
  absl::Status Parse(const std::string& text);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<int64_t, BudgetOutcome>> entries_;  // key -> (order, outcome)
  int64_t next_ = 0;
  std::string path_;            // empty: memory only
  std::string engine_version_;  // written with the entries, checked when they are read
  std::string SerializeLocked() const;
};

// The decision through the cache: a stored outcome for `key` is returned as is with
// `*cached` true and `probe` is not called; otherwise ApplyOverheadBudget decides (within
// `max_rounds`, its round limit) and a successful outcome is stored. `store_note`, when given,
// receives why the decision could not be kept on disk (empty when it was, or needed not be).
absl::StatusOr<BudgetOutcome> ApplyOverheadBudgetCached(BudgetDecisionCache& cache,
                                                        const std::string& key,
                                                        const ProfilerSwitches& requested,
                                                        double budget_pct, const ProbeFn& probe,
                                                        bool* cached, int64_t max_rounds = 0,
                                                        std::string* store_note = nullptr);

// The profile's `switch_decision`: "cached" or "probed".
void WriteSwitchDecision(JsonWriter& w, bool cached);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_JOB_BUDGET_CACHE_H_
