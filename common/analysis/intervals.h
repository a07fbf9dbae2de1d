// Unions of time intervals [start, end) in ns: what the cross-rank figures are made of
// (time in collectives, exposed communication, compute; docs/metrics.md, "Cross-rank analysis").
#ifndef LIBREYOLO_COMMON_ANALYSIS_INTERVALS_H_
#define LIBREYOLO_COMMON_ANALYSIS_INTERVALS_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace libreyolo {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns
using Intervals = std::vector<Interval>;       // "merged": sorted, disjoint, none empty

// `v` sorted and merged in place (no second vector: this is the analysis' peak memory);
// empty intervals are dropped.
Intervals Merge(Intervals v);
// Both merged: the merged intersection, and the parts of `a` outside `b`.
Intervals Intersect(const Intervals& a, const Intervals& b);
Intervals Subtract(const Intervals& a, const Intervals& b);
int64_t Length(const Intervals& merged);
// Whether `ts` lies in one of the merged intervals.
bool Inside(const Intervals& merged, int64_t ts);

// A union built one interval at a time, merged whenever it has doubled since the last merge:
// memory is the merged union plus the intervals since, not every event (a step's nested ops
// merge into a few dozen intervals).
class IntervalUnion {
 public:
  void Add(const Interval& iv);
  Intervals Take();  // the merged union; leaves this empty

 private:
  static constexpr size_t kMinLimit = 1 << 12;
  Intervals v_;
  size_t limit_ = kMinLimit;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_INTERVALS_H_
