#include "client/cli/cli.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/exit_codes.h"
#include "client/commands/reader_commands.h"

namespace libreyolo::cli {
namespace {

constexpr char kProgram[] = "libreyolo profile";

std::string ProfileGroupHelp() {
  std::string out =
      "usage: libreyolo profile <subcommand> [<positional>] [--flag value ...]\n\n"
      "Measure where the time goes in YOLO training and inference, and read the profile back.\n"
      "Flags are POSIX style (--top 10), never key=value.\n\nsubcommands:\n";
  absl::StrAppendFormat(&out, "  %-9s %s\n", "run",
                        "profile a short training run (needs the engine; not in this build)");
  absl::StrAppendFormat(&out, "  %-9s %s\n", "infer",
                        "profile the inference path (needs the engine; not in this build)");
  for (const ReaderCommand& c : ReaderCommands()) {
    absl::StrAppendFormat(&out, "  %-9s %s\n", c.spec.name, c.spec.summary);
  }
  out +=
      "\nexit codes: 0 ok; 1 a trace or profile that cannot be analysed; 2 missing file or bad\n"
      "argument; 3 run produced no profile.\n"
      "Run 'libreyolo profile <subcommand> --help' for its flags.\n";
  return out;
}

std::string TopHelp() {
  return absl::StrCat(
      "usage: libreyolo <group> ...\n\ngroups:\n"
      "  profile   measure and read YOLO training/inference profiles "
      "(run 'libreyolo profile')\n\n"
      "  --version print the version\n",
      "libreyolo ", LIBREYOLO_VERSION, "\n");
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
  if (sub == "run" || sub == "infer") {
    err << kProgram << " " << sub
        << ": error: this build has no profiling engine (libreyolod with LibTorch); it reads "
           "profiles and traces only. Record a trace with torch.profiler and read it with "
           "'libreyolo profile summary TRACE'.\n";
    return kExitUsage;
  }
  err << kProgram << ": error: unknown subcommand '" << sub
      << "'. Run 'libreyolo profile' for the list.\n";
  return kExitUsage;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    out << TopHelp();
    return kExitOk;
  }
  if (args[0] == "--version") {
    out << "libreyolo " << LIBREYOLO_VERSION << "\n";
    return kExitOk;
  }
  if (args[0] == "profile") {
    return RunProfileGroup(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  err << "libreyolo: error: unknown command '" << args[0] << "'. Run 'libreyolo --help'.\n";
  return kExitUsage;
}

}  // namespace libreyolo::cli
