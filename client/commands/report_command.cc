#include "client/commands/report_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "client/cli/exit_codes.h"
#include "client/remote/daemon_answer.h"
#include "client/remote/daemon_connection.h"
#include "client/remote/remote_reader.h"
#include "common/io/atomic_file.h"
#include "common/json/json_writer.h"
#include "common/load/load_profile.h"
#include "common/readers/run_reader.h"
#include "common/render/terminal_text.h"
#include "common/report/report_html.h"
#include "common/status/status_macros.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kDefaultOutput[] = "report.html";

// The -o path is checked before any (possibly long) loading: an existing directory, a missing
// or unwritable folder are bad arguments.
absl::Status CheckOutput(const std::string& output) {
  if (output == "-") return absl::OkStatus();
  if (output.empty()) return absl::InvalidArgumentError("-o needs a file name");
  // /dev/null, /dev/stdout, a named pipe or a link: written through, no file beside it.
  if (WritesThrough(output)) return absl::OkStatus();
  std::error_code ec;
  if (fs::is_directory(output, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("-o ", output, " is a directory; name the HTML file to write"));
  }
  fs::path dir = fs::path(output).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("-o ", output, ": the folder ", dir.string(), " does not exist"));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("-o ", output, ": the folder ", dir.string(), " is not writable"));
  }
  return absl::OkStatus();
}

int Fail(std::ostream& err, int code, const std::string& msg) {
  err << "libreyolo profile report: error: " << TerminalSafe(msg, /*multiline=*/true) << "\n";
  return code;
}

}  // namespace

CommandSpec ReportCommandSpec() {
  CommandSpec spec{
      "report",
      "one self-contained HTML page of a profile (two inputs: a comparison page)",
      "Writes one HTML file that opens anywhere, offline (inline CSS and SVG, no network):\n"
      "the verdict with its reason and levers, the summary numbers (equal to `summary --json`),\n"
      "a per-step stacked bar chart with the GPU-busy line, the GPU timeline strip, kernel\n"
      "categories and top kernels, the sortable op table, the per-layer table where the trace\n"
      "has module scopes, memory over the window with its peak, and the profiler's own record.\n"
      "Charts say n/a where the profile lacks the data; a profile.json's timeline charts need\n"
      "its profile_trace.json beside it. With two inputs (BEFORE AFTER) the page compares them:\n"
      "significance first, then the deltas, then both side by side. A folder of per-rank\n"
      "traces (a data-parallel run's prof/, or PyTorch DDP's under torch.profiler) gives the\n"
      "cross-rank page: the verdict, a per-rank chart of each rank's step and the rank table;\n"
      "two folders (BEFORE/ AFTER/) compare the runs as `compare` does. See docs/report.md.",
      {{"trace", true,
        "profile.json, profile_repeat.json, profile_trace.json or any PyTorch/Kineto Chrome "
        "trace (.json or .json.gz); a folder of per-rank traces; or job:<id> for a profile "
        "stored on a libreyolod"},
       {"after", false,
        "a second profile or trace (or folder, when the first is one): compare trace (before) "
        "with it (after)"}},
      {{"output", "FILE", kDefaultOutput, "the HTML file to write ('-': standard output)", false,
        'o'},
       {"json", "", "", "print what was written as JSON ({output, bytes, inputs})"}}};
  // `job:<id>` from a daemon, as every reader (issue 39 §2: report was the one reader without
  // --remote).
  for (const FlagSpec& f : RemoteFlagSpecs()) spec.flags.push_back(f);
  return spec;
}

absl::StatusOr<std::string> WriteReport(const std::vector<std::string>& paths,
                                        const std::vector<std::string>& labels,
                                        const std::string& output) {
  RETURN_IF_ERROR(CheckOutput(output));
  for (const std::string& in : paths) {
    std::error_code ec;
    if (output != "-" && fs::equivalent(in, output, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("-o ", output, " is the input ", in, "; it would be overwritten"));
    }
  }
  ASSIGN_OR_RETURN(std::string html, RenderReportFiles(paths, labels));
  if (output != "-") {
    RETURN_IF_ERROR(WriteNamedOutput(output, html));
  }
  return html;
}

// Whether `path` is this process's standard output (`-o /dev/stdout`, or the file stdout is
// redirected to): the page then goes to stdout as with `-o -`, with no "wrote" line after it,
// which would land in the same file.
bool IsStandardOutput(const std::string& path) {
  struct stat named {}, standard {};
  return ::stat(path.c_str(), &named) == 0 && ::fstat(STDOUT_FILENO, &standard) == 0 &&
         named.st_dev == standard.st_dev && named.st_ino == standard.st_ino;
}

int RunReport(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  const std::string named = a.ValueOr("output", kDefaultOutput);
  const std::string output = named != "-" && IsStandardOutput(named) ? "-" : named;
  if (auto ok = CheckOutput(output); !ok.ok())
    return Fail(err, kExitUsage, std::string(ok.message()));
  std::vector<std::string> paths = a.positionals;
  std::unique_ptr<ScratchFolder> tmp;  // the downloads, removed when the command ends
  if (UsesDaemon(a.positionals, a)) {
    auto made = ScratchFolder::Create("libreyolo-report");
    if (!made.ok()) {
      return Fail(err, ExitCodeForStatus(made.status()), std::string(made.status().message()));
    }
    tmp = *std::move(made);
    auto fetched = FetchJobInputs(a.positionals, a, tmp->path(), true);
    if (!fetched.ok()) {
      return Fail(err, ExitCodeForStatus(fetched.status()), std::string(fetched.status().message()));
    }
    paths = *fetched;
  }
  auto html = WriteReport(paths, a.positionals, output);
  tmp.reset();
  if (!html.ok()) {
    return Fail(err, ExitCodeForStatus(html.status()), std::string(html.status().message()));
  }
  if (output == "-") {
    out << *html;
  } else if (a.Switch("json")) {
    JsonWriter w;
    w.BeginObject().Field("output", output).Field("bytes", static_cast<int64_t>(html->size()));
    w.Key("inputs").BeginArray();
    for (const std::string& in : a.positionals) w.String(in);
    w.EndArray().EndObject();
    out << w.Take();
  } else {
    out << "wrote " << output << " (" << html->size() << " bytes)\n";
  }
  out.flush();
  return kExitOk;
}

}  // namespace libreyolo::cli
