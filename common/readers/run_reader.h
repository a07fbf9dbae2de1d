// One entry point for every reader, used by the local command line and by the daemon's reader
// RPCs alike, so that a profile read locally and the same profile read through a daemon give
// the same view, rendered by the same code.
#ifndef LIBREYOLO_COMMON_READERS_RUN_READER_H_
#define LIBREYOLO_COMMON_READERS_RUN_READER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/what_if.h"
#include "common/profile/profile.h"
#include "common/readers/kernels_view.h"
#include "common/readers/latency_view.h"
#include "common/readers/modules_view.h"
#include "common/readers/ops_view.h"

namespace libreyolo {

// The readers of `libreyolo profile`, in the order it lists them. Each has one row in
// Readers() (below): its name, the profiles it reads and the function that builds and renders
// its view. The command line (client/commands/reader_commands.cc: flags), the wire
// (wire/reader_spec: one row per reader, ReaderWires()) and the daemon all go through that row.
enum class ReaderId {
  kSummary,
  kGet,
  kPhases,
  kKernels,
  kOps,
  kModules,
  kCompare,
  kWhatIf,
  kLatency,
};

struct ReaderInvocation {
  ReaderId reader = ReaderId::kSummary;
  // What to load (a path, or a job reference the loader understands), and how each is named in
  // the view's `source` fields. compare takes two; every other reader one.
  std::vector<std::string> inputs;
  std::vector<std::string> labels;  // empty = the inputs themselves
  std::optional<std::string> field;  // get
  KernelsOptions kernels;
  OpsOptions ops;
  ModulesOptions modules;
  WhatIfRequest what_if;
  LatencyOptions latency;
  // Local readers only (never set for a daemon's reader RPCs, whose inputs are job ids): a
  // directory input is a folder of per-rank traces (ranks_view.h). `summary DIR` is the
  // cross-rank view; with `rank`, any reader but compare reads that rank's trace.
  bool read_folders = false;
  std::optional<int64_t> rank;
};

struct ReaderOutput {
  std::string text;  // the text rendering
  std::string json;  // the --json rendering
};

using ProfileLoader = std::function<absl::StatusOr<Profile>(const std::string& input)>;

// Where `modules` finds the Chrome trace of an input: the file to read and the name the view
// shows for it. Local reads find it beside the profile (ProfileTracePath); the daemon resolves
// the job's trace artifact through its store (verified, and shown as job:<id>/<artifact>, never
// a path on the daemon).
struct TraceInput {
  std::string path;
  std::string label;
};
using TraceLocator =
    std::function<absl::StatusOr<TraceInput>(const std::string& input, const Profile& profile)>;

// Loads the inputs and builds, then renders, the reader's view.
// Errors keep their meaning for the exit code (cli.md):
// - the loader's NOT_FOUND / PERMISSION_DENIED / UNAUTHENTICATED / UNAVAILABLE /
//   DEADLINE_EXCEEDED pass through (exit 2: a missing input, or a daemon that cannot serve it);
// - any other load failure comes back as DATA_LOSS (exit 1: the input cannot be analysed);
// - the view's own errors (unknown metric or phase, bad --sort, shapes not recorded, what-if
//   without exactly one option, modules without a trace or without module scopes) come back
//   as INVALID_ARGUMENT, NOT_FOUND or FAILED_PRECONDITION (exit 2).
// `modules` reads the trace itself: the input when it is a trace, else the profile's trace
// beside it (ProfileTracePath); a trace that cannot be parsed is DATA_LOSS (exit 1).
// `locate` unset: the local rule (ProfileTracePath).
absl::StatusOr<ReaderOutput> RunReader(const ReaderInvocation& invocation,
                                       const ProfileLoader& load,
                                       const TraceLocator& locate = nullptr);

// Loads one input with the error mapping above (NOT_FOUND & co. pass through, any other load
// failure becomes DATA_LOSS): for commands that build their own output from the loaded profile
// (`report`), so their exit codes are the readers'.
absl::StatusOr<Profile> LoadReaderInput(const ProfileLoader& load, const std::string& input);

// One reader, whole: what RunReader needs of it once its inputs are loaded. `profiles` holds
// the loaded inputs (`inputs` of them) and `labels` their names.
struct ReaderCall {
  const ReaderInvocation& invocation;
  const std::vector<Profile>& profiles;
  const std::vector<std::string>& labels;
  const TraceLocator& locate;  // unset: the local rule
};
struct ReaderDef {
  ReaderId id;
  const char* name;  // the subcommand, e.g. "what-if"
  size_t inputs;     // the profiles it reads
  // What the options must satisfy before anything is loaded (nullptr: nothing); its error is
  // INVALID_ARGUMENT.
  absl::Status (*check)(const ReaderInvocation&);
  absl::StatusOr<ReaderOutput> (*read)(const ReaderCall&);
};

// Every reader, in ReaderId order (the order `libreyolo profile` lists them).
const std::vector<ReaderDef>& Readers();
const ReaderDef& Reader(ReaderId id);
// By subcommand name; nullptr for a name that is no reader.
const ReaderDef* FindReader(std::string_view name);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_RUN_READER_H_
