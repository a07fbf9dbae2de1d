#include "server/engine/data/loader.h"

#include <exception>
#include <numeric>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/engine/data/rng.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

uint64_t EpochSeed(uint64_t seed, int64_t epoch) {
  return MixSeed(seed, static_cast<uint64_t>(epoch));
}

absl::Status ExceptionStatus(absl::string_view where, absl::string_view what) {
  return absl::InternalError(absl::StrCat("data loader: ", where, " failed: ", what));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataLoader>> DataLoader::Create(
    std::shared_ptr<const DetectionDataset> dataset, const LoaderOptions& options) {
  if (dataset == nullptr || dataset->size() < 1) {
    return absl::InvalidArgumentError("data loader: the dataset has no images");
  }
  if (options.batch_size < 1 || options.image_size < 1 || options.workers < 0 ||
      options.prefetch_factor < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data loader: batch ", options.batch_size, ", image size ", options.image_size,
                     ", workers ", options.workers, ", prefetch ", options.prefetch_factor,
                     ": batch and image size must be >= 1, workers >= 0, prefetch >= 1"));
  }
  if (options.replicas < 1 || options.rank < 0 || options.rank >= options.replicas) {
    return absl::InvalidArgumentError(
        absl::StrCat("data loader: rank ", options.rank, " of ", options.replicas,
                     " replicas: the rank must be in 0..replicas-1"));
  }
  return std::unique_ptr<DataLoader>(new DataLoader(std::move(dataset), options));
}

DataLoader::DataLoader(std::shared_ptr<const DetectionDataset> dataset,
                       const LoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  if (options_.pin_memory) {
    pin_ = PinnedMemoryAvailable();
    if (!pin_) {
      note_ =
          "pin_memory requested, but this LibTorch has no CUDA device; batches stay in "
          "ordinary (pageable) memory";
    }
  }
}

DataLoader::~DataLoader() { Stop(); }

int64_t DataLoader::BatchesPerEpoch(int64_t dataset_size, int batch_size, bool drop_last) {
  if (batch_size < 1 || dataset_size < 1) return 0;
  if (drop_last && dataset_size >= batch_size) return dataset_size / batch_size;
  return (dataset_size + batch_size - 1) / batch_size;
}

int64_t DataLoader::ShardSize(int64_t dataset_size, int64_t replicas) {
  if (replicas <= 1) return dataset_size;
  return (dataset_size + replicas - 1) / replicas;
}

int64_t DataLoader::BatchesPerEpoch() const {
  return BatchesPerEpoch(ShardSize(dataset_->size(), options_.replicas), options_.batch_size,
                         options_.drop_last);
}

std::vector<int64_t> DataLoader::EpochOrder(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle) {
    // Fisher-Yates on our own generator: the same order on every platform.
    Rng rng(EpochSeed(options_.seed, epoch));
    for (size_t i = order.size(); i > 1; --i) {
      const auto j = static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(i) - 1));
      std::swap(order[i - 1], order[j]);
    }
  }
  if (options_.replicas <= 1) return order;
  // DistributedSampler (drop_last=False): pad with the head, then take this rank's stride.
  const auto n = static_cast<int64_t>(order.size());
  const int64_t per_rank = ShardSize(n, options_.replicas);
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(per_rank));
  for (int64_t k = 0; k < per_rank; ++k) {
    const int64_t padded = options_.rank + k * options_.replicas;
    shard.push_back(order[static_cast<size_t>(padded % n)]);
  }
  return shard;
}

void DataLoader::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  cancel_.store(true);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

absl::Status DataLoader::StartEpoch(int64_t epoch) {
  Stop();
  epoch_ = epoch;
  order_ = EpochOrder(epoch);
  num_batches_ = BatchesPerEpoch();
  started_ = true;
  failed_.reset();
  inline_next_ = 0;
  cancel_.store(false);
  {
    absl::MutexLock lock(&mu_);
    next_claim_ = 0;
    next_consume_ = 0;
    stop_ = false;
    ready_.clear();
    worker_crash_.reset();
  }
  const int workers = static_cast<int>(std::min<int64_t>(options_.workers, num_batches_));
  try {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  } catch (const std::system_error& e) {
    Stop();
    failed_ = absl::ResourceExhaustedError(absl::StrCat("data loader: cannot start ", workers,
                                                        " worker threads (", e.what(),
                                                        "); use fewer --workers"));
    return *failed_;
  }
  return absl::OkStatus();
}

