// libreyolod assembled: store, job manager, engine runner (and its worker processes), gRPC server on TCP and/or a Unix
// socket, health and reflection services, the metrics textfile, and the SIGTERM drain.
#ifndef LIBREYOLO_SERVER_DAEMON_DAEMON_H_
#define LIBREYOLO_SERVER_DAEMON_DAEMON_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/workers/engine_worker.h"

namespace grpc {
class Server;
class ServerBuilder;
}

namespace libreyolo::daemon {

namespace attach {
class AttachEndpoint;
class AttachJobRunner;
}
class Authenticator;
class DirLock;
class EngineRunner;
class PythonRunner;
class RoutingRunner;
class JobManager;
class JobStore;
class ProfilerServiceImpl;
class ConnectionGate;
class OwnListener;

class Daemon {
 public:
  // Opens the store, recovers jobs, binds every listener and starts serving. Errors name the
  // part that failed (a directory, an address in use, a TLS file, the worker executable).
  // `worker_name`: the engine worker executable looked for beside the daemon's binary when
  // config.worker_binary is empty (FindWorkerExecutable).
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(
      DaemonConfig config, std::vector<std::string>* warnings,
      const std::string& worker_name = kWorkerExecutableName);
  ~Daemon();

  // Blocks until Shutdown() is called (by the signal handler thread).
  void Wait();
  // Stops accepting jobs, drains within config.drain_timeout_s, stops the server. Idempotent,
  // and safe on a daemon whose Start() failed part-way.
  void Shutdown();

  // SIGHUP: applies the reloadable keys of `loaded` (MergeReloadable: tokens file, admins,
  // limits, retention, drain timeout, metrics file) without dropping jobs or connections. A
  // tokens file that does not load keeps every old setting and returns why. `notes` receives
  // one line per key that needs a restart.
  absl::Status Reload(const DaemonConfig& loaded, std::vector<std::string>* notes);

  // The TCP ports actually bound (for ":0" listeners), in listen order.
  const std::vector<int>& tcp_ports() const { return tcp_ports_; }
  // The configuration the daemon started with (Reload changes live_, not this).
  const DaemonConfig& config() const { return config_; }
  // The drain timeout in force (SIGHUP may have changed it).
  int64_t drain_timeout_s() const;
  // Whether a job is queued or running, or the attach endpoint has a process polling (or a user
  // who just asked for its environment): a daemon that stops when idle keeps serving then.
  bool Busy() const;

 private:
  Daemon() = default;
  void MetricsLoop();
  // The job runners behind the queue (routing_ sends each job to its own): the attach
  // endpoint and its runner when the config serves one, the Python LibreYOLO's runner.
  absl::Status StartRunners(std::vector<std::string>* warnings);
  // Start's other stages, in order (the runners come between the engine and the jobs):
  // the store and its directories' locks; the tokens and the live configuration; the engine's
  // worker processes (returns the devices served); the job manager (recovering the store's
  // jobs) and the service; the gRPC server and every listener; then serving: the connection
  // gate, health, the store listener, the job manager's thread, the metrics thread.
  absl::Status OpenStore();
  absl::Status LoadAuth(std::vector<std::string>* warnings);
  absl::StatusOr<std::vector<std::string>> StartEngine(std::vector<std::string>* warnings,
                                                       const std::string& worker_name);
  absl::Status StartJobs(const std::vector<std::string>& devices,
                         std::vector<std::string>* warnings);
  absl::Status StartServer();
  // The listen addresses: plaintext TCP and Unix sockets on our own listeners, TLS on gRPC's
  // (`ports` receives where gRPC will write each one's port).
  absl::Status BindListeners(grpc::ServerBuilder& builder,
                             std::vector<std::unique_ptr<int>>& ports);
  void StartServing();

  DaemonConfig config_;
  std::unique_ptr<LiveConfig> live_;  // what RPCs and jobs read; Reload swaps it
  std::vector<std::unique_ptr<DirLock>> locks_;  // state and store dirs, held for life
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<EngineRunner> runner_;
  std::unique_ptr<attach::AttachEndpoint> attach_;  // Kineto's on-demand endpoint (issue 37)
  std::unique_ptr<attach::AttachJobRunner> attach_runner_;
  std::unique_ptr<PythonRunner> python_runner_;
  std::unique_ptr<RoutingRunner> routing_;  // what the job manager runs jobs with
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<ProfilerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ConnectionGate> gate_;  // before the listeners: they use it until Stop()
  std::vector<std::unique_ptr<OwnListener>> own_listeners_;  // the Unix socket, plaintext TCP
  std::vector<int> tcp_ports_;
  std::thread metrics_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shut_down_ = false;
};

// The devices a config serves: its `devices`, else every CUDA device the engine sees
// (`cuda_device_count`, from the CPU worker's Hello), and always "cpu" (CPU jobs do not hold a
// GPU), then the CPU slots cpu:1 .. cpu:(cpu_slots - 1) not listed. Normalised names, the
// default first.
std::vector<std::string> ServedDevices(const DaemonConfig& config, int cuda_device_count);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_DAEMON_H_
