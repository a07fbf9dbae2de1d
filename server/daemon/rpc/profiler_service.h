// The ProfilerService implementation (sync gRPC API): authentication, validation, and the
// calls into the job manager, the store and the shared readers.
#ifndef LIBREYOLO_SERVER_DAEMON_RPC_PROFILER_SERVICE_H_
#define LIBREYOLO_SERVER_DAEMON_RPC_PROFILER_SERVICE_H_

#include <atomic>
#include <cstdint>

#include "libreyolo/profiler/v1/profiler.grpc.pb.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/jobs/job_manager.h"
#include "server/daemon/jobs/user_slots.h"
#include "server/daemon/reads/store_reader.h"
#include "server/daemon/rpc/rpc_edge.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

namespace attach {
class AttachEndpoint;
}

class ProfilerServiceImpl final : public v1::ProfilerService::Service {
 public:
  ProfilerServiceImpl(const LiveConfig& config, const Authenticator* auth, JobManager* jobs,
                      JobStore* store);

  grpc::Status SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                         v1::Job* resp) override;
  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                      v1::Job* resp) override;
  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                        v1::ListJobsResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                         v1::Job* resp) override;
  grpc::Status DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                         v1::Job* resp) override;
  grpc::Status ReadArtifact(grpc::ServerContext* ctx, const v1::ReadArtifactRequest* req,
                            grpc::ServerWriter<v1::ArtifactChunk>* writer) override;
  grpc::Status Summary(grpc::ServerContext* ctx, const v1::SummaryRequest* req,
                       v1::ReaderResponse* resp) override;
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetRequest* req,
                   v1::ReaderResponse* resp) override;
  grpc::Status Phases(grpc::ServerContext* ctx, const v1::PhasesRequest* req,
                      v1::ReaderResponse* resp) override;
  grpc::Status Kernels(grpc::ServerContext* ctx, const v1::KernelsRequest* req,
                       v1::ReaderResponse* resp) override;
  grpc::Status Ops(grpc::ServerContext* ctx, const v1::OpsRequest* req,
                   v1::ReaderResponse* resp) override;
  grpc::Status Compare(grpc::ServerContext* ctx, const v1::CompareRequest* req,
                       v1::ReaderResponse* resp) override;
  grpc::Status WhatIf(grpc::ServerContext* ctx, const v1::WhatIfRequest* req,
                      v1::ReaderResponse* resp) override;
  grpc::Status Modules(grpc::ServerContext* ctx, const v1::ModulesRequest* req,
                       v1::ReaderResponse* resp) override;
  // Every reader; the RPCs above wrap their request into this one (ReadAs).
  grpc::Status Read(grpc::ServerContext* ctx, const v1::ReadRequest* req,
                    v1::ReaderResponse* resp) override;
  grpc::Status GetDaemonInfo(grpc::ServerContext* ctx, const v1::GetDaemonInfoRequest* req,
                             v1::DaemonInfo* resp) override;
  grpc::Status GetMetrics(grpc::ServerContext* ctx, const v1::GetMetricsRequest* req,
                          v1::GetMetricsResponse* resp) override;

  // Issue 37: who polls the attach endpoint; with `prepare`, the caller's socket directory.
  grpc::Status ListAttachable(grpc::ServerContext* ctx, const v1::ListAttachableRequest* req,
                              v1::ListAttachableResponse* resp) override;
  // The attach endpoint ListAttachable reads; null (the default): the daemon serves none.
  void set_attach(attach::AttachEndpoint* attach) { attach_ = attach; }

  int64_t rpc_errors() const { return rpc_errors_.load(); }
  // Everything GetMetrics reports, from one place: the RPC and the metrics textfile both
  // render this snapshot.
  MetricsSnapshot Metrics() const;

 private:
  grpc::Status Finish(const absl::Status& s);
  // A v1 reader RPC: `req` put into the ReadRequest's oneof by `field`, then Read.
  template <typename Request>
  grpc::Status ReadAs(grpc::ServerContext* ctx, const Request& req,
                      Request* (v1::ReadRequest::*field)(), v1::ReaderResponse* resp);
  // An RPC on one job (GetJob, CancelJob, DeleteJob): `call(who, job_id)` is the job manager's.
  template <typename Request, typename Call>
  grpc::Status OnJob(grpc::ServerContext* ctx, const Request& req, v1::Job* resp,
                     const Call& call);
  // The redactor for a caller's job errors and event messages; null when it may see paths.
  const PathRedactor* RedactorFor(const Identity& who) const;

  const LiveConfig& config_;
  const PathRedactor redactor_;
  const Authenticator* auth_;
  JobManager* jobs_;
  JobStore* store_;
  StoreReader reader_;  // reads and downloads, over jobs_
  attach::AttachEndpoint* attach_ = nullptr;
  int64_t start_time_unix_ms_;
  // Shared by every caller, capped in all and per user (limits.max_reads*, max_downloads*).
  UserSlots reads_{"reader calls in flight", "max_reads"};
  UserSlots downloads_{"artifact downloads in flight", "max_downloads"};
  std::atomic<int64_t> rpc_errors_{0};
};

// absl::Status -> grpc::Status with the same code and message.
grpc::Status ToGrpc(const absl::Status& s);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_RPC_PROFILER_SERVICE_H_