absl::StatusOr<Batch> DataLoader::BuildBatch(int64_t b) const {
  try {
    const int64_t n = static_cast<int64_t>(order_.size());
    const int64_t begin = b * options_.batch_size;
    const int64_t end = std::min(begin + options_.batch_size, n);
    std::vector<Sample> samples;
    samples.reserve(static_cast<size_t>(end - begin));
    const uint64_t epoch_seed = EpochSeed(options_.seed, epoch_);
    for (int64_t pos = begin; pos < end; ++pos) {
      if (cancel_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("data loader stopped");
      }
      ASSIGN_OR_RETURN(Sample sample, MakeSample(*dataset_, order_[static_cast<size_t>(pos)],
                                                 options_.image_size, options_.augment,
                                                 MixSeed(epoch_seed, GlobalPosition(pos))));
      samples.push_back(std::move(sample));
    }
    return Collate(samples, options_.image_size, pin_);
  } catch (const std::exception& e) {
    return ExceptionStatus(absl::StrCat("batch ", b, " of epoch ", epoch_), e.what());
  } catch (...) {
    return ExceptionStatus(absl::StrCat("batch ", b, " of epoch ", epoch_),
                           "an exception of unknown type");
  }
}

bool DataLoader::CanClaim() const {
  return stop_ || next_claim_ >= num_batches_ ||
         next_claim_ < next_consume_ + int64_t{options_.workers} * options_.prefetch_factor;
}

bool DataLoader::NextReady() const {
  return worker_crash_.has_value() || ready_.count(next_consume_) > 0;
}

void DataLoader::WorkerLoop() {
  // The catch-all keeps a failure outside BuildBatch (e.g. bad_alloc while queueing) from
  // reaching std::terminate; the consumer sees it through worker_crash_.
  try {
    for (;;) {
      int64_t b = 0;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &DataLoader::CanClaim));
        if (stop_ || next_claim_ >= num_batches_) return;
        b = next_claim_++;
      }
      absl::StatusOr<Batch> batch = BuildBatch(b);
      absl::MutexLock lock(&mu_);
      ready_.emplace(b, std::move(batch));
    }
  } catch (const std::exception& e) {
    absl::MutexLock lock(&mu_);
    worker_crash_ = ExceptionStatus("a worker thread", e.what());
  } catch (...) {
    absl::MutexLock lock(&mu_);
    worker_crash_ = ExceptionStatus("a worker thread", "an exception of unknown type");
  }
}

absl::StatusOr<std::optional<Batch>> DataLoader::Next() {
  if (!started_) RETURN_IF_ERROR(StartEpoch(0));
  if (failed_.has_value()) return *failed_;
  absl::StatusOr<Batch> batch = absl::UnknownError("unset");
  if (options_.workers == 0) {
    if (inline_next_ >= num_batches_) return std::optional<Batch>();
    batch = BuildBatch(inline_next_++);
  } else {
    absl::MutexLock lock(&mu_);
    if (next_consume_ >= num_batches_) return std::optional<Batch>();
    mu_.Await(absl::Condition(this, &DataLoader::NextReady));
    if (worker_crash_.has_value()) {
      batch = *worker_crash_;
    } else {
      auto node = ready_.extract(next_consume_);
      batch = std::move(node.mapped());
      ++next_consume_;  // frees a prefetch slot; Await re-evaluates the workers' condition
    }
  }
  if (!batch.ok()) {
    Stop();
    failed_ = batch.status();
    return *failed_;
  }
  return std::optional<Batch>(std::move(*batch));
}

absl::Status LoaderBatchSource::Begin(int64_t epoch) {
  epoch_ = epoch;
  used_ = 0;
  return loader_->StartEpoch(epoch);
}

absl::Status LoaderBatchSource::Reserve(int64_t n) {
  // Enough left; or an untouched epoch that the window outgrows anyway (a restart gains nothing).
  if (epoch_ >= 0 && (loader_->BatchesPerEpoch() - used_ >= n || used_ == 0)) {
    return absl::OkStatus();
  }
  return Begin(epoch_ + 1);
}

absl::StatusOr<Batch> LoaderBatchSource::Next() {
  if (epoch_ < 0) RETURN_IF_ERROR(Begin(0));
  ASSIGN_OR_RETURN(std::optional<Batch> batch, loader_->Next());
  if (!batch.has_value()) {  // the epoch ran out: carry on with the next, as the reference does
    RETURN_IF_ERROR(Begin(epoch_ + 1));
    ASSIGN_OR_RETURN(batch, loader_->Next());
    if (!batch.has_value()) return absl::InternalError("the data loader produced no batch");
  }
  ++used_;
  return std::move(*batch);
}

}  // namespace libreyolo::engine
