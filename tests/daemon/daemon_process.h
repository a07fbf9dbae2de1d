// Helpers for the daemon's process-level tests: a fresh temp directory, a real libreyolod
// started as a child process (stopped with SIGTERM or killed with SIGKILL), the real
// `libreyolo` client run as a subprocess, channels and small wrappers around the generated stub,
// health and reflection calls with hand-encoded bytes, and polling with a deadline.
//
// Everything here goes through the process boundary: nothing of the daemon library is linked.
// LIBREYOLOD_BINARY and LIBREYOLO_CLIENT_BINARY are compile definitions (tests/daemon/CMakeLists).
#ifndef LIBREYOLO_TESTS_DAEMON_DAEMON_PROCESS_H_
#define LIBREYOLO_TESTS_DAEMON_DAEMON_PROCESS_H_

#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "libreyolo/profiler/v1/profiler.grpc.pb.h"
#include "tests/support/test_files.h"

#ifndef LIBREYOLOD_BINARY
#error "LIBREYOLOD_BINARY must name the libreyolod binary"
#endif
#ifndef LIBREYOLO_CLIENT_BINARY
#error "LIBREYOLO_CLIENT_BINARY must name the libreyolo binary"
#endif

extern char** environ;

namespace libreyolo::daemon_test {

namespace fs = std::filesystem;
namespace v1 = ::libreyolo::profiler::v1;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// ---- files ---------------------------------------------------------------------------------

// tests/support/test_files.h: ReadFile, WriteFile, TempDir (a fresh /tmp/lyt.XXXXXX per test).
using ::libreyolo::test::ReadFile;
using ::libreyolo::test::TempDir;
using ::libreyolo::test::WriteFile;

// Every regular file and directory under `root`, relative, with the size of files
// ("d path" / "f path size"), sorted: a cheap picture of a directory tree to compare.
inline std::set<std::string> TreeSnapshot(const std::string& root) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_directory(ec)) {
      out.insert("d " + rel);
    } else {
      out.insert("f " + rel + " " +
                 std::to_string(it->is_regular_file(ec) ? it->file_size(ec) : 0));
    }
  }
  return out;
}

// Paths under `root` whose file name starts with `prefix` (temp files of the store: ".tmp.").
inline std::vector<std::string> FilesNamed(const std::string& root, const std::string& prefix,
                                           const std::string& skip_dir = "") {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!skip_dir.empty() && it->path() == skip_dir) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename().string().rfind(prefix, 0) == 0) out.push_back(it->path().string());
  }
  return out;
}

inline std::string Sha256Hex(const std::string& data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return hex;
}

// ---- polling -------------------------------------------------------------------------------

// Calls `done` every `interval` until it returns true (true) or `timeout` passes (false).
inline bool PollUntil(const std::function<bool()>& done, milliseconds timeout,
                      milliseconds interval = milliseconds(50)) {
  const auto until = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(interval);
  }
}

// ---- subprocesses --------------------------------------------------------------------------

