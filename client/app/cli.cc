#include "client/app/cli.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/exit_codes.h"
#include "client/cli/python_cli.h"
#include "client/cli/suggest.h"
#include "client/commands/attach_command.h"
#include "client/commands/job_commands.h"
#include "client/commands/reader_commands.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {
namespace {

constexpr char kProgram[] = "libreyolo profile";

std::string ProfileGroupHelp() {
  std::string out =
      "usage: libreyolo profile <subcommand> [<positional>] [--flag value ...]\n\n"
      "Measure where the time goes in YOLO training and inference, and read the profile back.\n"
      "Flags are POSIX style (--top 10), never key=value.\n\nsubcommands:\n";
  for (const JobCommand& c : ProfileJobCommands()) {
    absl::StrAppendFormat(&out, "  %-9s %s\n", c.spec.name, c.spec.summary);
  }
  absl::StrAppendFormat(&out, "  %-9s %s\n", AttachCommand().spec.name,
                        AttachCommand().spec.summary);
  for (const ReaderCommand& c : ReaderCommands()) {
    absl::StrAppendFormat(&out, "  %-9s %s\n", c.spec.name, c.spec.summary);
  }
  out +=
      "\nexit codes: 0 ok; 1 a trace or profile that cannot be analysed; 2 missing file or bad\n"
      "argument; 3 run produced no profile; compare --fail-if-slower: 4 FAIL, 5 INCONCLUSIVE.\n"
      "Run 'libreyolo profile <subcommand> --help' for its flags.\n";
  return out;
}

std::string TopHelp() {
  absl::StatusOr<std::string> python = FindPythonCli(CurrentPythonCliSearch());
  return absl::StrCat(
      "usage: libreyolo <group> ...\n\ngroups:\n"
      "  profile   measure and read YOLO training/inference profiles "
      "(run 'libreyolo profile')\n"
      "  jobs      the jobs on a libreyolod: list, show, watch, cancel, download "
      "(run 'libreyolo jobs')\n\n"
      "  --version print this version and the Python LibreYOLO's\n\n"
      "Every other command (train, predict, val, export, info, ...) is the Python LibreYOLO's:\n"
      "this libreyolo hands it over (arguments, input, output, exit code unchanged) to\n$",
      kPythonCliEnv, ", or else the next libreyolo on PATH: ",
      python.ok() ? TerminalSafe(*python, false)
                  : std::string("not found here ('pip install libreyolo')"),
      ".\n\nlibreyolo ", LIBREYOLO_VERSION, "\n");
}

template <typename Run>
int RunSubcommand(const std::string& program, const CommandSpec& spec, Run run,
                  const std::vector<std::string>& rest, std::ostream& out, std::ostream& err) {
  auto parsed = ParseArgs(spec, rest);
  if (!parsed.ok()) {
    err << program << " " << spec.name << ": error: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  if (parsed->help) {
    out << HelpText(program, spec);
    return kExitOk;
  }
  return run(*parsed, out, err);
}

// " Did you mean 'summary'?" when a known name is close to `typed`, else "".
std::string DidYouMean(const std::string& typed, const std::vector<std::string>& names) {
  const std::optional<std::string> best = ClosestName(typed, names);
  return best ? absl::StrCat(" Did you mean '", *best, "'?") : "";
}

template <typename Commands>
void AddNames(const Commands& commands, std::vector<std::string>* names) {
  for (const auto& c : commands) names->push_back(c.spec.name);
}

std::string JobsGroupHelp() {
  std::string out =
      "usage: libreyolo jobs <subcommand> [<job>] [--flag value ...]\n\n"
      "The jobs on a libreyolod: --remote HOST:PORT (or LIBREYOLO_REMOTE), else your private\n"
      "daemon.\n\nsubcommands:\n";
  for (const JobCommand& c : JobsCommands()) {
    absl::StrAppendFormat(&out, "  %-9s %s\n", c.spec.name, c.spec.summary);
  }
  out += "\nRun 'libreyolo jobs <subcommand> --help' for its flags.\n";
  return out;
}

int RunJobsGroup(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    out << JobsGroupHelp();
    return kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const JobCommand& c : JobsCommands()) {
    if (c.spec.name == args[0]) return RunSubcommand("libreyolo jobs", c.spec, c.run, rest, out, err);
  }
  std::vector<std::string> names;
  AddNames(JobsCommands(), &names);
  err << "libreyolo jobs: error: unknown subcommand '" << args[0] << "'."
      << DidYouMean(args[0], names) << " Run 'libreyolo jobs' for the list.\n";
  return kExitUsage;
}

int RunProfileGroup(const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    out << ProfileGroupHelp();
    return kExitOk;
  }
  const std::string& sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const ReaderCommand& c : ReaderCommands()) {
    if (c.spec.name != sub) continue;
    auto parsed = ParseArgs(c.spec, rest);
    if (!parsed.ok()) {
      err << kProgram << " " << sub << ": error: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    if (parsed->help) {
      out << HelpText(kProgram, c.spec);
      return kExitOk;
    }
    return c.run(*parsed, out, err);
  }
  for (const JobCommand& c : ProfileJobCommands()) {
    if (c.spec.name != sub) continue;
    return RunSubcommand(kProgram, c.spec, c.run, rest, out, err);
  }
  if (sub == AttachCommand().spec.name) {
    return RunSubcommand(kProgram, AttachCommand().spec, AttachCommand().run, rest, out, err);
  }
  std::vector<std::string> names;
  AddNames(ProfileJobCommands(), &names);
  names.push_back(AttachCommand().spec.name);
  AddNames(ReaderCommands(), &names);
  err << kProgram << ": error: unknown subcommand '" << sub << "'." << DidYouMean(sub, names)
      << " Run 'libreyolo profile' for the list.\n";
  return kExitUsage;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    out << TopHelp();
    return kExitOk;
  }
  if (args[0] == "--version") {
    out << VersionText();
    return kExitOk;
  }
  if (args[0] == "profile") {
    return RunProfileGroup(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (args[0] == "jobs") {
    return RunJobsGroup(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  if (const std::string hint = DidYouMean(args[0], {"profile", "jobs"});
      !hint.empty() && args[0][0] != '-') {
    err << "libreyolo: error: unknown command '" << args[0] << "'." << hint
        << " Run 'libreyolo --help'.\n";
    return kExitUsage;
  }
  // main() hands these to the Python LibreYOLO (HandOffToPythonCli) before RunCli sees them.
  err << "libreyolo: error: '" << args[0]
      << "' is not a command of this libreyolo (profile, jobs); the libreyolo program hands it "
         "to the Python LibreYOLO. Run 'libreyolo --help'.\n";
  return kExitUsage;
}

}  // namespace libreyolo::cli
