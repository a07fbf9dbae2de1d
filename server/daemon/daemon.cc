#include "server/daemon/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"
#include "server/daemon/attach/attach_endpoint.h"
#include "server/daemon/attach/attach_job.h"
#include "server/daemon/jobs/job_manager.h"
#include "server/daemon/rpc/profiler_service.h"
#include "server/daemon/rpc/prometheus.h"
#include "server/daemon/rpc/rpc_edge.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/security/connection_gate.h"
#include "server/daemon/security/own_listener.h"
#include "server/daemon/security/token_checks.h"
#include "server/daemon/store/dir_lock.h"
#include "server/daemon/store/job_store.h"
#include "server/daemon/workers/engine_runner.h"
#include "server/daemon/workers/python_runner.h"
#include "server/daemon/workers/routing_runner.h"

namespace libreyolo::daemon {

// What the metrics thread's catch-all (common/status/thread_guard.h) says it does.
constexpr char kMetricsThreadAction[] = "libreyolod keeps serving; the textfile is not written";

std::vector<std::string> ServedDevices(const DaemonConfig& config, int cuda_device_count) {
  std::vector<std::string> out;
  if (!config.devices.empty()) {
    for (const std::string& d : config.devices) {
      auto n = NormaliseDevice(d);
      if (n.ok() && std::find(out.begin(), out.end(), *n) == out.end()) out.push_back(*n);
    }
  } else {
    for (int i = 0; i < cuda_device_count; ++i) out.push_back(absl::StrCat("cuda:", i));
  }
  if (std::find(out.begin(), out.end(), "cpu") == out.end()) out.push_back("cpu");
  for (int32_t k = 1; k < config.cpu_slots; ++k) {
    const std::string slot = absl::StrCat("cpu:", k);
    if (std::find(out.begin(), out.end(), slot) == out.end()) out.push_back(slot);
  }
  return out;
}

absl::Status Daemon::StartRunners(std::vector<std::string>* warnings) {
  const DaemonConfig& c = config_;
  if (!c.attach_dir.empty() || c.attach_dynolog_compat) {  // issue 37: Kineto's endpoint
    attach::AttachEndpointOptions attach_options;
    attach_options.socket_root = c.attach_dir;
    attach_options.abstract_name = c.attach_dynolog_compat;
    ASSIGN_OR_RETURN(attach_, attach::AttachEndpoint::Start(std::move(attach_options), warnings));
    attach_runner_ =
        std::make_unique<attach::AttachJobRunner>(attach_.get(), store_.get(), *live_);
  }
  // Issue 38 §4: run/infer jobs of a family the engine lacks go to the Python LibreYOLO.
  python_runner_ = std::make_unique<PythonRunner>(*live_, store_.get());
  python_runner_->set_cancel_grace(std::chrono::seconds(c.cancel_grace_s));
  RoutingRunner::Routes routes;
  routes.engine = runner_.get();
  routes.attach = attach_runner_.get();
  routes.python = python_runner_.get();
  routes.delegate = [live = live_.get()](const v1::Job& job, std::string* why_not) {
    return DelegatedFamily(job, *live->Get(), why_not).has_value();
  };
  routing_ = std::make_unique<RoutingRunner>(std::move(routes));
  return absl::OkStatus();
}

// Start's stages, in order; each error names the part that failed.

absl::Status Daemon::OpenStore() {
  const DaemonConfig& c = config_;
  ASSIGN_OR_RETURN(store_, JobStore::Open(c.state_dir, c.store_dir));
  // One daemon per state and store dir: a second one would recover (fail) the first one's
  // running jobs and sweep its scratch files. Locked before anything is read or changed.
  for (const auto& [dir, what] : {std::pair<std::string, const char*>{c.state_dir, "state_dir"},
                                  {c.store_dir, "store_dir"}}) {
    ASSIGN_OR_RETURN(auto lock, DirLock::Acquire(dir, what));
    locks_.push_back(std::move(lock));
  }
  return absl::OkStatus();
}

absl::Status Daemon::LoadAuth(std::vector<std::string>* warnings) {
  const DaemonConfig& c = config_;
  TokenTable tokens;
  if (!c.tokens_file.empty()) {
    ASSIGN_OR_RETURN(auto t, TokenTable::Load(c.tokens_file));
    RETURN_IF_ERROR(CheckLoadedTokens(c.tokens_file, t, c.listen, warnings));
    tokens = std::move(t);
  }
  auth_ = std::make_unique<Authenticator>(std::move(tokens), c.admins);
  live_ = std::make_unique<LiveConfig>(config_);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Daemon::StartEngine(std::vector<std::string>* warnings,
                                                             const std::string& worker_name) {
  const DaemonConfig& c = config_;
  // The engine runs in worker processes (libreyolod-worker, the one executable that links
  // LibTorch), one per device slot. The CPU's comes first: it tells how many CUDA devices the
  // engine sees, and a daemon whose engine cannot load fails here, not at the first job.
  std::error_code self_error;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", self_error).string();
  ASSIGN_OR_RETURN(auto worker, FindWorkerExecutable(c.worker_binary, self, worker_name));
  runner_ = std::make_unique<EngineRunner>(*live_, store_.get(), worker);
  runner_->set_cancel_grace(std::chrono::seconds(c.cancel_grace_s));
  if (absl::Status s = runner_->StartWorker("cpu"); !s.ok()) {
    return absl::InternalError(absl::StrCat("the engine could not start: ", s.message()));
  }
  std::vector<std::string> devices = ServedDevices(c, runner_->Facts().cuda_device_count);
  // The other devices' workers together, from this thread (it lives as long as the daemon: a
  // worker's parent-death signal follows the thread that started it). A device whose worker
  // cannot start is served anyway: its jobs try again and fail with the reason, and
  // GetDaemonInfo's description says it.
  // The slots of cpu_slots start at their first job (a private daemon serves several, most
  // never used).
  std::vector<std::string> others;
  DaemonConfig listed = c;
  listed.cpu_slots = 1;
  for (const std::string& device : ServedDevices(listed, runner_->Facts().cuda_device_count)) {
    if (device != "cpu") others.push_back(device);
  }
  runner_->StartWorkers(others, warnings);
  return devices;
}

absl::Status Daemon::StartJobs(const std::vector<std::string>& devices,
                               std::vector<std::string>* warnings) {
  const DaemonConfig& c = config_;
  // The attach lane (issue 37) queues beside the devices and holds none of them.
  std::vector<std::string> lanes = devices;
  if (attach_) lanes.push_back(kAttachLane);
  jobs_ = std::make_unique<JobManager>(store_.get(), routing_.get(), lanes, c.limits,
                                       c.retention);
  RETURN_IF_ERROR(jobs_->Recover(warnings));
  service_ = std::make_unique<ProfilerServiceImpl>(*live_, auth_.get(), jobs_.get(),
                                                   store_.get());
  if (attach_) service_->set_attach(attach_.get());
  return absl::OkStatus();
}

absl::Status Daemon::BindListeners(grpc::ServerBuilder& builder,
                                   std::vector<std::unique_ptr<int>>& ports) {
  const DaemonConfig& c = config_;
  std::vector<std::string> unix_paths;
  for (const std::string& addr : c.listen) {
    if (absl::StartsWith(addr, "unix:")) {
      unix_paths.push_back(addr.substr(5));
      continue;
    }
    const std::string hostport = absl::StartsWith(addr, "tcp:") ? addr.substr(4) : addr;
    if (c.tls.cert_file.empty()) {
      // Plaintext TCP: our own listener, so that the connection caps apply (gRPC 1.51 has
      // none); TLS connections cannot be handed over, so TLS stays gRPC's listener.
      ASSIGN_OR_RETURN(auto l, OwnListener::BindTcp(addr, hostport));
      tcp_ports_.push_back(l->port());
      own_listeners_.push_back(std::move(l));
      continue;
    }
    RETURN_IF_ERROR(ProbeTcpPort(addr, hostport));
    ASSIGN_OR_RETURN(auto creds, MakeServerCredentials(c.tls));
    ports.push_back(std::make_unique<int>(0));
    builder.AddListeningPort(hostport, creds, ports.back().get());
  }
  for (const std::string& path : unix_paths) {
    ASSIGN_OR_RETURN(auto l, OwnListener::Bind(path, c.unix_socket_mode));
    own_listeners_.push_back(std::move(l));
  }
  return absl::OkStatus();
}

absl::Status Daemon::StartServer() {
  const DaemonConfig& c = config_;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // one daemon per port (ProbeTcpPort)
  // Connections hold descriptors (issue 23 item 2): one with no RPC in flight is closed after
  // connection_idle_timeout_s (a connection that sent only the HTTP/2 preface used to stay open
  // for as long as its peer liked), one stuck in its handshake after handshake_timeout_s.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(c.connection_idle_timeout_s * 1000));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(c.handshake_timeout_s * 1000));
  builder.RegisterService(service_.get());
  // Every RPC's status passes the API edge: unparsable requests, path redaction, length cap.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> edge;
  edge.push_back(MakeRpcEdgeInterceptors(&config_, auth_.get()));
  builder.experimental().SetInterceptorCreators(std::move(edge));
  // Requests carry inline images; the limit is enforced per field, this bounds the message.
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<int64_t>(c.limits.max_inline_image_bytes + (1 << 20), INT32_MAX)));
  std::vector<std::unique_ptr<int>> ports;
  RETURN_IF_ERROR(BindListeners(builder, ports));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::AlreadyExistsError(
        "the gRPC server did not start: an address in `listen` is in use or cannot be bound");
  }
  for (const auto& p : ports) {
    if (*p == 0) {
      return absl::AlreadyExistsError("a TCP listen address could not be bound (in use?)");
    }
    tcp_ports_.push_back(*p);
  }
  return absl::OkStatus();
}