// The environment of this process with `extra` ("KEY=VALUE") set over it, minus the variables
// that would point a client at another daemon, unless `extra` sets them.
inline std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const char* k : {"LIBREYOLO_REMOTE", "LIBREYOLO_TOKEN", "LIBREYOLO_TLS_CA", "LIBREYOLOD"}) {
    env.erase(k);
  }
  for (const std::string& kv : extra) {
    const size_t eq = kv.find('=');
    env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// fork + execve, stdin from /dev/null, stdout and stderr to the given files (appended). Only
// async-signal-safe calls happen in the child.
inline pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& out_file, const std::string& err_file,
                   const std::string& cwd = "") {
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = env;
  std::vector<char*> cargv, cenv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const int err = err_file == out_file
                      ? out
                      : ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (null >= 0) ::dup2(null, 0);
    if (out >= 0) ::dup2(out, 1);
    if (err >= 0) ::dup2(err, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  if (out >= 0) ::close(out);
  if (err >= 0 && err != out) ::close(err);
  if (null >= 0) ::close(null);
  return pid;
}

// Waits up to `timeout` for the child `pid` to end; kills it (SIGKILL) and reaps it after that.
// Its exit code, or -1 when it died of a signal or was killed (`timed_out` says which).
inline int WaitChild(pid_t pid, milliseconds timeout, bool* timed_out = nullptr) {
  int status = 0;
  const auto until = Clock::now() + timeout;
  pid_t w = 0;
  while ((w = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  if (timed_out != nullptr) *timed_out = w == 0;
  if (w == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return w == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal, or timed out
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
  std::string Describe() const {
    return "exit " + std::to_string(exit_code) + (timed_out ? " (timed out)" : "") +
           "\n--- stdout ---\n" + out.substr(0, 4000) + "\n--- stderr ---\n" +
           err.substr(err.size() > 6000 ? err.size() - 6000 : 0);
  }
};

// Runs a command to its end (SIGKILL after `timeout`) and collects its output.
inline CommandResult RunCommand(const std::vector<std::string>& argv,
                                const std::vector<std::string>& extra_env = {},
                                seconds timeout = seconds(240), const std::string& cwd = "") {
  CommandResult r;
  char out_name[] = "/tmp/lyd-out.XXXXXX";
  char err_name[] = "/tmp/lyd-err.XXXXXX";
  const int out_fd = ::mkstemp(out_name);
  const int err_fd = ::mkstemp(err_name);
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  const auto start = Clock::now();
  const pid_t pid = Spawn(argv, ChildEnvironment(extra_env), out_name, err_name, cwd);
  if (pid > 0) r.exit_code = WaitChild(pid, timeout, &r.timed_out);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.out = ReadFile(out_name);
  r.err = ReadFile(err_name);
  ::unlink(out_name);
  ::unlink(err_name);
  return r;
}

// `libreyolo ARGS...`.
inline CommandResult RunClient(const std::vector<std::string>& args,
                               const std::vector<std::string>& extra_env = {},
                               seconds timeout = seconds(240), const std::string& cwd = "") {
  std::vector<std::string> argv = {LIBREYOLO_CLIENT_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, extra_env, timeout, cwd);
}

// Processes whose command line contains `needle` (e.g. a private daemon's socket path).
inline std::vector<pid_t> ProcessesWithArgument(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = ReadFile("/proc/" + name + "/cmdline");
    if (cmdline.find(needle) != std::string::npos) out.push_back(std::stoi(name));
  }
  ::closedir(proc);
  return out;
}

// The engine worker processes of the daemon `daemon_pid` (their command line names it after
// --parent).
inline std::vector<pid_t> WorkerPids(pid_t daemon_pid) {
  return ProcessesWithArgument(std::string("--parent") + '\0' + std::to_string(daemon_pid) + '\0');
}

// The process has ended: it is gone, or a zombie nobody reaped yet (a worker whose daemon died
// is reparented and reaped by init a little later).
inline bool Ended(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  return stat.find(") Z") != std::string::npos;
}

// ---- the daemon ----------------------------------------------------------------------------

// The directories of one daemon, all inside a test's temp dir.
struct DaemonDirs {
  explicit DaemonDirs(const std::string& dir)
      : root(dir),
        socket(dir + "/d.sock"),
        state(dir + "/state"),
        store(dir + "/store"),
        models(dir + "/models"),
        datasets(dir + "/datasets"),
        images(dir + "/images") {
    for (const std::string& d : {models, datasets, images}) fs::create_directories(d);
  }
  // Flags for a daemon on these directories (listening where `listen` says; the Unix socket
  // by default), CPU only, two engine threads.
  std::vector<std::string> Flags(const std::vector<std::string>& listen = {}) const {
    std::vector<std::string> f;
    if (listen.empty()) {
      f.insert(f.end(), {"--listen", "unix:" + socket});
    } else {
      for (const std::string& l : listen) f.insert(f.end(), {"--listen", l});
    }
    f.insert(f.end(),
             {"--state-dir", state, "--store-dir", store, "--models-dir", models, "--datasets-dir",
              datasets, "--images-dir", images, "--device", "cpu", "--threads", "2"});
    return f;
  }
  std::string root, socket, state, store, models, datasets, images;
};

class DaemonProcess {
 public:
  // Starts libreyolod with `args`; its stdout and stderr go to `log` (truncated first).
  static std::unique_ptr<DaemonProcess> Start(const std::vector<std::string>& args,
                                              const std::string& log) {
    std::unique_ptr<DaemonProcess> d(new DaemonProcess());
    d->log_ = log;
    { std::ofstream truncate(log, std::ios::trunc); }
    std::vector<std::string> argv = {LIBREYOLOD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    d->pid_ = Spawn(argv, ChildEnvironment({}), log, log);
    return d;
  }
  ~DaemonProcess() { Kill9(); }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Waits until the daemon says it serves ("libreyolod: serving on ...", the whole line), and
  // reads the TCP ports it bound from that line. False when it exited or did not get there in
  // time.
  bool WaitServing(seconds timeout = seconds(90)) {
    auto whole_line = [&] {
      const std::string text = Log();
      const size_t at = text.find("libreyolod: serving on");
      return at != std::string::npos && text.find('\n', at) != std::string::npos;
    };
    const bool ok =
        PollUntil([&] { return whole_line() || !Running(); }, timeout, milliseconds(20));
    if (!ok || !Running()) return false;
    const std::string text = Log();
    const size_t at = text.find("libreyolod: serving on");
    const std::string line = text.substr(at, text.find('\n', at) - at);
    static const std::regex kPort(R"(\(port (\d+)\))");
    tcp_ports_.clear();
    for (std::sregex_iterator it(line.begin(), line.end(), kPort), end; it != end; ++it) {
      tcp_ports_.push_back(std::stoi((*it)[1].str()));
    }
    return true;
  }

  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t w = ::waitpid(pid_, &status, WNOHANG);
    if (w == pid_) {
      exit_status_ = status;
      pid_ = -1;
      return false;
    }
    return true;
  }

  // SIGKILL and reap. No-op when it is not running.
  void Kill9() {
    if (!Running()) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exit_status_ = status;
    pid_ = -1;
  }

  // SIGTERM, then WaitExit.
  std::optional<int> Terminate(seconds timeout, double* elapsed = nullptr) {
    if (!Running()) return std::nullopt;
    ::kill(pid_, SIGTERM);
    return WaitExit(timeout, elapsed);
  }

  // Waits up to `timeout` for the process to exit. Its exit code, or nullopt when it did not
  // exit in time (it is killed then) or died of a signal. `elapsed` gets the time waited.
  std::optional<int> WaitExit(seconds timeout, double* elapsed = nullptr) {
    const auto start = Clock::now();
    const bool exited = PollUntil([&] { return !Running(); }, timeout, milliseconds(20));
    if (elapsed != nullptr) *elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!exited) {
      Kill9();
      return std::nullopt;
    }
    if (!WIFEXITED(exit_status_)) return std::nullopt;
    return WEXITSTATUS(exit_status_);
  }

  std::string Log() const { return ReadFile(log_); }
  // The last lines of the log, for failure messages.
  std::string LogTail(size_t bytes = 3000) const {
    const std::string text = Log();
    return text.size() > bytes ? text.substr(text.size() - bytes) : text;
  }
  pid_t pid() const { return pid_; }
  int tcp_port(size_t i = 0) const { return i < tcp_ports_.size() ? tcp_ports_[i] : -1; }

 private:
  DaemonProcess() = default;
  pid_t pid_ = -1;
  int exit_status_ = 0;
  std::string log_;
  std::vector<int> tcp_ports_;
};

// ---- channels and calls --------------------------------------------------------------------

inline grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // nothing shared between channels
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // Reconnect quickly after a daemon restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return args;
}

inline std::shared_ptr<grpc::Channel> UnixChannel(const std::string& socket) {
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(),
                                   ChannelArgs());
}

