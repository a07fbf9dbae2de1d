#include "server/daemon/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/daemon/auth.h"
#include "server/daemon/engine_runner.h"
#include "server/daemon/job_manager.h"
#include "server/daemon/job_store.h"
#include "server/daemon/profiler_service.h"
#include "server/daemon/prometheus.h"
#include "server/daemon/rpc_edge.h"
#include "server/daemon/unix_listener.h"

namespace libreyolo::daemon {

std::vector<std::string> ServedDevices(const DaemonConfig& config) {
  std::vector<std::string> out;
  if (!config.devices.empty()) {
    for (const std::string& d : config.devices) {
      auto n = NormaliseDevice(d);
      if (n.ok() && std::find(out.begin(), out.end(), *n) == out.end()) out.push_back(*n);
    }
  } else {
    const int n = engine::EngineCudaDeviceCount();
    for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("cuda:", i));
  }
  if (std::find(out.begin(), out.end(), "cpu") == out.end()) out.push_back("cpu");
  return out;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonConfig config,
                                                      std::vector<std::string>* warnings) {
  std::unique_ptr<Daemon> d(new Daemon());
  d->config_ = std::move(config);
  const DaemonConfig& c = d->config_;
  // Dataset names resolve in the daemon's datasets directory (the engine reads this variable).
  ::setenv("LIBREYOLO_DATASETS", c.datasets_dir.c_str(), 1);

  auto store = JobStore::Open(c.state_dir, c.store_dir);
  if (!store.ok()) return store.status();
  d->store_ = *std::move(store);

  TokenTable tokens;
  if (!c.tokens_file.empty()) {
    auto t = TokenTable::Load(c.tokens_file);
    if (!t.ok()) return t.status();
    tokens = *std::move(t);
  }
  d->auth_ = std::make_unique<Authenticator>(std::move(tokens), c.admins);
  d->runner_ = std::make_unique<EngineRunner>(d->config_, d->store_.get());
  d->jobs_ = std::make_unique<JobManager>(d->store_.get(), d->runner_.get(), ServedDevices(c),
                                          c.limits, c.retention);
  if (auto s = d->jobs_->Recover(warnings); !s.ok()) return s;
  d->service_ = std::make_unique<ProfilerServiceImpl>(d->config_, d->auth_.get(), d->jobs_.get(),
                                                      d->store_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.RegisterService(d->service_.get());
  // Every RPC's status passes the API edge: unparsable requests, path redaction, length cap.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> edge;
  edge.push_back(MakeRpcEdgeInterceptors(&d->config_, d->auth_.get()));
  builder.experimental().SetInterceptorCreators(std::move(edge));
  // Requests carry inline images; the limit is enforced per field, this bounds the message.
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<int64_t>(c.limits.max_inline_image_bytes + (1 << 20), INT32_MAX)));
  std::vector<std::string> unix_paths;
  std::vector<std::unique_ptr<int>> ports;
  for (const std::string& addr : c.listen) {
    if (absl::StartsWith(addr, "unix:")) {
      unix_paths.push_back(addr.substr(5));
      continue;
    }
    const std::string hostport = absl::StartsWith(addr, "tcp:") ? addr.substr(4) : addr;
    auto creds = MakeServerCredentials(c.tls);
    if (!creds.ok()) return creds.status();
    ports.push_back(std::make_unique<int>(0));
    builder.AddListeningPort(hostport, *creds, ports.back().get());
  }
  for (const std::string& path : unix_paths) {
    auto l = UnixListener::Bind(path, c.unix_socket_mode);
    if (!l.ok()) return l.status();
    d->unix_listeners_.push_back(*std::move(l));
  }
  d->server_ = builder.BuildAndStart();
  if (d->server_ == nullptr) {
    return absl::UnavailableError(
        "the gRPC server did not start: an address in `listen` is in use or cannot be bound");
  }
  for (const auto& p : ports) {
    if (*p == 0) {
      return absl::UnavailableError("a TCP listen address could not be bound (in use?)");
    }
    d->tcp_ports_.push_back(*p);
  }
  for (auto& l : d->unix_listeners_) l->Serve(d->server_.get(), d->auth_.get());
  d->server_->GetHealthCheckService()->SetServingStatus(true);
  d->jobs_->Start();
  d->metrics_thread_ = std::thread([raw = d.get()] { raw->MetricsLoop(); });
  return d;
}

void Daemon::MetricsLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shut_down_) {
    if (!config_.metrics_textfile.empty()) {
      MetricsSnapshot m = jobs_->Metrics();
      m.rpc_errors_total = service_->rpc_errors();
      lock.unlock();
      (void)WriteMetricsTextfile(config_.metrics_textfile, RenderPrometheus(m));
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
  // Refuse new jobs before health says NOT_SERVING, so no submission slips in between.
  jobs_->StopAccepting();
  if (server_) server_->GetHealthCheckService()->SetServingStatus(false);
  jobs_->Drain(std::chrono::seconds(config_.drain_timeout_s));
  for (auto& l : unix_listeners_) l->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
  }
  cv_.notify_all();
  if (metrics_thread_.joinable()) metrics_thread_.join();
}

Daemon::~Daemon() { Shutdown(); }

}  // namespace libreyolo::daemon
