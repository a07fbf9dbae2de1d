// The collector of a build without CUPTI (LIBREYOLO_CUPTI=OFF, or AUTO without the CUDA
// toolkit): always inactive, its collections say so in one note.
#include <atomic>

#include "absl/status/status.h"
#include "server/engine/collect/cupti_collector.h"

namespace libreyolo::engine {
namespace {

std::atomic<bool> g_running{false};

}  // namespace

absl::StatusOr<std::unique_ptr<CuptiCollector>> CuptiCollector::Start(const CuptiOptions& options) {
  if (g_running.exchange(true)) {
    return absl::FailedPreconditionError("a CUPTI collection is already running in this process");
  }
  std::unique_ptr<CuptiCollector> c(new CuptiCollector());
  c->options_ = options;
  c->inactive_note_ =
      "CUPTI: not in this build (configure with -DLIBREYOLO_CUPTI=ON and the CUDA toolkit); GPU "
      "activity not recorded";
  return c;
}

CuptiCollector::~CuptiCollector() {
  if (!stopped_) g_running = false;
}

absl::StatusOr<CollectedTrace> CuptiCollector::Stop() {
  if (stopped_) return absl::FailedPreconditionError("the CUPTI collection was already stopped");
  stopped_ = true;
  g_running = false;
  CollectedTrace trace;
  trace.notes.push_back(inactive_note_);
  return trace;
}

bool CuptiBuilt() { return false; }

}  // namespace libreyolo::engine
