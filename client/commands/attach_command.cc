#include "client/commands/attach_command.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/exit_codes.h"
#include "client/commands/command_output.h"
#include "client/commands/job_commands.h"
#include "client/commands/job_request.h"
#include "client/remote/daemon_session.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {
namespace {

constexpr char kCmd[] = "profile attach";

const char* StateText(v1::AttachState s) {
  switch (s) {
    case v1::ATTACH_STATE_IDLE:
      return "idle";
    case v1::ATTACH_STATE_BUSY:
      return "busy";
    case v1::ATTACH_STATE_PENDING:
      return "pending";
    default:
      return "?";
  }
}

std::string Optional(bool has, int64_t v) { return has ? absl::StrCat(v) : "-"; }

void PrintList(const v1::ListAttachableResponse& resp, std::ostream& out) {
  if (resp.processes().empty()) {
    out << "No process polls this daemon. Start one with:\n"
           "  env $(libreyolo profile attach --env) python train.py\n"
           "(a process registers within its first poll, every "
        << resp.poll_interval_s() << " s).\n";
    return;
  }
  const int64_t now = absl::ToUnixMillis(absl::Now());
  out << absl::StrFormat("%-8s %-10s %-8s %-10s %-5s %-6s %-10s %s\n", "PID", "USER", "STATE",
                         "LAST POLL", "RANK", "LOCAL", "SLURM JOB", "COMMAND");
  for (const v1::AttachableProcess& p : resp.processes()) {
    const int64_t ago = std::max<int64_t>(0, (now - p.last_poll_unix_ms()) / 1000);
    out << absl::StrFormat(
        "%-8d %-10s %-8s %-10s %-5s %-6s %-10s %s\n", p.pid(), TerminalSafe(p.user()),
        StateText(p.state()), absl::StrCat(ago, " s ago"), Optional(p.has_rank(), p.rank()),
        Optional(p.has_local_rank(), p.local_rank()),
        p.slurm_job_id().empty() ? "-" : TerminalSafe(p.slurm_job_id()),
        TerminalSafe(p.command_line().empty() ? "(unreadable)" : p.command_line()));
  }
  if (!resp.datagrams_dropped().empty()) {
    std::vector<std::string> drops;
    for (const auto& [reason, n] : resp.datagrams_dropped()) {
      drops.push_back(absl::StrCat(TerminalSafe(reason), " ", n));
    }
    std::sort(drops.begin(), drops.end());
    out << "datagrams dropped: " << absl::StrJoin(drops, ", ") << "\n";
  }
}

int RunAttach(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  const bool env = a.Switch("env");
  const bool list = a.Switch("list");
  const bool target = !a.Values("pid").empty() || a.Value("slurm-job") || a.Switch("all");
  if (env && list) {
    return Fail(err, kCmd, kExitUsage, "give --env or --list, not both");
  }
  if ((env || list) && target) {
    return Fail(err, kCmd, kExitUsage,
                "--env and --list take no --pid, --slurm-job or --all: they trace nothing");
  }
  if (!env && !list) {
    if (!target) {
      return Fail(err, kCmd, kExitUsage,
                  "give --pid N, --slurm-job J or --all to trace processes (--list shows them), "
                  "--env for the environment that makes a process attachable "
                  "(env $(libreyolo profile attach --env) python train.py), or --list");
    }
    // A job like run and infer: queued, followed, its traces fetched into <project>/attach/.
    return SubmitJobAndFollow(kCmd, a, out, err, BuildAttachRequest);
  }
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, kCmd, session.status());
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::ListAttachableRequest req;
  req.set_prepare(env);
  v1::ListAttachableResponse resp;
  const grpc::Status s = c.stub().ListAttachable(ctx.get(), req, &resp);
  if (!s.ok()) return FailStatus(err, kCmd, c.Error(s));
  if (a.Switch("json")) {
    out << ProtoJson(resp) << "\n";
    return kExitOk;
  }
  if (env) {
    for (const std::string& line : resp.env()) out << TerminalSafe(line) << "\n";
    return kExitOk;
  }
  PrintList(resp, out);
  return kExitOk;
}

}  // namespace

const JobCommand& AttachCommand() {
  static const JobCommand* command = [] {
    CommandSpec spec{
        "attach",
        "trace running PyTorch processes by their own Kineto, or make them attachable",
        "A PyTorch process started with the environment --env prints polls libreyolod over\n"
        "Kineto's on-demand protocol (a socket directory of your own under the daemon's\n"
        "attach_dir; nothing else changes in the process):\n"
        "  env $(libreyolo profile attach --env) python train.py\n"
        "--env makes your socket directory on the daemon when it has none yet. --list shows\n"
        "the processes polling now (yours; an admin's: all) with pid, user, state (idle: takes\n"
        "a trace request at its next poll; busy: its own torch.profiler runs; pending),\n"
        "last poll, rank, local rank, Slurm job and command line. A process silent for two\n"
        "poll intervals (10 s), or ended, leaves the list.\n"
        "--pid N (a launcher's pid selects its polling descendants, the leaves that do the\n"
        "work), --slurm-job J or --all traces them as a job, as run and infer are: the window\n"
        "(--duration-ms, default 1000, or --iterations) starts at one time for every process\n"
        "after its next poll and Kineto's warm-up (~7-13 s after the request); the traces and\n"
        "their profile are fetched into <project>/attach/ and the summary printed; Ctrl-C\n"
        "cancels or detaches. Only your own processes (an admin's: anyone's). --remote works\n"
        "on the same host over the daemon's Unix socket. docs/cli.md, \"Attach\".",
        {},
        {{"env", "", "", "print the environment (NAME=value lines) a process needs"},
         {"list", "", "", "list the processes attachable now"},
         {"pid", "N", "", "trace process N (repeatable, or N,M): a launcher's polling leaves"},
         {"slurm-job", "J", "", "trace every polling process of Slurm job J"},
         {"all", "", "", "trace every polling process of yours"},
         {"duration-ms", "N", "1000", "the window: N ms (1..600000)"},
         {"iterations", "N", "", "the window: N optimizer/profiler steps (1..100000) instead"},
         {"record-shapes", "", "", "record input shapes (PROFILE_REPORT_INPUT_SHAPES)"},
         {"profile-memory", "", "", "record allocations (PROFILE_PROFILE_MEMORY)"},
         {"with-stack", "", "", "record Python stacks (PROFILE_WITH_STACK)"},
         {"with-flops", "", "", "estimate FLOPs (PROFILE_WITH_FLOPS)"},
         {"with-modules", "", "", "record module scopes (PROFILE_WITH_MODULES)"},
         {"activities", "LIST", "cpu,cuda", "what Kineto records: cpu, cuda or both"}}};
    for (const FlagSpec& f : JobRequestFlags()) {
      if (f.name != "json") spec.flags.push_back(f);  // --json below: also --env/--list's
    }
    spec.flags.push_back({"json", "", "",
                          "--list/--env: the daemon's answer as JSON; a trace: the summary as "
                          "JSON on stdout, progress events as JSON lines on stderr"});
    for (const FlagSpec& f : RemoteFlagSpecs()) spec.flags.push_back(f);
    return new JobCommand{std::move(spec), RunAttach};
  }();
  return *command;
}

}  // namespace libreyolo::cli
