// `libreyolo profile report DIR/`: the HTML page of a folder of per-rank traces (the cross-rank
// view `summary DIR/` prints): the verdict and its levers, a per-rank chart of each rank's step
// (data loading, exposed communication, the rest), the run's figures (CrossRankMetrics, the
// same numbers as `summary DIR/ --json`) and the per-rank table.
//
// `report BEFORE/ AFTER/`: two runs' folders compared, from the rows `compare BEFORE/ AFTER/`
// prints (CompareRanks): both verdicts, both per-rank charts on one scale, the figures before,
// after and their change, the "not like for like" warnings, and both per-rank tables.
#ifndef LIBREYOLO_COMMON_REPORT_RANKS_REPORT_H_
#define LIBREYOLO_COMMON_REPORT_RANKS_REPORT_H_

#include <string>

#include "common/readers/ranks_view.h"

namespace libreyolo {

// Section ids: verdict, ranks-chart, figures, ranks.
std::string RenderRanksReportHtml(const RanksView& v);

// Section ids: significance (the call and the warnings), verdicts, ranks-chart (two charts,
// before then after), deltas, ranks (two tables). Each view's `source` names it on the page.
std::string RenderRanksCompareReportHtml(const RanksView& before, const RanksView& after);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_RANKS_REPORT_H_
