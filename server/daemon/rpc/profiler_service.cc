#include "server/daemon/rpc/profiler_service.h"

#include <pwd.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "wire/reader_spec/reader_request.h"
#include "server/daemon/attach/attach_endpoint.h"
#include "server/daemon/rpc/prometheus.h"
#include "server/daemon/rpc/request_validation.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kDefaultChunk = 1 << 20;
constexpr int32_t kMaxChunk = 4 << 20;

std::vector<std::string> DirNames(const std::string& dir, bool want_dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!IsPlainName(name)) continue;
    if (want_dirs ? e.is_directory(ec) : e.is_regular_file(ec))
      out.push_back(name);
    else if (want_dirs && e.path().extension() == ".yaml")
      out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return -1;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// Jobs as callers see them: inline images are kept for the run (and for recovery) but not
// echoed back by every GetJob/ListJobs; their names stay, with the data cleared. A remote
// caller (`redactor` set) sees the daemon's directories in the job's error by their short names.
v1::Job ForCaller(v1::Job job, const PathRedactor* redactor) {
  if (job.request().has_infer()) {
    for (v1::InlineImage& im : *job.mutable_request()->mutable_infer()->mutable_images()) {
      im.clear_data();
    }
  }
  if (redactor != nullptr && !job.error().empty()) job.set_error(redactor->Redact(job.error()));
  return job;
}

// A uid's user name, "uid:N" when it has none.
std::string UserName(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return absl::StrCat("uid:", uid);
}

v1::AttachableProcess ToProto(const attach::AttachableProcess& p, const std::string& user) {
  v1::AttachableProcess out;
  out.set_pid(p.pid);
  out.set_user(user);
  out.set_uid(static_cast<int32_t>(p.uid));
  for (pid_t a : p.facts.ancestors) out.add_ancestors(a);
  out.set_command_line(p.facts.command_line);
  out.set_slurm_job_id(p.facts.slurm_job_id);
  if (p.facts.rank) out.set_rank(*p.facts.rank);
  if (p.facts.local_rank) out.set_local_rank(*p.facts.local_rank);
  out.set_first_poll_unix_ms(p.first_poll_unix_ms);
  out.set_last_poll_unix_ms(p.last_poll_unix_ms);
  out.set_state(p.state == attach::AttachState::kIdle   ? v1::ATTACH_STATE_IDLE
                : p.state == attach::AttachState::kBusy ? v1::ATTACH_STATE_BUSY
                                                        : v1::ATTACH_STATE_PENDING);
  out.set_kineto_job_id(p.job_id);
  for (int32_t r : p.reported_pids) out.add_reported_pids(r);
  out.set_endpoint(p.endpoint);
  return out;
}

// Streams `artifact` from the request's offset in chunks of its chunk_size (0: 1 MiB), the
// last one with the recorded SHA-256. OK when the reader stops reading.
absl::Status StreamArtifact(const grpc::ServerContext& ctx, const v1::ReadArtifactRequest& req,
                            const ServedArtifact& artifact,
                            grpc::ServerWriter<v1::ArtifactChunk>* writer) {
  std::ifstream in(artifact.path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("artifact ", req.name(), " is gone"));
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (req.offset() > size) {
    return absl::OutOfRangeError(
        absl::StrCat("offset: ", req.offset(), " is past the end (", size, " bytes)"));
  }
  in.seekg(req.offset());
  const int32_t chunk = req.chunk_size() == 0 ? kDefaultChunk : req.chunk_size();
  std::string buffer(static_cast<size_t>(chunk), '\0');
  int64_t offset = req.offset();
  do {
    if (ctx.IsCancelled()) return absl::CancelledError("the reader went away");
    const int64_t n = std::min<int64_t>(chunk, size - offset);
    in.read(buffer.data(), n);
    if (in.gcount() != n) {
      return absl::DataLossError(absl::StrCat("artifact ", req.name(), " changed while read"));
    }
    v1::ArtifactChunk c;
    c.set_offset(offset);
    c.set_data(buffer.data(), static_cast<size_t>(n));
    c.set_total_size(size);
    offset += n;
    c.set_last(offset == size);
    if (c.last()) c.set_sha256(artifact.sha256);
    if (!writer->Write(c)) return absl::OkStatus();
  } while (offset < size);
  return absl::OkStatus();
}

}  // namespace

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}


