// `latency`: the distribution of an inference profile's per-iteration latency: the recorded
// percentiles (as stored, never recomputed: the numbers `summary` and `get` print), and from
// the per-iteration samples (`latency.samples_ms`, ours) their spread, a histogram and the
// slowest iterations.
#ifndef LIBREYOLO_COMMON_READERS_LATENCY_VIEW_H_
#define LIBREYOLO_COMMON_READERS_LATENCY_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/profile/profile.h"

namespace libreyolo {

// The options' defaults and bounds, stated once: the command line, the wire (LatencyRequest)
// and the daemon's validation all use these.
inline constexpr int32_t kDefaultLatencyBuckets = 10;
inline constexpr int32_t kMaxLatencyBuckets = 1000;
inline constexpr int32_t kDefaultLatencySlowest = 5;
inline constexpr int32_t kMaxLatencySlowest = 100000;

struct LatencyOptions {
  int32_t buckets = kDefaultLatencyBuckets;  // the histogram's buckets, 1..1000
  int32_t slowest = kDefaultLatencySlowest;  // the slowest samples listed, 0..100000
};

// INVALID_ARGUMENT "buckets: 0 is outside 1..1000" / "slowest: -1 is outside 0..100000 ..."
// outside the bounds: the one check, made the same locally (the command line, BuildLatency)
// and at the daemon's edge (request_validation.cc).
absl::Status CheckLatencyBuckets(int64_t buckets);
absl::Status CheckLatencySlowest(int64_t slowest);
absl::Status CheckLatencyOptions(const LatencyOptions& o);

struct LatencyBucket {
  double lo_ms = 0, hi_ms = 0;  // [lo, hi); the last bucket holds hi too
  int64_t count = 0;
};

struct LatencySample {
  int64_t index = 0;  // its place in latency.samples_ms
  double ms = 0;
};

struct LatencyView {
  std::string source;
  Latency recorded;   // the profile's latency object as stored (n, percentiles, mean, min, max)
  std::optional<int64_t> trials;  // a repeat profile: the trials its percentiles are means of
  // From latency.samples_ms; unset (null) when the profile records percentiles only (the
  // Python LibreYOLO's profiles).
  std::optional<int64_t> samples;
  std::optional<double> stddev_ms;  // sample standard deviation (n - 1); 0 for one sample
  std::optional<std::vector<LatencyBucket>> histogram;
  std::optional<std::vector<LatencySample>> slowest;  // largest first; ties: lower index first
};

// The view. INVALID_ARGUMENT for options out of bounds; FAILED_PRECONDITION for a profile with
// no latency (a training profile, a raw trace), naming `source` and the reader to use instead.
absl::StatusOr<LatencyView> BuildLatency(const Profile& p, const LatencyOptions& o,
                                         const std::string& source);

// `buckets` equal-width buckets between the samples' min and max (one bucket when they are all
// equal); each sample in the bucket whose [lo, hi) holds it, the max in the last. The counts
// sum to the number of samples. Empty samples: no buckets.
std::vector<LatencyBucket> LatencyHistogram(const std::vector<double>& samples_ms, int32_t buckets);

std::string RenderLatencyText(const LatencyView& v);
std::string RenderLatencyJson(const LatencyView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_LATENCY_VIEW_H_
