#include "client/commands/compare_gate_command.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/exit_codes.h"
#include "client/remote/daemon_answer.h"
#include "client/remote/remote_reader.h"
#include "common/analysis/compare.h"
#include "common/analysis/compare_gate.h"
#include "common/load/load_profile.h"
#include "common/readers/compare_view.h"
#include "common/readers/run_reader.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

int Fail(std::ostream& err, int code, const std::string& msg) {
  err << "libreyolo profile compare: error: " << TerminalSafe(msg, /*multiline=*/true) << "\n";
  return code;
}

}  // namespace

FlagSpec FailIfSlowerFlagSpec() {
  return {"fail-if-slower", "PCT", "",
          "CI gate: PASS (exit 0), FAIL (exit 4) when img/s is slower than PCT % beyond the "
          "interval, INCONCLUSIVE (exit 5) when the interval straddles it, n < 2 or a side's "
          "trust is none; like-for-like profiles only (exit 2 otherwise)"};
}

FlagSpec JobDriftFlagSpec() {
  return {"job-drift-pct", "D", absl::StrCat(kDefaultJobDriftPct),
          "with --fail-if-slower: the drift between two identical jobs on this machine class "
          "(relative sd of a job's img/s, %) that the interval includes; measure it from A/A "
          "pairs (docs/ci.md)"};
}

int RunCompareGate(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto pct = ParseDoubleFlag("fail-if-slower", *a.Value("fail-if-slower"));
  if (!pct.ok()) return Fail(err, kExitUsage, std::string(pct.status().message()));
  if (*pct < 0 || *pct >= 100) {
    return Fail(err, kExitUsage,
                absl::StrCat("--fail-if-slower is a percentage of the before img/s in [0, 100), "
                             "got ",
                             *a.Value("fail-if-slower"), " (e.g. --fail-if-slower 5)"));
  }
  double drift = kDefaultJobDriftPct;
  if (const auto given = a.Value("job-drift-pct")) {
    auto d = ParseDoubleFlag("job-drift-pct", *given);
    if (!d.ok()) return Fail(err, kExitUsage, std::string(d.status().message()));
    if (!std::isfinite(*d) || *d < 0 || *d >= 100) {
      return Fail(err, kExitUsage,
                  absl::StrCat("--job-drift-pct is the relative sd of a job's img/s between "
                               "identical jobs, a percentage in [0, 100), got ",
                               *given, " (e.g. --job-drift-pct 2; docs/ci.md measures it)"));
    }
    drift = *d;
  }
  const std::vector<std::string> inputs(a.positionals.begin(), a.positionals.begin() + 2);
  std::vector<std::string> paths = inputs;
  std::unique_ptr<ScratchFolder> tmp;  // the downloads, removed when the command ends
  if (UsesDaemon(inputs, a)) {
    auto made = ScratchFolder::Create("libreyolo-compare");
    if (!made.ok()) {
      return Fail(err, ExitCodeForStatus(made.status()), std::string(made.status().message()));
    }
    tmp = *std::move(made);
    auto fetched = FetchJobInputs(inputs, a, tmp->path(), /*with_trace=*/false);
    if (!fetched.ok()) {
      return Fail(err, ExitCodeForStatus(fetched.status()),
                  std::string(fetched.status().message()));
    }
    paths = *std::move(fetched);
  }
  std::vector<Profile> profiles;
  for (const std::string& path : paths) {
    auto p = LoadReaderInput([](const std::string& in) { return LoadProfile(in); }, path);
    if (!p.ok()) return Fail(err, ExitCodeForStatus(p.status()), std::string(p.status().message()));
    profiles.push_back(*std::move(p));
  }
  // Only like for like: another mode, model, size, imgsz or device has no answer to give.
  if (auto why = GateNotLikeForLike(profiles[0], profiles[1])) {
    return Fail(err, kExitUsage, absl::StrCat(inputs[0], " vs ", inputs[1], ": ", *why));
  }
  CompareResult r = Compare(profiles[0], profiles[1], inputs[0], inputs[1]);
  r.gate = EvaluateGate(ImgPerSTrials(profiles[0]), ImgPerSTrials(profiles[1]), *pct, drift);
  QualifyGateByTrust(profiles[0], profiles[1], *r.gate);  // no confidence: INCONCLUSIVE
  out << (a.Switch("json") ? RenderCompareJson(r)
                           : TerminalSafe(RenderCompareText(r), /*multiline=*/true));
  out.flush();
  return GateExitCode(r.gate->verdict);
}

}  // namespace libreyolo::cli
