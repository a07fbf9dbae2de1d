#include "client/remote/job_list.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

namespace libreyolo::cli {

absl::StatusOr<v1::ListJobsResponse> ListJobsUpTo(DaemonConnection& c, v1::ListJobsRequest request,
                                                  int64_t limit) {
  v1::ListJobsResponse all;
  while (all.jobs_size() < limit) {
    const int64_t want = limit - all.jobs_size();
    request.set_page_size(
        static_cast<int32_t>(std::min<int64_t>(want, std::numeric_limits<int32_t>::max())));
    request.set_page_token(all.next_page_token());
    auto ctx = c.Context(std::chrono::seconds(30));
    v1::ListJobsResponse page;
    const grpc::Status s = c.stub().ListJobs(ctx.get(), request, &page);
    if (!s.ok()) return c.Error(s);
    const int before = all.jobs_size();
    for (v1::Job& j : *page.mutable_jobs()) {
      if (all.jobs_size() == limit) break;
      *all.add_jobs() = std::move(j);
    }
    all.set_next_page_token(page.next_page_token());
    if (page.next_page_token().empty() || all.jobs_size() == before) break;
  }
  return all;
}

}  // namespace libreyolo::cli
