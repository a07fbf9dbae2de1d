// What `profile run` records beside the analysed trace: the headline numbers of the measured
// (unprofiled) windows, the run's configuration and the profiler's settings and cost.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_TRAIN_CONFIG_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_TRAIN_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/profile/profile.h"
#include "server/engine/engine.h"
#include "server/engine/job/model_loader.h"
#include "server/engine/job/overhead_budget.h"
#include "server/engine/job/pipeline.h"
#include "server/engine/runtime/cpu_threads.h"
#include "server/engine/train/profiled_window.h"
#include "server/engine/train/trainer.h"

namespace libreyolo::engine {

struct TrainConfigFacts {
  const TrainJobSpec* spec = nullptr;
  int64_t batch = 0;            // images a step trained on
  int64_t batch_requested = 0;  // --batch (or --batch -1's choice); written when not `batch`
  std::string batch_note;       // why `batch` is not what was asked for
  std::string batch_rule;       // non-empty after --batch -1
  bool amp_effective = false;
  // The PGI auxiliary branch (spec->aux_weight > 0): its tensors, and how many of them came
  // from the checkpoint (the rest a fresh init from aux_init_seed).
  int64_t aux_tensors = 0, aux_tensors_loaded = 0;
  uint64_t aux_init_seed = 0;
  std::string device_label, weights_label, model_label;
  const std::vector<std::string>* weights_searched = nullptr;  // a random init's (LoadedModel)
  std::string dataset;
  int64_t dataset_images = 0;
  ThreadSettings threads;
  std::string optimizer;
  double loss_first = 0, loss_last = 0;
  std::string metrics_file;  // metrics.jsonl as profile.json records it
  int64_t skipped_steps = 0;  // float16 steps the loss scaler skipped (inf/NaN gradients)
  PhaseTimes phases;          // mean synchronised composition of the measured windows
  std::string loader_note;
  // The checkpoint's class head re-initialised for the dataset's classes; null when it fit.
  const HeadReinit* head_reinit = nullptr;
  // A data-parallel rank's run (data_parallel.h); null for a single-device run.
  const DataParallelFacts* data_parallel = nullptr;
  // CUDA jobs: the device, and what the caching allocator held when the job began.
  std::optional<int> cuda_index;
  std::optional<CudaAllocatorStats> cuda_at_start;
};

// The config object (model, size, weights, head_reinitialised, data, batch, imgsz, workers, amp,
// amp_effective and why, aux_weight and the PGI branch's origin (aux_branch), device, data_parallel (a rank of a data-parallel run), steps, warmup,
// schedule, threads, interop_threads, blas, blas_threads, omp_wait_policy, optimizer, EMA,
// losses, composition).
std::string TrainConfigJson(const TrainConfigFacts& f);

// The profiler object: the switches in force and the overhead budget's record (`decision`),
// whether it was probed or reused, the schedule, the traces; overhead_pct is the budget's
// interleaved A/B estimate for the switches the window ran with (WriteOverheadFields), probed
// with synced steps as recorded steps are.
std::string TrainProfilerJson(const TrainJobSpec& spec, bool cuda_activity,
                              const SwitchDecision& decision, const ProfiledWindow& window);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_TRAIN_CONFIG_H_