inline std::shared_ptr<grpc::Channel> TcpChannel(
    const std::string& hostport,
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials()) {
  return grpc::CreateCustomChannel(hostport, creds, ChannelArgs());
}

// A context with a deadline and, when given, the bearer token.
inline std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "",
                                                seconds deadline = seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  if (deadline.count() > 0) ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  return ctx;
}

// A daemon on `channel` answers GetDaemonInfo.
inline bool Answers(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::ProfilerService::NewStub(channel);
  auto ctx = Ctx("", seconds(2));
  v1::DaemonInfo info;
  return stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok();
}

inline std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

inline grpc::ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// grpc.health.v1.Health/Check for the whole server (service ""), by hand: the request is empty
// (zero bytes); the response is field 1, a varint: 08 01 SERVING, 08 02 NOT_SERVING.
inline grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel,
                                std::string* response_bytes) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
  const grpc::ByteBuffer request = ToBuffer("");
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();
  if (status.ok()) *response_bytes = ToString(response);
  return status;
}
inline const std::string kServing("\x08\x01", 2);
inline const std::string kNotServing("\x08\x02", 2);

// Sends `request_bytes` as the one request message of `method` through a generic streaming
// call (no generated stub, so any bytes at all; unary and streaming methods alike), reads every
// response to the end and returns the call's status. `first_response` (optional) gets the raw
// bytes of the first response; `token` (optional) goes in the authorization header.
inline grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& method, const std::string& request_bytes,
                            const std::string& token = "", std::string* first_response = nullptr,
                            seconds deadline = seconds(20)) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::CompletionQueue cq;
  auto call = stub.PrepareCall(&ctx, method, &cq);
  void* got = nullptr;
  bool ok = false;
  int tags[5] = {};
  auto step = [&](int* tag) { return cq.Next(&got, &ok) && got == tag && ok; };
  call->StartCall(&tags[0]);
  bool fine = step(&tags[0]);
  if (fine) {
    call->Write(ToBuffer(request_bytes), &tags[1]);
    fine = step(&tags[1]);
  }
  if (fine) {
    call->WritesDone(&tags[2]);
    fine = step(&tags[2]);
  }
  bool first = true;
  while (fine) {
    grpc::ByteBuffer response;
    call->Read(&response, &tags[3]);
    fine = step(&tags[3]);
    if (fine && first && first_response != nullptr) *first_response = ToString(response);
    first = false;
  }
  grpc::Status status;
  call->Finish(&status, &tags[4]);
  while (cq.Next(&got, &ok) && got != &tags[4]) {
  }
  cq.Shutdown();
  while (cq.Next(&got, &ok)) {
  }
  return status;
}

// grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo with list_services (field 7,
// an empty string: 3a 00). Returns the raw response bytes (service names appear in clear).
inline grpc::Status ReflectionListServices(const std::shared_ptr<grpc::Channel>& channel,
                                           std::string* response_bytes) {
  return RawCall(channel, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                 std::string("\x3a\x00", 2), "", response_bytes, seconds(10));
}

// ---- jobs ----------------------------------------------------------------------------------

inline bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

// The profiler switches set explicitly: unset ones are probed for overhead, which takes tens of
// seconds on a small CPU box.
inline void QuietProfiler(v1::ProfilerOptions* p) {
  p->set_record_shapes(false);
  p->set_profile_memory(false);
  p->set_with_flops(false);
}

// A small CPU infer job: --imgsz 64 --warmup 1 --runs N --threads 2.
inline v1::SubmitJobRequest TinyInfer(int64_t runs = 2) {
  v1::SubmitJobRequest r;
  v1::InferSpec* s = r.mutable_infer();
  s->mutable_model()->set_device("cpu");
  s->mutable_model()->set_threads(2);
  s->set_imgsz(64);
  s->set_warmup(1);
  s->set_runs(runs);
  QuietProfiler(s->mutable_profiler());
  return r;
}

// A small CPU training run: synthetic:8 --imgsz 64 --batch 2 --steps 2 --warmup 1 --workers 0.
inline v1::SubmitJobRequest TinyRun(int64_t steps = 2) {
  v1::SubmitJobRequest r;
  v1::RunSpec* s = r.mutable_run();
  s->mutable_model()->set_device("cpu");
  s->mutable_model()->set_threads(2);
  s->set_data("synthetic:8");
  s->set_imgsz(64);
  s->set_batch(2);
  s->set_steps(steps);
  s->set_warmup(1);
  s->set_workers(0);
  QuietProfiler(s->mutable_profiler());
  return r;
}