ProfilerServiceImpl::ProfilerServiceImpl(const LiveConfig& config, const Authenticator* auth,
                                         JobManager* jobs, JobStore* store)
    : config_(config),
      redactor_(*config.Get()),  // directories do not change on reload
      auth_(auth),
      jobs_(jobs),
      store_(store),
      reader_(JobArtifacts{
          [jobs](const Identity& who, const std::string& id) { return jobs->Readable(who, id); },
          [jobs](const v1::Job& job, const std::string& name) {
            return jobs->VerifiedArtifactPath(job, name);
          }}),
      start_time_unix_ms_(absl::ToUnixMillis(absl::Now())) {}

const PathRedactor* ProfilerServiceImpl::RedactorFor(const Identity& who) const {
  return MayNameLocalPaths(*config_.Get(), who) ? nullptr : &redactor_;
}

grpc::Status ProfilerServiceImpl::Finish(const absl::Status& s) {
  if (!s.ok()) ++rpc_errors_;
  return ToGrpc(s);
}

grpc::Status ProfilerServiceImpl::SubmitJob(grpc::ServerContext* ctx,
                                            const v1::SubmitJobRequest* req, v1::Job* resp) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  std::string device;
  const std::shared_ptr<const DaemonConfig> config = config_.Get();  // SIGHUP may swap it
  if (auto s = ValidateSubmit(*req, *config, *who, &device); !s.ok()) return Finish(s);
  if (auto s = CheckInputsExist(*req, *config); !s.ok()) return Finish(s);
  // An attach job's owner uid: a token user's is its attach_unix_users entry's (issue 37 §4).
  absl::StatusOr<Identity> submitter = req->has_attach() ? AttachIdentity(*who, *config) : *who;
  if (!submitter.ok()) return Finish(submitter.status());
  auto job = jobs_->Submit(*submitter, *req, device);
  if (!job.ok()) return Finish(job.status());
  *resp = ForCaller(*std::move(job), RedactorFor(*who));
  return grpc::Status::OK;
}

grpc::Status ProfilerServiceImpl::WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                                           grpc::ServerWriter<v1::JobEvent>* writer) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  if (auto s = ValidateRequest(*req); !s.ok()) return Finish(s);
  const PathRedactor* redactor = RedactorFor(*who);
  const absl::Status s = jobs_->Watch(
      *who, req->job_id(), req->from_sequence(),
      [&](const v1::JobEvent& e) {
        if (redactor == nullptr || e.message().empty()) return writer->Write(e);
        v1::JobEvent copy = e;
        copy.set_message(redactor->Redact(e.message()));
        return writer->Write(copy);
      },
      [&] { return ctx->IsCancelled(); });
  return Finish(s);
}

// GetJob, CancelJob, DeleteJob: the caller, the request's checks, one job manager call on the
// request's job id, and the job as the caller may see it.
template <typename Request, typename Call>
grpc::Status ProfilerServiceImpl::OnJob(grpc::ServerContext* ctx, const Request& req,
                                        v1::Job* resp, const Call& call) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  if (auto s = ValidateRequest(req); !s.ok()) return Finish(s);
  absl::StatusOr<v1::Job> job = call(*who, req.job_id());
  if (!job.ok()) return Finish(job.status());
  *resp = ForCaller(*std::move(job), RedactorFor(*who));
  return grpc::Status::OK;
}

grpc::Status ProfilerServiceImpl::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                                         v1::Job* resp) {
  return OnJob(ctx, *req, resp, [&](const Identity& who, const std::string& id) {
    return jobs_->Get(who, id);
  });
}

grpc::Status ProfilerServiceImpl::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                           v1::ListJobsResponse* resp) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  if (auto s = ValidateRequest(*req); !s.ok()) return Finish(s);
  auto list = jobs_->List(*who, *req);
  if (!list.ok()) return Finish(list.status());
  *resp = *std::move(list);
  for (v1::Job& j : *resp->mutable_jobs()) j = ForCaller(std::move(j), RedactorFor(*who));
  return grpc::Status::OK;
}

grpc::Status ProfilerServiceImpl::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                                            v1::Job* resp) {
  return OnJob(ctx, *req, resp, [&](const Identity& who, const std::string& id) {
    return jobs_->Cancel(who, id);
  });
}

grpc::Status ProfilerServiceImpl::DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                                            v1::Job* resp) {
  return OnJob(ctx, *req, resp, [&](const Identity& who, const std::string& id) {
    return jobs_->Delete(who, id);
  });
}

