// A table of rows named in code by an enum of ids (MetricId, InferenceMetricId): the rows are
// written with their ids, and the table each id indexes is built at compile time, so a row out
// of its id's order, or an id without a row, fails to compile.
//
//   constexpr std::array kRows = {IdRow<MetricId, MetricDef>{MetricId::kImgPerS, {...}}, ...};
//   static_assert(RowsInIdOrder(kRows), "...");
//   constexpr std::array kTable = DefsOf(kRows);   // kTable[static_cast<size_t>(id)]
#ifndef LIBREYOLO_COMMON_PROFILE_ID_TABLE_H_
#define LIBREYOLO_COMMON_PROFILE_ID_TABLE_H_

#include <array>
#include <cstddef>

namespace libreyolo {

template <typename Id, typename Def>
struct IdRow {
  Id id;
  Def def;
};

// True when row i holds id i, for every row.
template <typename Id, typename Def, size_t N>
constexpr bool RowsInIdOrder(const std::array<IdRow<Id, Def>, N>& rows) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(rows[i].id) != i) return false;
  }
  return true;
}

// The rows' definitions, each at its row's index.
template <typename Id, typename Def, size_t N>
constexpr std::array<Def, N> DefsOf(const std::array<IdRow<Id, Def>, N>& rows) {
  std::array<Def, N> defs{};
  for (size_t i = 0; i < N; ++i) defs[i] = rows[i].def;
  return defs;
}

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_ID_TABLE_H_