// Space-separated words.
inline std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The same jobs as command-line flags of `libreyolo profile infer|run`.
inline std::vector<std::string> TinyInferFlags() {
  return Words(
      "--device cpu --imgsz 64 --warmup 1 --runs 2 --threads 2 --no-record-shapes "
      "--no-profile-memory --no-with-flops");
}
inline std::vector<std::string> TinyRunFlags() {
  return Words(
      "synthetic:8 --device cpu --imgsz 64 --batch 2 --steps 2 --warmup 1 --workers 0 "
      "--threads 2 --no-record-shapes --no-profile-memory --no-with-flops");
}

inline grpc::Status Submit(v1::ProfilerService::Stub& stub, const v1::SubmitJobRequest& request,
                           v1::Job* job, const std::string& token = "") {
  auto ctx = Ctx(token);
  return stub.SubmitJob(ctx.get(), request, job);
}

inline grpc::Status GetJob(v1::ProfilerService::Stub& stub, const std::string& id, v1::Job* job,
                           const std::string& token = "") {
  auto ctx = Ctx(token);
  v1::GetJobRequest req;
  req.set_job_id(id);
  return stub.GetJob(ctx.get(), req, job);
}

// Polls GetJob until `done(job)`; the last job seen is returned in `job`.
inline bool WaitForJob(v1::ProfilerService::Stub& stub, const std::string& id,
                       const std::function<bool(const v1::Job&)>& done, v1::Job* job,
                       seconds timeout = seconds(180), const std::string& token = "") {
  return PollUntil(
      [&] {
        v1::Job j;
        if (!GetJob(stub, id, &j, token).ok()) return false;
        *job = j;
        return done(j);
      },
      timeout, milliseconds(100));
}

inline bool WaitTerminal(v1::ProfilerService::Stub& stub, const std::string& id, v1::Job* job,
                         seconds timeout = seconds(180), const std::string& token = "") {
  return WaitForJob(
      stub, id, [](const v1::Job& j) { return Terminal(j.state()); }, job, timeout, token);
}

// Reads WatchJob from `from` to the end of the stream (or until `stop(event)` says so; the
// stream is then cancelled). Returns the stream's status.
inline grpc::Status Watch(v1::ProfilerService::Stub& stub, const std::string& id, int64_t from,
                          std::vector<v1::JobEvent>* events, const std::string& token = "",
                          const std::function<bool(const v1::JobEvent&)>& stop = nullptr,
                          seconds deadline = seconds(240)) {
  auto ctx = Ctx(token, deadline);
  v1::WatchJobRequest req;
  req.set_job_id(id);
  req.set_from_sequence(from);
  auto reader = stub.WatchJob(ctx.get(), req);
  v1::JobEvent e;
  while (reader->Read(&e)) {
    events->push_back(e);
    if (stop && stop(e)) {
      ctx->TryCancel();
      break;
    }
  }
  return reader->Finish();
}

// Sequence numbers of `events`, in order.
inline std::vector<int64_t> Sequences(const std::vector<v1::JobEvent>& events) {
  std::vector<int64_t> out;
  for (const v1::JobEvent& e : events) out.push_back(e.sequence());
  return out;
}
inline std::vector<int64_t> OneTo(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 1; i <= n; ++i) out.push_back(i);
  return out;
}

struct ArtifactRead {
  grpc::Status status;
  std::string data;
  std::string sha256;  // from the last chunk
  int64_t total_size = -1;
  int chunks = 0;
  bool offsets_contiguous = true;
  bool last_only_at_end = true;
};