void Daemon::StartServing() {
  const DaemonConfig& c = config_;
  rlimit files{};
  const int64_t fd_limit =
      ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
          ? static_cast<int64_t>(files.rlim_cur)
          : 0;
  gate_ = std::make_unique<ConnectionGate>(
      ConnectionCaps{c.max_connections, c.max_connections_per_peer, c.reserved_descriptors,
                     c.handshake_timeout_s},
      fd_limit);  // Reload sets new caps
  for (auto& l : own_listeners_) l->Serve(server_.get(), auth_.get(), gate_.get());
  server_->GetHealthCheckService()->SetServingStatus(true);
  // A job state that cannot be made durable (a full state filesystem) takes the daemon out of
  // service: health says NOT_SERVING and the log says why, until the store takes writes again.
  jobs_->SetStoreListener([raw = this](bool ok, const std::string& why) {
    std::cerr << (ok ? "libreyolod: the state store takes writes again; accepting jobs again "
                       "(it had failed: "
                     : "libreyolod: cannot record job state durably; accepting and starting no "
                       "jobs until the state filesystem has room (")
              << why << ")" << std::endl;
    if (raw->jobs_->accepting()) raw->server_->GetHealthCheckService()->SetServingStatus(ok);
  });
  jobs_->Start();
  metrics_thread_ = std::thread([raw = this] {
    RunGuarded("metrics textfile", kMetricsThreadAction, [raw] { raw->MetricsLoop(); });
  });
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonConfig config,
                                                      std::vector<std::string>* warnings,
                                                      const std::string& worker_name) {
  std::unique_ptr<Daemon> d(new Daemon());
  d->config_ = std::move(config);
  // Dataset names resolve in the daemon's datasets directory (the engine reads this variable).
  ::setenv("LIBREYOLO_DATASETS", d->config_.datasets_dir.c_str(), 1);
  RETURN_IF_ERROR(d->OpenStore());
  RETURN_IF_ERROR(d->LoadAuth(warnings));
  ASSIGN_OR_RETURN(std::vector<std::string> devices, d->StartEngine(warnings, worker_name));
  RETURN_IF_ERROR(d->StartRunners(warnings));
  RETURN_IF_ERROR(d->StartJobs(devices, warnings));
  RETURN_IF_ERROR(d->StartServer());
  d->StartServing();
  return d;
}

