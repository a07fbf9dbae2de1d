#include "client/remote/job_watch.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/remote/daemon_answer.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"

namespace libreyolo::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void OnSigint(int) { g_interrupted.store(true); }

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED;
}

}  // namespace

void InstallInterruptFlag() {
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
}
bool Interrupted() { return g_interrupted.load(); }
void ClearInterrupt() { g_interrupted.store(false); }

namespace internal {
std::atomic<int> g_interrupt_watcher_throws_for_test{0};
}  // namespace internal

namespace {
constexpr char kWatcherThread[] = "Ctrl-C watcher";
}  // namespace

CancelOnInterrupt::CancelOnInterrupt(grpc::ClientContext* ctx)
    : thread_([this, ctx] {
        const auto body = [&] {
          if (internal::g_interrupt_watcher_throws_for_test.load() > 0 &&
              internal::g_interrupt_watcher_throws_for_test.fetch_sub(1) > 0) {
            throw std::runtime_error("injected by the test");
          }
          while (!done_.load()) {
            if (Interrupted()) {
              ctx->TryCancel();
              return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        };
        RunGuarded(kWatcherThread, "the stream is cancelled and the command fails", body,
                   [&](const std::string& what) {
                     {
                       std::lock_guard<std::mutex> lock(mu_);
                       failure_ = absl::InternalError(absl::StrCat(
                           "the client's '", kWatcherThread, "' thread threw (", what,
                           "), so the daemon's stream was cancelled; the job itself was not "
                           "touched: `libreyolo jobs watch ID` follows it again"));
                     }
                     ctx->TryCancel();
                   });
      }) {}

CancelOnInterrupt::~CancelOnInterrupt() { Stop(); }

void CancelOnInterrupt::Stop() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

absl::Status CancelOnInterrupt::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

absl::StatusOr<WatchResult> WatchJob(DaemonConnection& c, const std::string& job_id,
                                     int64_t from_sequence,
                                     const std::function<void(const v1::JobEvent&)>& on_event) {
  WatchResult out;
  out.last_sequence = from_sequence > 0 ? from_sequence - 1 : 0;
  Reconnect reconnect(c);
  for (;;) {
    v1::WatchJobRequest req;
    req.set_job_id(job_id);
    req.set_from_sequence(out.last_sequence + 1);
    auto ctx = c.Context(std::chrono::seconds(0));
    grpc::Status s;
    absl::Status watcher;
    bool terminal_seen = false;
    {
      // Ctrl-C cancels the stream (not the job); the caller decides about the job.
      CancelOnInterrupt interrupter(ctx.get());
      auto reader = c.stub().WatchJob(ctx.get(), req);
      v1::JobEvent e;
      while (reader->Read(&e)) {
        reconnect.Reset();
        out.last_sequence = e.sequence();
        on_event(e);
        terminal_seen = Terminal(e.state());
      }
      s = reader->Finish();
      interrupter.Stop();
      watcher = interrupter.status();
    }
    if (!watcher.ok()) return watcher;
    if (Interrupted()) {
      out.interrupted = true;
      break;
    }
    if (s.ok()) {
      if (!terminal_seen) {
        // The stream ended without a terminal event: ask for the state.
        auto gctx = c.Context(std::chrono::seconds(30));
        v1::GetJobRequest g;
        g.set_job_id(job_id);
        v1::Job job;
        if (c.stub().GetJob(gctx.get(), g, &job).ok() && !Terminal(job.state())) continue;
      }
      break;
    }
    // A daemon restart (SIGTERM ends streams with UNAVAILABLE after the drain) or a network
    // blip: resume from the last sequence seen.
    if (reconnect.ShouldRetry(s)) continue;
    if (Interrupted()) {
      out.interrupted = true;
      break;
    }
    return c.Error(s);
  }
  // The job as it ended; the daemon may be restarting right now (a job that finished during a
  // drain), so this rides out UNAVAILABLE too.
  v1::GetJobRequest g;
  g.set_job_id(job_id);
  for (Reconnect again(c);;) {
    auto gctx = c.Context(std::chrono::seconds(30));
    const grpc::Status s = c.stub().GetJob(gctx.get(), g, &out.job);
    if (s.ok()) break;
    if (!again.ShouldRetry(s)) return c.Error(s);
  }
  // Its artifact names become paths the caller writes.
  RETURN_IF_ERROR(CheckJobAnswer(out.job, c.address()));
  return out;
}

}  // namespace libreyolo::cli