inline ArtifactRead ReadArtifact(v1::ProfilerService::Stub& stub, const std::string& id,
                                 const std::string& name, const std::string& token = "",
                                 int64_t offset = 0, int32_t chunk_size = 0) {
  ArtifactRead r;
  auto ctx = Ctx(token, seconds(120));
  v1::ReadArtifactRequest req;
  req.set_job_id(id);
  req.set_name(name);
  req.set_offset(offset);
  req.set_chunk_size(chunk_size);
  auto reader = stub.ReadArtifact(ctx.get(), req);
  v1::ArtifactChunk c;
  bool seen_last = false;
  int64_t expect = offset;
  while (reader->Read(&c)) {
    ++r.chunks;
    if (c.offset() != expect) r.offsets_contiguous = false;
    if (seen_last) r.last_only_at_end = false;
    expect = c.offset() + static_cast<int64_t>(c.data().size());
    r.data += c.data();
    r.total_size = c.total_size();
    if (c.last()) {
      seen_last = true;
      r.sha256 = c.sha256();
    }
  }
  if (!seen_last) r.last_only_at_end = false;
  r.status = reader->Finish();
  return r;
}

// ---- JSON ----------------------------------------------------------------------------------

// Parses `json` and removes every member named "source" (the label of the input, "job:<id>"
// remotely and the file path locally), at any depth.
inline void StripSource(rapidjson::Value& v) {
  if (v.IsObject()) {
    v.RemoveMember("source");
    for (auto& m : v.GetObject()) StripSource(m.value);
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) StripSource(e);
  }
}

// The fields `profile run|infer --json` puts before the summary's (client WithJobFields: the
// job, its files, the Python LibreYOLO's keys for the command): not the summary's own.
inline const std::vector<std::string>& JobJsonFieldLabels() {
  static const std::vector<std::string> labels = {
      "job_id",         "profile_path",   "profile",       "trace",         "img_per_s_std",
      "img_per_s_n",    "latency_p50_ms", "latency_p90_ms", "latency_p99_ms"};
  return labels;
}

// "" when both parse and are equal once the source labels are removed, else why not. The
// labels are every "source" member, and the top-level members named in `more_labels` (compare
// names its two inputs "before" and "after"; run --json adds the job's own fields).
inline std::string JsonDiffIgnoringSource(const std::string& a, const std::string& b,
                                          const std::vector<std::string>& more_labels = {}) {
  rapidjson::Document da, db;
  da.Parse(a.c_str());
  if (da.HasParseError()) {
    return std::string("first JSON does not parse: ") +
           rapidjson::GetParseError_En(da.GetParseError()) + "\n" + a.substr(0, 2000);
  }
  db.Parse(b.c_str());
  if (db.HasParseError()) {
    return std::string("second JSON does not parse: ") +
           rapidjson::GetParseError_En(db.GetParseError()) + "\n" + b.substr(0, 2000);
  }
  for (rapidjson::Document* d : {&da, &db}) {
    StripSource(*d);
    for (const std::string& label : more_labels) {
      if (d->IsObject() && d->HasMember(label.c_str())) {
        d->RemoveMember(label.c_str());
      }
    }
  }
  if (da == db) return "";
  return "the views differ:\n" + a.substr(0, 3000) + "\n---\n" + b.substr(0, 3000);
}

// The job id from the client's "job <id> queued on ..." line.
// The job id a `profile run|infer --remote` printed: "job <id> queued on ..." in its text
// output, or the "job_id" member of its --json output (stdout's document or stderr's lines).
inline std::string QueuedJobId(const std::string& output) {
  static const std::regex kQueued(R"(job (\S+) queued on )");
  static const std::regex kJson(R"re("job_id"\s*:\s*"([^"]+)")re");
  std::smatch m;
  if (std::regex_search(output, m, kQueued)) return m[1].str();
  if (std::regex_search(output, m, kJson)) return m[1].str();
  return "";
}

}  // namespace libreyolo::daemon_test

#endif  // LIBREYOLO_TESTS_DAEMON_DAEMON_PROCESS_H_