grpc::Status ProfilerServiceImpl::ReadArtifact(grpc::ServerContext* ctx,
                                               const v1::ReadArtifactRequest* req,
                                               grpc::ServerWriter<v1::ArtifactChunk>* writer) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  if (req->chunk_size() < 0 || req->chunk_size() > kMaxChunk) {
    return Finish(absl::InvalidArgumentError(
        absl::StrCat("chunk_size: must be 0 (default 1 MiB) .. ", kMaxChunk)));
  }
  if (req->offset() < 0) return Finish(absl::InvalidArgumentError("offset: must be >= 0"));
  if (auto s = ValidateRequest(*req); !s.ok()) return Finish(s);
  auto id = JobId::Parse(req->job_id());
  if (!id.ok()) return Finish(id.status());
  const auto limits = config_.Get()->limits;
  auto slot = downloads_.Acquire(who->user, limits.max_downloads, limits.max_downloads_per_user);
  if (!slot.ok()) return Finish(slot.status());
  auto artifact = reader_.Artifact(*who, *id, req->name());
  if (!artifact.ok()) return Finish(artifact.status());
  return Finish(StreamArtifact(*ctx, *req, *artifact, writer));
}

grpc::Status ProfilerServiceImpl::Read(grpc::ServerContext* ctx, const v1::ReadRequest* req,
                                       v1::ReaderResponse* resp) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  if (auto s = ValidateRequest(*req); !s.ok()) return Finish(s);
  auto call = readerspec::FromReadRequest(*req);
  if (!call.ok()) return Finish(call.status());
  std::vector<ArtifactRef> refs;
  for (const v1::ProfileRef& ref : call->refs) {
    auto id = JobId::Parse(ref.job_id(), "profile.job_id");
    if (!id.ok()) return Finish(id.status());
    refs.push_back(ArtifactRef{*std::move(id), ref.artifact()});
  }
  const auto limits = config_.Get()->limits;
  auto slot = reads_.Acquire(who->user, limits.max_reads, limits.max_reads_per_user);
  if (!slot.ok()) return Finish(slot.status());
  auto out = reader_.Read(*who, std::move(call->invocation), refs);
  if (!out.ok()) return Finish(out.status());
  resp->set_json(out->json);
  resp->set_text(out->text);
  return grpc::Status::OK;
}

// The v1 reader RPCs: each is Read with its own request in the oneof.
template <typename Request>
grpc::Status ProfilerServiceImpl::ReadAs(grpc::ServerContext* ctx, const Request& req,
                                         Request* (v1::ReadRequest::*field)(),
                                         v1::ReaderResponse* resp) {
  v1::ReadRequest read;
  *(read.*field)() = req;
  return Read(ctx, &read, resp);
}

grpc::Status ProfilerServiceImpl::Summary(grpc::ServerContext* ctx, const v1::SummaryRequest* req,
                                          v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_summary, resp);
}
grpc::Status ProfilerServiceImpl::Get(grpc::ServerContext* ctx, const v1::GetRequest* req,
                                      v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_get, resp);
}
grpc::Status ProfilerServiceImpl::Phases(grpc::ServerContext* ctx, const v1::PhasesRequest* req,
                                         v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_phases, resp);
}
grpc::Status ProfilerServiceImpl::Kernels(grpc::ServerContext* ctx, const v1::KernelsRequest* req,
                                          v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_kernels, resp);
}
grpc::Status ProfilerServiceImpl::Ops(grpc::ServerContext* ctx, const v1::OpsRequest* req,
                                      v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_ops, resp);
}
grpc::Status ProfilerServiceImpl::Modules(grpc::ServerContext* ctx, const v1::ModulesRequest* req,
                                          v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_modules, resp);
}
grpc::Status ProfilerServiceImpl::Compare(grpc::ServerContext* ctx, const v1::CompareRequest* req,
                                          v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_compare, resp);
}
grpc::Status ProfilerServiceImpl::WhatIf(grpc::ServerContext* ctx, const v1::WhatIfRequest* req,
                                         v1::ReaderResponse* resp) {
  return ReadAs(ctx, *req, &v1::ReadRequest::mutable_what_if, resp);
}