void Daemon::MetricsLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shut_down_) {
    const std::string textfile = live_->Get()->metrics_textfile;
    if (!textfile.empty()) {
      const MetricsSnapshot m = service_->Metrics();  // the same numbers as GetMetrics
      lock.unlock();
      (void)WriteMetricsTextfile(textfile, RenderPrometheus(m));
      lock.lock();
    }
    cv_.wait_for(lock, std::chrono::seconds(15));
  }
}

void Daemon::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return shut_down_; });
}

void Daemon::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
  }
  // Start() may have failed part-way: every part is optional here.
  // Refuse new jobs before health says NOT_SERVING, so no submission slips in between.
  if (jobs_) jobs_->StopAccepting();
  if (server_) server_->GetHealthCheckService()->SetServingStatus(false);
  if (jobs_) {
    jobs_->Drain(std::chrono::seconds(live_ ? live_->Get()->drain_timeout_s
                                            : config_.drain_timeout_s));
  }
  if (runner_) runner_->StopWorkers();  // idle after the drain
  if (attach_) attach_->Stop();
  for (auto& l : own_listeners_) l->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  cv_.notify_all();
  if (metrics_thread_.joinable()) metrics_thread_.join();
}

absl::Status Daemon::Reload(const DaemonConfig& loaded, std::vector<std::string>* notes) {
  const std::shared_ptr<const DaemonConfig> running = live_->Get();
  DaemonConfig next;
  *notes = MergeReloadable(*running, loaded, &next);
  TokenTable tokens;
  if (!next.tokens_file.empty()) {
    ASSIGN_OR_RETURN(TokenTable t, TokenTable::Load(next.tokens_file));
    RETURN_IF_ERROR(CheckLoadedTokens(next.tokens_file, t, next.listen, notes));
    tokens = std::move(t);
  }
  auth_->Reload(std::move(tokens), next.admins);
  jobs_->SetLimits(next.limits, next.retention);
  // New connections meet the new caps; those already open stay (a lower cap closes nothing).
  gate_->set_caps(ConnectionCaps{next.max_connections, next.max_connections_per_peer,
                                 next.reserved_descriptors, next.handshake_timeout_s});
  live_->Set(std::move(next));
  cv_.notify_all();  // the metrics loop picks up a new textfile now
  return absl::OkStatus();
}

int64_t Daemon::drain_timeout_s() const { return live_->Get()->drain_timeout_s; }

bool Daemon::Busy() const {
  return (jobs_ != nullptr && jobs_->Busy()) || (attach_ != nullptr && attach_->KeepsDaemon());
}

Daemon::~Daemon() { Shutdown(); }

}  // namespace libreyolo::daemon
