#include "common/readers/latency_view.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/analysis/latency_stats.h"
#include "common/json/json_writer.h"
#include "common/render/text_table.h"
#include "common/status/status_macros.h"

namespace libreyolo {
namespace {

// The slowest `k` samples, largest first (ties: the earlier iteration first).
std::vector<LatencySample> Slowest(const std::vector<double>& s, int32_t k) {
  std::vector<int64_t> idx(s.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t n = std::min(idx.size(), static_cast<size_t>(k));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(n), idx.end(),
                    [&](int64_t a, int64_t b) {
                      const double x = s[static_cast<size_t>(a)], y = s[static_cast<size_t>(b)];
                      return x != y ? x > y : a < b;
                    });
  std::vector<LatencySample> out;
  for (size_t i = 0; i < n; ++i) out.push_back({idx[i], s[static_cast<size_t>(idx[i])]});
  return out;
}

std::string Bar(int64_t count, int64_t most) {
  constexpr int64_t kWidth = 40;
  if (most <= 0 || count <= 0) return "";
  return std::string(static_cast<size_t>(std::max<int64_t>(1, count * kWidth / most)), '#');
}

}  // namespace

absl::Status CheckLatencyBuckets(int64_t buckets) {
  if (buckets >= 1 && buckets <= kMaxLatencyBuckets) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "buckets: ", buckets, " is outside 1..", kMaxLatencyBuckets, " (the histogram's buckets)"));
}

absl::Status CheckLatencySlowest(int64_t slowest) {
  if (slowest >= 0 && slowest <= kMaxLatencySlowest) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("slowest: ", slowest, " is outside 0..",
                                                 kMaxLatencySlowest,
                                                 " (the slowest samples listed; 0 = none)"));
}

absl::Status CheckLatencyOptions(const LatencyOptions& o) {
  RETURN_IF_ERROR(CheckLatencyBuckets(o.buckets));
  return CheckLatencySlowest(o.slowest);
}

std::vector<LatencyBucket> LatencyHistogram(const std::vector<double>& s, int32_t buckets) {
  if (s.empty() || buckets < 1) return {};
  const auto [lo_it, hi_it] = std::minmax_element(s.begin(), s.end());
  const double lo = *lo_it, hi = *hi_it;
  const size_t n = lo == hi ? 1 : static_cast<size_t>(buckets);
  // Edges by interpolation (no overflow of hi - lo), the last exactly the max.
  std::vector<double> edge(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    edge[i] = std::lerp(lo, hi, static_cast<double>(i) / static_cast<double>(n));
  }
  edge[0] = lo;
  edge[n] = hi;
  std::vector<LatencyBucket> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = {edge[i], edge[i + 1], 0};
  for (double x : s) {
    // The estimate, then the edges decide: a sample on an edge belongs to the bucket it opens.
    const double t = (x - lo) / (hi - lo) * static_cast<double>(n);
    size_t b = std::isfinite(t) && t > 0 ? std::min(n - 1, static_cast<size_t>(t)) : 0;
    while (b > 0 && x < edge[b]) --b;
    while (b + 1 < n && x >= edge[b + 1]) ++b;
    ++out[b].count;
  }
  return out;
}

absl::StatusOr<LatencyView> BuildLatency(const Profile& p, const LatencyOptions& o,
                                         const std::string& source) {
  RETURN_IF_ERROR(CheckLatencyOptions(o));
  if (!p.latency.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "latency reads an inference profile's per-iteration latency; ", source,
        " has none (a training profile or a trace): `libreyolo profile phases ", source,
        "` shows its step time"));
  }
  LatencyView v;
  v.source = source;
  v.recorded = *p.latency;
  v.recorded.samples_ms.clear();  // the view's own fields below carry what the samples say
  if (p.repeat.img_per_s_n.value_or(1) >= 2) v.trials = p.repeat.img_per_s_n;
  const std::vector<double>& s = p.latency->samples_ms;
  if (s.empty()) return v;
  v.samples = static_cast<int64_t>(s.size());
  v.stddev_ms = SampleStd(s);
  v.histogram = LatencyHistogram(s, o.buckets);
  v.slowest = Slowest(s, o.slowest);
  return v;
}

std::string RenderLatencyText(const LatencyView& v) {
  const Latency& l = v.recorded;
  std::string out = absl::StrFormat(
      "latency of %s: p50 %.3f / p90 %.3f / p99 %.3f ms, mean %.3f, min %.3f, max %.3f ms "
      "(n=%d)\n",
      v.source, l.p50_ms, l.p90_ms, l.p99_ms, l.mean_ms, l.min_ms, l.max_ms, l.n);
  if (v.trials) {
    absl::StrAppend(&out, "  the percentiles are the means of ", *v.trials,
                    " trials' percentiles; the samples below are every trial's\n");
  }
  if (!v.samples) {
    absl::StrAppend(&out,
                    "this profile records percentiles only (no per-iteration samples): no "
                    "spread, histogram or slowest iterations (a profile of libreyolo profile "
                    "infer keeps every sample in latency.samples_ms)\n");
    return out;
  }
  // n/a where the JSON has null (a spread past a double's range: samples near 1e308 ms).
  absl::StrAppend(&out, "spread: stddev ", FmtUnit(v.stddev_ms, "ms", 3), " over ", *v.samples,
                  " samples\n");
  int64_t most = 0;
  for (const LatencyBucket& b : *v.histogram) most = std::max(most, b.count);
  TextTable h({{"lo ms"}, {"hi ms"}, {"count"}, {"", TextTable::Align::kLeft}});
  for (const LatencyBucket& b : *v.histogram) {
    h.AddRow({Fmt(b.lo_ms, 3), Fmt(b.hi_ms, 3), absl::StrCat(b.count), Bar(b.count, most)});
  }
  absl::StrAppend(&out, "histogram (", v.histogram->size(), " equal-width buckets, [lo, hi)):\n",
                  h.Render());
  if (v.slowest->empty()) return out;
  TextTable t({{"iteration"}, {"ms"}});
  for (const LatencySample& x : *v.slowest) t.AddRow({absl::StrCat(x.index), Fmt(x.ms, 3)});
  absl::StrAppend(&out, "slowest ", v.slowest->size(),
                  " (iteration = index in latency.samples_ms):\n", t.Render());
  return out;
}

std::string RenderLatencyJson(const LatencyView& v) {
  const Latency& l = v.recorded;
  JsonWriter w;
  w.BeginObject().Field("source", v.source).Field("n", l.n).Field("p50_ms", l.p50_ms)
      .Field("p90_ms", l.p90_ms).Field("p99_ms", l.p99_ms).Field("mean_ms", l.mean_ms)
      .Field("min_ms", l.min_ms).Field("max_ms", l.max_ms).Field("trials", v.trials)
      .Field("samples", v.samples).Field("stddev_ms", v.stddev_ms);
  w.Key("histogram");
  if (v.histogram) {
    w.BeginArray();
    for (const LatencyBucket& b : *v.histogram) {
      w.BeginObject().Field("lo_ms", b.lo_ms).Field("hi_ms", b.hi_ms).Field("count", b.count)
          .EndObject();
    }
    w.EndArray();
  } else {
    w.Null();
  }
  w.Key("slowest");
  if (v.slowest) {
    w.BeginArray();
    for (const LatencySample& x : *v.slowest) {
      w.BeginObject().Field("index", x.index).Field("ms", x.ms).EndObject();
    }
    w.EndArray();
  } else {
    w.Null();
  }
  w.EndObject();
  return w.Take();
}

}  // namespace libreyolo