grpc::Status ProfilerServiceImpl::GetDaemonInfo(grpc::ServerContext* ctx,
                                                const v1::GetDaemonInfoRequest*,
                                                v1::DaemonInfo* resp) {
  const std::shared_ptr<const DaemonConfig> config = config_.Get();
  resp->set_version(LIBREYOLO_VERSION);
  const EngineFacts engine = jobs_->runner().Facts();  // from the engine workers' Hello
  resp->set_libtorch_version(engine.libtorch_version);
  resp->set_cuda_version(engine.cuda_version);
  if (auto who = auth_->Identify(*ctx); who.ok()) {
    resp->set_caller(who->user);
    resp->set_caller_is_admin(who->admin);
    resp->set_allows_local_paths(MayNameLocalPaths(*config, *who));
  }
  for (const std::string& d : jobs_->devices()) {
    if (d == kAttachLane) continue;  // a lane, not a device (ListAttachable is its view)
    v1::DeviceInfo* info = resp->add_devices();
    info->set_name(d);
    info->set_description(jobs_->runner().DescribeDevice(d));
    info->set_queue_length(jobs_->QueueLength(d));
    info->set_running_job_id(jobs_->RunningJob(d));
  }
  resp->set_start_time_unix_ms(start_time_unix_ms_);
  resp->set_max_queue_length(config->limits.max_queue_length);
  resp->set_max_jobs_per_user(config->limits.max_jobs_per_user);
  for (const std::string& m : DirNames(config->models_dir, false)) resp->add_models(m);
  for (const std::string& d : DirNames(config->datasets_dir, true)) resp->add_datasets(d);
  return grpc::Status::OK;
}

grpc::Status ProfilerServiceImpl::GetMetrics(grpc::ServerContext* ctx, const v1::GetMetricsRequest*,
                                             v1::GetMetricsResponse* resp) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  resp->set_text(RenderPrometheus(Metrics()));
  return grpc::Status::OK;
}

grpc::Status ProfilerServiceImpl::ListAttachable(grpc::ServerContext* ctx,
                                                 const v1::ListAttachableRequest* req,
                                                 v1::ListAttachableResponse* resp) {
  auto who = auth_->Identify(*ctx);
  if (!who.ok()) return Finish(who.status());
  if (attach_ == nullptr) {
    return Finish(absl::FailedPreconditionError(
        "this libreyolod serves no attach endpoint (its attach_dir is empty)"));
  }
  if (req->prepare()) {
    // The socket directory is a Unix user's: only the kernel-verified uid of a Unix-socket
    // caller names one (a token user's mapping to a Unix user comes with `attach --pid`).
    if (!who->uid) {
      return Finish(absl::FailedPreconditionError(
          "attach --env needs the daemon's Unix socket on this host (--remote unix:PATH): a "
          "token caller over TCP is no Unix user here"));
    }
    absl::StatusOr<std::string> dir = attach_->PrepareUser(*who->uid);
    if (!dir.ok()) return Finish(dir.status());
    resp->set_socket_dir(*dir);
    resp->add_env("KINETO_USE_DAEMON=1");
    resp->add_env(absl::StrCat("KINETO_IPC_SOCKET_DIR=", *dir));
  }
  // Owners see their own processes: by uid on the Unix socket, for a token user by the Unix user
  // attach_unix_users maps it to (none: nothing; issue 37 §4); admins all.
  std::optional<uid_t> own_uid = who->uid;
  if (!own_uid && !who->admin) {
    absl::StatusOr<std::optional<uid_t>> mapped =
        MappedUnixUid(config_.Get()->attach_unix_users, who->user);
    if (mapped.ok()) own_uid = *mapped;
  }
  std::map<uid_t, std::string> names;
  for (const attach::AttachableProcess& p : attach_->registry().List()) {
    auto name = names.find(p.uid);
    if (name == names.end()) name = names.emplace(p.uid, UserName(p.uid)).first;
    const bool own = own_uid.has_value() && *own_uid == p.uid;
    if (who->admin || own) *resp->add_processes() = ToProto(p, name->second);
  }
  resp->set_poll_interval_s(static_cast<int32_t>(attach::kPollInterval.count()));
  if (who->admin) {
    const attach::EndpointCounters c = attach_->counters();
    resp->set_datagrams_received(c.received);
    for (const auto& [reason, n] : c.dropped) (*resp->mutable_datagrams_dropped())[reason] = n;
  }
  return grpc::Status::OK;
}

MetricsSnapshot ProfilerServiceImpl::Metrics() const {
  MetricsSnapshot m = jobs_->Metrics();
  m.rpc_errors_total = rpc_errors_.load();
  m.reads_in_flight = reads_.in_use();
  m.downloads_in_flight = downloads_.in_use();
  m.resident_memory_bytes = ResidentBytes();
  return m;
}

}  // namespace libreyolo::daemon
