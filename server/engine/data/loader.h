// The training data loader: `workers` threads each build whole batches (decode, augment,
// collate), as PyTorch's DataLoader workers do, into a bounded prefetch window; the consumer
// takes them strictly in order.
//
// Determinism: an epoch's order is a permutation seeded by (seed, epoch) and every sample's
// augmentation is seeded by (seed, epoch, position in the epoch), so the batches are the same
// for any number of workers, including 0 (built inline in Next()).
// Errors: anything a worker hits (a Status or an exception, e.g. c10::Error or cv::Exception)
// becomes the Status that Next() returns for that batch; no exception leaves a worker thread.
// Shutdown: Stop() (and the destructor) wake, cancel and join every worker.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_LOADER_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_LOADER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/data/batch.h"
#include "server/engine/data/dataset.h"
#include "server/engine/data/pipeline.h"

namespace libreyolo::engine {

struct LoaderOptions {
  int batch_size = 16;
  int image_size = 640;
  int workers = 8;          // 0: build batches inline in Next()
  int prefetch_factor = 2;  // batches in flight per worker (PyTorch's default)
  bool shuffle = true;
  // Training drops the last partial batch of an epoch that holds a full one, as the reference
  // does (the Python LibreYOLO's create_dataloader: drop_last = len(sampler) >= batch): an
  // epoch smaller than the batch is one batch of all of it. false keeps every partial batch.
  bool drop_last = true;
  bool pin_memory = false;  // honoured only where PinnedMemoryAvailable(); see note()
  uint64_t seed = 0;
  // A data-parallel rank's shard (DistributedSampler's): each epoch's order padded to a
  // multiple of `replicas` by repeating its head, then every replicas-th index from `rank`, so
  // the ranks together see every image once per epoch. 1: the whole dataset.
  int64_t replicas = 1;
  int64_t rank = 0;
  AugmentOptions augment;  // augment.enabled = false for evaluation
};

class DataLoader {
 public:
  // INVALID_ARGUMENT for a batch size < 1, image size < 1, workers < 0, prefetch < 1 or an
  // empty dataset.
  static absl::StatusOr<std::unique_ptr<DataLoader>> Create(
      std::shared_ptr<const DetectionDataset> dataset, const LoaderOptions& options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Batches in one epoch: floor(n / batch) with drop_last when n >= batch, else ceil (so any
  // image gives a batch: a dataset smaller than the batch is one batch of n).
  static int64_t BatchesPerEpoch(int64_t dataset_size, int batch_size, bool drop_last);
  // The images one of `replicas` ranks reads per epoch: ceil(n / replicas).
  static int64_t ShardSize(int64_t dataset_size, int64_t replicas);
  int64_t BatchesPerEpoch() const;

  // Begins `epoch` (abandoning and joining any epoch in progress) and starts the workers.
  // Next() starts epoch 0 by itself when no epoch was started.
  absl::Status StartEpoch(int64_t epoch);
  // The next batch of the current epoch, in order; nullopt once the epoch is done. After an
  // error the loader is stopped and keeps returning that error until StartEpoch().
  absl::StatusOr<std::optional<Batch>> Next();
  // Cancels and joins the workers; idempotent.
  void Stop();

  // Dataset indices of an epoch in batch order (all of the rank's shard, before drop_last).
  std::vector<int64_t> EpochOrder(int64_t epoch) const;
  // Whether batches are pinned, and why not when pinning was asked for but is unavailable.
  bool pinned() const { return pin_; }
  const std::string& note() const { return note_; }
  const LoaderOptions& options() const { return options_; }

 private:
  DataLoader(std::shared_ptr<const DetectionDataset> dataset, const LoaderOptions& options);

  // Builds batch `b` of the current epoch; never throws.
  absl::StatusOr<Batch> BuildBatch(int64_t b) const;
  // A shard position's place in the padded epoch order: what seeds that sample's augmentation,
  // so two ranks never augment alike and one rank alone augments as before.
  uint64_t GlobalPosition(int64_t pos) const {
    return static_cast<uint64_t>(pos * options_.replicas + options_.rank);
  }
  void WorkerLoop();
  bool CanClaim() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NextReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<const DetectionDataset> dataset_;
  const LoaderOptions options_;
  bool pin_ = false;
  std::string note_;

  // Written only by the consumer while no worker runs (StartEpoch/Stop), read by workers.
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
  int64_t num_batches_ = 0;
  bool started_ = false;
  std::vector<std::thread> threads_;
  std::optional<absl::Status> failed_;  // consumer-side: the error Next() keeps returning
  int64_t inline_next_ = 0;             // workers == 0: next batch to build

  std::atomic<bool> cancel_{false};  // checked between samples so Stop() is prompt
  mutable absl::Mutex mu_;
  int64_t next_claim_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_consume_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, absl::StatusOr<Batch>> ready_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> worker_crash_ ABSL_GUARDED_BY(mu_);  // outside any batch
};

// Where a trainer takes its batches from.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual absl::StatusOr<Batch> Next() = 0;
};

// Batches from a DataLoader, one epoch after another, as the Python LibreYOLO's training loop
// takes them: its profiler counts steps across epochs, so a window longer than an epoch goes on
// into the next. Reserve(n) begins a fresh epoch when fewer than n batches are left: a window
// that fits in one epoch never straddles an epoch boundary (restarting the workers would show
// up as one slow dataload step), and one that does not starts at an epoch's first batch, as
// the Python tool's starts at the first step of training, so it crosses as many boundaries as
// the Python tool's: ceil(n / batches per epoch) - 1.
class LoaderBatchSource : public BatchSource {
 public:
  explicit LoaderBatchSource(DataLoader* loader) : loader_(loader) {}
  absl::Status Reserve(int64_t n);
  absl::StatusOr<Batch> Next() override;
  // The epoch that Next() takes from (-1 before the first).
  int64_t epoch() const { return epoch_; }

 private:
  absl::Status Begin(int64_t epoch);
  DataLoader* loader_;
  int64_t epoch_ = -1;
  int64_t used_ = 0;  // batches taken from the current epoch
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_LOADER_H_
