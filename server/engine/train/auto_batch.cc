#include "server/engine/train/auto_batch.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstddef>
#include <exception>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/engine/loss/yolo9_loss.h"
#include "server/engine/runtime/cuda_runtime.h"
#include "server/engine/train/trainer.h"

namespace libreyolo::engine {
namespace {

// One forward + loss + backward at `batch` on random pixels with one box per image.
void ProbeStep(Yolo9& model, const torch::Device& device, bool amp, int64_t imgsz, int64_t batch) {
  auto images = torch::rand({batch, 3, imgsz, imgsz}, torch::TensorOptions().device(device));
  auto row = torch::tensor({0.0F, 0.25F, 0.25F, 0.75F, 0.75F}).to(device);
  auto targets = row.view({1, 1, 5}).expand({batch, 1, 5}).contiguous();
  Yolo9LossOptions lo;
  lo.num_classes = model->options().num_classes;
  // With the PGI branch attached the probe runs it too: it is part of the step's memory.
  const Yolo9Loss loss = TrainingLoss(model, images, targets, imgsz, lo, amp);
  loss.total.backward();
  model->zero_grad();
  torch::cuda::synchronize(device.index());
}

AutoBatch ProbeCuda(Yolo9& model, const DeviceChoice& d, bool amp, int64_t imgsz) {
  const torch::Device device = CudaDevice(d);
  std::vector<double> xs, ys;
  int64_t largest_ok = 0;
  double total = 0;
  std::string stopped;
  for (int64_t b = 1; b <= 16; b *= 2) {
    try {
      ProbeStep(model, device, amp, imgsz, b);
    } catch (const std::exception& e) {
      // Out of memory ends the probing; anything else is a real failure worth quoting.
      stopped = absl::StrContains(e.what(), "out of memory")
                    ? absl::StrFormat("batch %d ran out of memory", b)
                    : absl::StrFormat("batch %d failed", b);
      break;
    }
    // What every process holds on the device, LibTorch's cache included: the wall the batch
    // must stay under is the device's, not our allocator's.
    const auto mem = CudaMemoryInfo(d.index);
    if (!mem.ok()) {
      return {kCpuAutoBatch, absl::StrFormat("auto-batch: cannot read CUDA memory (%s); using 16",
                                             mem.status().message())};
    }
    const auto used = static_cast<double>(mem->total - mem->free);
    largest_ok = b;
    total = static_cast<double>(mem->total);
    xs.push_back(static_cast<double>(b));
    ys.push_back(used);
    if (used > kAutoBatchMemoryFraction * total) break;
  }
  if (xs.size() < 2) {
    const int64_t b = largest_ok > 0 ? largest_ok : 1;
    return {b, absl::StrFormat("auto-batch: too few probes to fit (%s); using %d",
                               stopped.empty() ? "memory full" : stopped, b)};
  }
  // Least squares: used = slope * batch + intercept.
  const double n = static_cast<double>(xs.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sx += xs[i];
    sy += ys[i];
    sxx += xs[i] * xs[i];
    sxy += xs[i] * ys[i];
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / n;
  if (!(slope > 0)) {
    return {kCpuAutoBatch, "auto-batch: memory did not grow with the batch; using 16"};
  }
  int64_t b = 1;
  while (b < 1024 &&
         slope * static_cast<double>(2 * b) + intercept <= kAutoBatchMemoryFraction * total) {
    b *= 2;
  }
  return {b, absl::StrFormat("auto-batch: %.1f MB + %.1f MB/image fitted on %d probes; batch %d "
                             "predicted at %.0f%% of %.1f GB (target %.0f%%)",
                             intercept / 1e6, slope / 1e6, static_cast<int>(xs.size()), b,
                             100.0 * (slope * static_cast<double>(b) + intercept) / total,
                             total / 1e9, 100.0 * kAutoBatchMemoryFraction)};
}

}  // namespace

AutoBatch PickAutoBatch(Yolo9& model, const DeviceChoice& device, bool amp, int64_t imgsz) {
  AutoBatch a;
  if (device.cuda) {
    a = ProbeCuda(model, device, amp, imgsz);
    // The probes' largest batch left its blocks in LibTorch's cache: give them back, so the
    // job starts from what it needs and the device is not held beyond it.
    if (auto released = ReleaseCudaCache(device.index); !released.ok()) {
      a.rule += absl::StrCat("; ", released.message());
    }
  } else {
    a.rule = "auto-batch on CPU: 16 (no device memory to fill)";
  }
  return a;
}

}  // namespace libreyolo::engine
