#include "common/analysis/intervals.h"

#include <algorithm>
#include <iterator>

namespace libreyolo {

Intervals Merge(Intervals v) {
  std::sort(v.begin(), v.end());
  size_t n = 0;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (n > 0 && i.first <= v[n - 1].second) {
      v[n - 1].second = std::max(v[n - 1].second, i.second);
    } else {
      v[n++] = i;
    }
  }
  v.resize(n);
  return v;
}

Intervals Intersect(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first);
    const int64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) out.emplace_back(lo, hi);
    (a[i].second < b[j].second ? i : j)++;
  }
  return out;
}

Intervals Subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (Interval cur : a) {
    while (j < b.size() && b[j].second <= cur.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first < cur.second; ++k) {
      if (b[k].first > cur.first) out.emplace_back(cur.first, b[k].first);
      cur.first = std::max(cur.first, b[k].second);
      if (cur.first >= cur.second) break;
    }
    if (cur.first < cur.second) out.push_back(cur);
  }
  return out;
}

int64_t Length(const Intervals& v) {
  int64_t n = 0;
  for (const Interval& i : v) n += i.second - i.first;
  return n;
}

bool Inside(const Intervals& merged, int64_t ts) {
  auto it = std::upper_bound(merged.begin(), merged.end(), Interval{ts, INT64_MAX});
  return it != merged.begin() && ts < std::prev(it)->second;
}

void IntervalUnion::Add(const Interval& iv) {
  v_.push_back(iv);
  if (v_.size() >= limit_) {
    v_ = Merge(std::move(v_));
    limit_ = std::max(kMinLimit, 2 * v_.size());
  }
}

Intervals IntervalUnion::Take() { return Merge(std::move(v_)); }

}  // namespace libreyolo
