// `libreyolo profile report DIR/`: the HTML page of a folder of per-rank traces (the cross-rank
// view `summary DIR/` prints): the verdict and its levers, a per-rank chart of each rank's step
// (data loading, exposed communication, the rest), the run's figures (CrossRankMetrics, the
// same numbers as `summary DIR/ --json`) and the per-rank table.
#ifndef LIBREYOLO_COMMON_REPORT_RANKS_REPORT_H_
#define LIBREYOLO_COMMON_REPORT_RANKS_REPORT_H_

#include <string>

#include "common/readers/ranks_view.h"

namespace libreyolo {

std::string RenderRanksReportHtml(const RanksView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_RANKS_REPORT_H_
