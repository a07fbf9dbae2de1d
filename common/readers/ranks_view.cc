#include "common/readers/ranks_view.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/analysis/trust.h"
#include "common/io/file_reader.h"
#include "common/io/rank_artifacts.h"
#include "common/json/json_read.h"
#include "common/json/json_writer.h"
#include "common/readers/ranks_view_internal.h"
#include "common/render/text_table.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;

bool IsTraceName(const std::string& name) {
  return absl::EndsWith(name, ".json") || absl::EndsWith(name, ".json.gz");
}

absl::StatusOr<std::vector<std::string>> TraceFiles(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  // Our own ranks' job folders first (<project>/prof/rank<R>/profile_trace.json, job_files.h):
  // a single-device run's profile_trace.json may sit beside them in the same prof/.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const fs::path trace = e.path() / kTraceFileName;
    if (e.is_directory(ec) && absl::StartsWith(e.path().filename().string(), "rank") &&
        fs::is_regular_file(trace, ec)) {
      files.push_back(trace.string());
    }
  }
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list ", dir, ": ", ec.message()));
  if (files.empty()) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (e.is_regular_file(ec) && IsTraceName(e.path().filename().string())) {
        files.push_back(e.path().string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir,
        " holds no Chrome trace (*.json, *.json.gz) and no rank*/profile_trace.json: give the "
        "folder torch.profiler wrote one trace per rank into (tensorboard_trace_handler, "
        "export_chrome_trace), or the prof/ folder of a libreyolo-engine data-parallel run"));
  }
  return files;
}

// Every rank 0..n-1 exactly once, of one world size and backend.
absl::Status CheckRanks(const std::string& dir, const std::vector<RankFile>& files,
                        bool require_all) {
  if (files.empty()) return absl::InvalidArgumentError(absl::StrCat(dir, " holds no trace"));
  const RankFile first = files.front();
  std::map<int64_t, const RankFile*> by_rank;
  for (const RankFile& f : files) {
    if (f.info.world_size != first.info.world_size || f.info.backend != first.info.backend) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "mixed runs in %s: %s is rank %d of %d (%s), %s rank %d of %d (%s); keep one run's "
          "traces per folder",
          dir, first.path, first.info.rank, first.info.world_size, first.info.backend, f.path,
          f.info.rank, f.info.world_size, f.info.backend));
    }
    if (f.info.world_size > kMaxWorldSize) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s says its job has %d ranks, more than any job's (at most %d): not a trace of a "
          "distributed run; read it alone with `libreyolo profile summary %s`",
          f.path, f.info.world_size, kMaxWorldSize, f.path));
    }
    if (f.info.rank < 0 || f.info.rank >= f.info.world_size) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s says rank %d of a %d-rank job: not a rank of that job", f.path,
                          f.info.rank, f.info.world_size));
    }
    auto [it, fresh] = by_rank.emplace(f.info.rank, &f);
    if (!fresh) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d appears twice in %s: %s and %s (two runs, or two profiling cycles, in one "
          "folder?); keep one trace per rank",
          f.info.rank, dir, it->second->path, f.path));
    }
  }
  std::vector<int64_t> missing;
  for (int64_t r = 0; require_all && r < first.info.world_size; ++r) {
    if (!by_rank.count(r)) missing.push_back(r);
  }
  if (missing.empty()) return absl::OkStatus();
  std::vector<int64_t> held;
  for (const auto& [r, f] : by_rank) held.push_back(r);
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s holds rank%s %s of a %d-rank job (backend %s); rank%s %s %s missing: put every "
      "rank's trace in the folder (two or more of its ranks are analysed for the ranks "
      "present), or read one rank with --rank %d (or give its file alone)",
      dir, held.size() == 1 ? "" : "s", RanksText(held), first.info.world_size,
      first.info.backend.empty() ? "unknown" : first.info.backend, missing.size() == 1 ? "" : "s",
      RanksText(missing), missing.size() == 1 ? "is" : "are", held.front()));
}

std::vector<RankTraceInput> Inputs(const std::vector<std::string>& traces) {
  std::vector<RankTraceInput> in;
  for (const std::string& t : traces) in.push_back({t, std::nullopt});
  return in;
}

// The rank and world size of the process whose trace `trace` is, from the profile.json beside
// a rank folder's profile_trace.json (an attach job's, downloaded: config.traced_process);
// nullopt when there is none or it does not say.
std::optional<DistributedInfo> TracedProcessBeside(const std::string& trace) {
  const fs::path path(trace);
  if (path.filename() != kTraceFileName) return std::nullopt;
  absl::StatusOr<std::string> text =
      ReadWholeFile((path.parent_path() / kProfileFileName).string());
  if (!text.ok()) return std::nullopt;
  const rapidjson::Document d = JsonOrNull(*text);
  if (!d.IsObject()) return std::nullopt;
  const auto config = d.FindMember("config");
  if (config == d.MemberEnd() || !config->value.IsObject()) return std::nullopt;
  const auto proc = config->value.FindMember("traced_process");
  if (proc == config->value.MemberEnd() || !proc->value.IsObject()) return std::nullopt;
  const auto count = [&](const char* key) -> int64_t {
    const auto it = proc->value.FindMember(key);
    return it != proc->value.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : -1;
  };
  DistributedInfo info;
  info.rank = count("rank");
  info.world_size = count("world_size");
  if (info.rank < 0 || info.world_size <= 0) return std::nullopt;
  return info;
}

// Every rank's pass: figures at once for a trace that marks steps; the intervals of one that
// does not, kept until the window all of them share is known.
struct RankPasses {
  explicit RankPasses(size_t n) : results(n), stepless(n), backends(n) {}

  // Each pass over rank i runs through RunGuarded (issue 39 §4): anything it throws (bad_alloc
  // on a huge trace) fails this rank only, naming the thread, and the worker goes on with the
  // next rank.
  void Read(size_t i, const std::string& path) {
    Guarded(i, path, [&] {
      if (internal::g_rank_read_throws_for_test.load() > 0 &&
          internal::g_rank_read_throws_for_test.fetch_sub(1) > 0) {
        throw std::runtime_error("injected by the test");
      }
      absl::StatusOr<RankTraceRead> read = ReadRankTraceFile(path);
      if (!read.ok()) {
        results[i] = read.status();
      } else {
        backends[i] = read->collective_backend();
        if (read->steps() > 0) {
          results[i] = RankFiguresOf(*std::move(read), path);
        } else {
          stepless[i] = *std::move(read);
        }
      }
    });
  }
  void Window(size_t i, const std::string& path, const Interval& window) {
    Guarded(i, path,
            [&] { results[i] = RankWindowFiguresOf(*std::move(stepless[i]), path, window); });
    stepless[i].reset();
  }
  void Guarded(size_t i, const std::string& path, const std::function<void()>& pass) {
    RunGuarded(absl::StrCat("rank trace reader (", path, ")"), "this rank's read fails", pass,
               [&](const std::string& what) {
                 results[i] = absl::ResourceExhaustedError(
                     absl::StrCat("the rank trace reader thread threw: ", what));
               });
  }
  // The first rank that failed, naming it.
  absl::Status Check(const std::vector<RankFile>& files) const {
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i] && !results[i]->ok()) {
        return absl::DataLossError(absl::StrFormat("rank %d (%s): %s", files[i].info.rank,
                                                   files[i].path,
                                                   results[i]->status().message()));
      }
    }
    return absl::OkStatus();
  }
  // The first rank read without steps; n when every rank has them.
  size_t FirstStepless() const {
    const auto held = [](const std::optional<RankTraceRead>& r) { return r.has_value(); };
    return static_cast<size_t>(std::find_if(stepless.begin(), stepless.end(), held) -
                               stepless.begin());
  }
  bool windowed() const { return FirstStepless() < stepless.size(); }
  // The span every rank's trace recorded: the latest start to the earliest end.
  absl::StatusOr<Interval> CommonWindow(const std::string& dir,
                                        const std::vector<RankFile>& files) const {
    Interval w{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    for (size_t i = 0; i < files.size(); ++i) {
      if (!stepless[i]) {
        const size_t j = FirstStepless();
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: rank %d's trace (%s) marks ProfilerStep#N steps and rank %d's (%s) none: one "
            "run's ranks are traced alike (torch.profiler with a schedule, or on demand); keep "
            "one kind of trace per folder",
            dir, files[i].info.rank, files[i].path, files[j].info.rank, files[j].path));
      }
      const std::optional<Interval> span = stepless[i]->recorded();
      if (!span) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: rank %d's trace (%s) records no event", dir, files[i].info.rank, files[i].path));
      }
      w = {std::max(w.first, span->first), std::min(w.second, span->second)};
    }
    if (w.second <= w.first) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": the ranks' traces share no recorded time (no step marks, so the ranks are "
          "compared over the span they all cover): trace the ranks together, with one start "
          "time (an attach job gives every process one PROFILE_START_TIME)"));
    }
    return w;
  }

  std::vector<std::optional<absl::StatusOr<RankFigures>>> results;
  std::vector<std::optional<RankTraceRead>> stepless;
  std::vector<std::string> backends;
};

// Runs task(i) for i in [0, n) on at most `threads` threads. The tasks (RankPasses::Read,
// Window) run their bodies through RunGuarded, so no exception leaves a thread.
template <typename Task>
void ParallelFor(size_t n, int threads, Task task) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) task(i);
  };
  const size_t count = std::min<size_t>(n, static_cast<size_t>(std::max(threads, 1)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace

namespace internal {
std::atomic<int> g_rank_read_throws_for_test{0};
}  // namespace internal

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

absl::StatusOr<std::vector<RankFile>> ScanRankFolder(const std::string& dir, bool require_all) {
  ASSIGN_OR_RETURN(auto files, TraceFiles(dir));
  return ScanRankTraces(dir, files, require_all);
}

absl::StatusOr<std::vector<RankFile>> ScanRankTraces(const std::string& dir,
                                                     const std::vector<std::string>& traces,
                                                     bool require_all) {
  return ScanRankTraces(dir, Inputs(traces), require_all);
}

absl::StatusOr<std::vector<RankFile>> ScanRankTraces(const std::string& dir,
                                                     const std::vector<RankTraceInput>& traces,
                                                     bool require_all) {
  std::vector<RankFile> out;
  for (const RankTraceInput& in : traces) {
    const std::string& path = in.path;
    auto info = ReadDistributedInfo(path);
    if (!info.ok()) {
      if (info.status().code() == absl::StatusCode::kNotFound) return info.status();
      return absl::DataLossError(absl::StrCat("rank trace ", path, ": ", info.status().message()));
    }
    if (info->rank < 0 || info->world_size <= 0) {
      // No distributedInfo (Kineto's on-demand trace): the caller's, else the profile beside.
      std::optional<DistributedInfo> known = in.given ? in.given : TracedProcessBeside(path);
      if (known && known->rank >= 0 && known->world_size > 0) {
        info = *known;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            path,
            " has no distributedInfo (rank, world_size), and no profile.json beside it says "
            "which rank of how many its process was (config.traced_process): not a trace of a "
            "distributed run; read it alone with `libreyolo profile summary ",
            path, "`, or move it out of the folder"));
      }
    }
    out.push_back({path, *info});
  }
  RETURN_IF_ERROR(CheckRanks(dir, out, require_all));
  std::sort(out.begin(), out.end(),
            [](const RankFile& a, const RankFile& b) { return a.info.rank < b.info.rank; });
  return out;
}

absl::StatusOr<std::string> RankTracePath(const std::string& dir, int64_t rank) {
  ASSIGN_OR_RETURN(auto files, ScanRankFolder(dir, /*require_all=*/false));
  std::vector<int64_t> held;
  for (const RankFile& f : files) {
    if (f.info.rank == rank) return f.path;
    held.push_back(f.info.rank);
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("--rank %d: %s holds rank%s %s of a %d-rank job", rank, dir,
                      held.size() == 1 ? "" : "s", RanksText(held), files.front().info.world_size));
}

absl::StatusOr<RanksView> BuildRanksView(const std::string& dir, int threads) {
  ASSIGN_OR_RETURN(auto files, TraceFiles(dir));
  return BuildRanksViewOfTraces(dir, files, threads);
}

absl::StatusOr<RanksView> BuildRanksViewOfTraces(const std::string& dir,
                                                 const std::vector<std::string>& traces,
                                                 int threads) {
  return BuildRanksViewOfTraces(dir, Inputs(traces), threads);
}

absl::StatusOr<RanksView> BuildRanksViewOfTraces(const std::string& dir,
                                                 const std::vector<RankTraceInput>& traces,
                                                 int threads) {
  // Two or more ranks of a larger job are analysed for the ranks present (the missing ones
  // named in `trust`, the figures that need every rank partial); one rank alone has no other to
  // set against, so a lone rank of a larger job is refused, naming --rank.
  ASSIGN_OR_RETURN(auto files, ScanRankTraces(dir, traces, /*require_all=*/traces.size() < 2));
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t n = files.size();
  RankPasses passes(n);
  ParallelFor(n, threads, [&](size_t i) { passes.Read(i, files[i].path); });
  RETURN_IF_ERROR(passes.Check(files));
  if (passes.windowed()) {
    ASSIGN_OR_RETURN(Interval window, passes.CommonWindow(dir, files));
    ParallelFor(n, threads, [&](size_t i) { passes.Window(i, files[i].path, window); });
    RETURN_IF_ERROR(passes.Check(files));
  }
  std::vector<RankFigures> figures;
  for (size_t i = 0; i < n; ++i) {
    figures.push_back(**passes.results[i]);
    figures.back().info = files[i].info;
    // A trace without distributedInfo: its collective spans name the backend.
    if (figures.back().info.backend.empty()) figures.back().info.backend = passes.backends[i];
  }
  RanksView v;
  v.source = dir;
  v.threads = std::min(threads, static_cast<int>(n));
  v.result = AnalyseCrossRank(std::move(figures), files.front().info.world_size);
  return v;
}

namespace {

std::string Opt(const std::optional<int64_t>& v) {
  return v ? absl::StrCat(*v) : std::string("n/a");
}

}  // namespace

const std::vector<CrossRankMetric>& CrossRankMetrics() {
  using R = CrossRankResult;
  static const auto* m = new std::vector<CrossRankMetric>{
      {"step_ms_mean", "ms", false, &R::step_ms_mean},
      {"step_spread_ms", "ms", false, &R::step_spread_ms},
      {"step_spread_pct", "%", false, &R::step_spread_pct, true, false},
      {"straggler", "", false, &R::straggler, false, false, true},
      {"wait_for_rank", "", false, &R::wait_for_rank, false, false, true},
      {"collective_wait_ms", "ms", false, &R::collective_wait_ms},
      {"collective_wait_median_ms", "ms", false, &R::collective_wait_median_ms},
      {"straggler_extra_dataload_ms", "ms", false, &R::straggler_extra_dataload_ms, true, false},
      {"straggler_extra_compute_ms", "ms", false, &R::straggler_extra_compute_ms, true, false},
      {"comm_ms", "ms", false, &R::comm_ms},
      {"exposed_comm_ms", "ms", false, &R::exposed_comm_ms},
      {"comm_overlap_pct", "%", true, &R::comm_overlap_pct},
      {"allreduce_bytes", "B", false, &R::allreduce_bytes, false},
      {"algbw_gbps", "GB/s", true, &R::algbw_gbps},
      {"busbw_gbps", "GB/s", true, &R::busbw_gbps},
      {"load_imbalance_pct", "%", false, &R::load_imbalance_pct},
  };
  return *m;
}

std::optional<double> CrossRankMetric::Value(const CrossRankResult& r) const {
  return std::visit(
      [&](auto member) -> std::optional<double> {
        const auto& v = r.*member;
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, double>) {
          return v;
        } else {
          if (!v) return std::nullopt;
          return static_cast<double>(*v);
        }
      },
      field);
}

void CrossRankMetric::Set(CrossRankResult& r, std::optional<double> x) const {
  std::visit(
      [&](auto member) {
        auto& v = r.*member;
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, double>) {
          v = x.value_or(0);
        } else if constexpr (std::is_same_v<V, std::optional<int64_t>>) {
          v = x ? std::optional<int64_t>(static_cast<int64_t>(*x)) : std::nullopt;
        } else {
          v = x;
        }
      },
      field);
}

namespace {

// The verdict's headline: "rank 1 is a straggler", "communication-bound", "balanced".
std::string Headline(const std::string& verdict) { return verdict.substr(0, verdict.find(':')); }

}  // namespace

CompareResult CompareRanks(const RanksView& before, const RanksView& after) {
  const CrossRankResult& b = before.result;
  const CrossRankResult& a = after.result;
  CompareResult r;
  r.before_label = before.source;
  r.after_label = after.source;
  if (b.world_size != a.world_size) {
    r.warnings.push_back(absl::StrCat("different world_size: ", b.world_size, " before, ",
                                      a.world_size, " after; the numbers are not like for like"));
  }
  if (b.windowed != a.windowed) {
    r.warnings.push_back(absl::StrCat("figures per ", b.windowed ? "window" : "step",
                                      " before, per ", a.windowed ? "window" : "step",
                                      " after; the numbers are not like for like"));
  }
  if (b.backend != a.backend) {
    r.warnings.push_back(absl::StrCat("different backend: ", b.backend, " before, ", a.backend,
                                      " after; the numbers are not like for like"));
  }
  for (const auto& [side, v] : {std::pair{"before", &b}, std::pair{"after", &a}}) {
    if (v->partial()) {
      r.warnings.push_back(absl::StrFormat(
          "%s holds %d of %d ranks (%s missing): its straggler, wait and load imbalance are "
          "partial",
          side, v->ranks.size(), v->world_size, RanksText(v->missing_ranks)));
    }
  }
  for (const CrossRankMetric& m : CrossRankMetrics()) {
    if (!m.compared) continue;
    CompareDelta d{m.name, m.unit, m.higher_is_better, m.Value(b), m.Value(a)};
    d.directional = m.directional;
    r.deltas.push_back(std::move(d));
  }
  const size_t shared = std::min(b.ranks.size(), a.ranks.size());
  for (size_t k = 0; k < shared; ++k) {
    const RankFigures& x = b.ranks[k];
    const RankFigures& y = a.ranks[k];
    const std::string rank = absl::StrCat("rank ", k, " ");
    r.deltas.push_back({rank + "step_ms", "ms", false, x.step_ms, y.step_ms});
    r.deltas.push_back({rank + "compute_ms", "ms", false, x.compute_ms, y.compute_ms});
    r.deltas.push_back({rank + "dataload_ms", "ms", false, x.dataload_ms, y.dataload_ms});
    r.deltas.push_back(
        {rank + "exposed_comm_ms", "ms", false, x.exposed_comm_ms, y.exposed_comm_ms});
  }
  r.bound_before = Headline(b.verdict);
  r.bound_after = Headline(a.verdict);
  r.significance.text =
      "one run on each side (a folder of rank traces each): a single run cannot support a "
      "significance call";
  return r;
}

namespace {

// The folder's checks as trust.h's assessment, for its one-line summary.
TrustAssessment RanksAssessment(const CrossRankResult& r) {
  TrustAssessment t;
  t.checks = r.trust_checks;
  t.checked = !t.checks.empty();
  t.confidence = r.confidence;
  t.reasons = r.trust_reasons;
  return t;
}

// "trust: reduced: 126 of 128 ranks missing: ...", each failed check's evidence below.
void AppendRanksTrustLines(std::string& out, const CrossRankResult& r) {
  absl::StrAppend(&out, "trust: ", TrustSummary(RanksAssessment(r)), "\n");
  for (const TrustCheck& c : r.trust_checks) {
    if (c.outcome == kTrustFailed) absl::StrAppend(&out, "  ", c.name, ": ", c.evidence, "\n");
  }
}

}  // namespace

std::string RenderRanksText(const RanksView& v) {
  const CrossRankResult& r = v.result;
  const char* per = r.windowed ? "window" : "step";
  const std::string count =
      r.partial() ? absl::StrFormat("%d of %d ranks, %s missing", r.ranks.size(), r.world_size,
                                    RanksText(r.missing_ranks))
                  : absl::StrFormat("%d ranks", r.world_size);
  std::string out = absl::StrFormat("%s: %s (%s)\nverdict: %s\n", v.source, count,
                                    r.backend.empty() ? "backend unknown" : r.backend, r.verdict);
  for (const std::string& l : r.levers) absl::StrAppend(&out, "  lever: ", l, "\n");
  AppendRanksTrustLines(out, r);
  // The figures that need every rank, over the ranks present only.
  const std::string part = r.partial() ? absl::StrCat(" [partial: ", r.ranks.size(), " of ",
                                                      r.world_size, " ranks]")
                                       : std::string();
  TextTable t({{"rank"},
               {"steps"},
               {r.windowed ? "window ms" : "step ms"},
               {"compute ms"},
               {"dataload ms"},
               {"collectives ms"},
               {"exposed comm ms"},
               {absl::StrCat("all-reduce/", per)}});
  for (const RankFigures& f : r.ranks) {
    t.AddRow({absl::StrCat(f.info.rank), f.windowed ? "none" : absl::StrCat(f.steps),
              Fmt(f.step_ms, 2), Fmt(f.compute_ms, 2), Fmt(f.dataload_ms, 2), Fmt(f.comm_ms, 2),
              Fmt(f.exposed_comm_ms, 2), FmtBytes(f.allreduce_bytes)});
  }
  absl::StrAppend(&out, "per rank, per ", per, ":\n", t.Render());
  if (r.windowed) {
    absl::StrAppend(&out, "window               ", Fmt(r.step_ms_mean, 2),
                    " ms (no steps marked: the span every rank's trace recorded)\n");
  } else {
    absl::StrAppend(&out, "step-time spread     ", Fmt(r.step_spread_ms, 2), " ms (",
                    Fmt(r.step_spread_pct, 1), " % of the mean step ", Fmt(r.step_ms_mean, 2),
                    " ms)", part, "\n");
  }
  absl::StrAppend(
      &out, "straggler            ", r.straggler ? absl::StrCat("rank ", *r.straggler) : "none",
      part, "\n", "wait for rank ", Opt(r.wait_for_rank), "      ",
      FmtUnit(r.collective_wait_ms, "ms", 2), " per ", per,
      r.windowed ? std::string()
                 : absl::StrCat(", median over steps ",
                                FmtUnit(r.collective_wait_median_ms, "ms", 2)),
      " (the others' time in collectives minus its)", part, "\n", "communication        ",
      Fmt(r.comm_ms, 2), " ms per ", per, ", exposed ", Fmt(r.exposed_comm_ms, 2),
      " ms, overlapped ", FmtUnit(r.comm_overlap_pct, "%", 1), "\n", "all-reduce           ",
      FmtBytes(r.allreduce_bytes), " per ", per, ", algbw ", FmtUnit(r.algbw_gbps, "GB/s", 3),
      ", busbw ", FmtUnit(r.busbw_gbps, "GB/s", 3), "\n", "load imbalance       ",
      FmtUnit(r.load_imbalance_pct, "%", 1),
      " (busiest rank's compute + dataload over the mean)", part, "\n");
  return out;
}

namespace {

constexpr char kGpuComm[] = "gpu kernels";
constexpr char kCpuComm[] = "cpu spans";

// A rank's row of the JSON form (RenderRanksJson, RanksViewFromJson), after its rank and trace.
struct RankColumn {
  const char* name;
  std::variant<int64_t RankFigures::*, double RankFigures::*,
               std::optional<double> RankFigures::*>
      field;
};

const std::vector<RankColumn>& RankColumns() {
  using F = RankFigures;
  static const auto* c = new std::vector<RankColumn>{
      {"steps", &F::steps},
      {"step_ms", &F::step_ms},
      {"compute_ms", &F::compute_ms},
      {"dataload_ms", &F::dataload_ms},
      {"comm_ms", &F::comm_ms},
      {"exposed_comm_ms", &F::exposed_comm_ms},
      {"allreduce_ms", &F::allreduce_ms},
      {"collectives", &F::collectives},
      {"allreduce_bytes", &F::allreduce_bytes},
  };
  return *c;
}

// A JSON number or null as an optional; absent or another type: nullopt.
std::optional<double> NumberOf(const rapidjson::Value& o, const char* key) {
  const auto it = o.FindMember(key);
  if (it == o.MemberEnd() || !it->value.IsNumber()) return std::nullopt;
  return it->value.GetDouble();
}

std::string StringOf(const rapidjson::Value& o, const char* key) {
  const auto it = o.FindMember(key);
  return it != o.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

}  // namespace

absl::StatusOr<RanksView> RanksViewFromJson(std::string_view json) {
  const rapidjson::Document d = JsonOrNull(json);
  const auto not_ranks = [] {
    return absl::DataLossError("the profile's `ranks` is not a cross-rank object");
  };
  if (!d.IsObject()) return not_ranks();
  const auto ranks = d.FindMember("ranks");
  if (ranks == d.MemberEnd() || !ranks->value.IsArray()) return not_ranks();
  RanksView v;
  v.source = StringOf(d, "source");
  CrossRankResult& r = v.result;
  r.backend = StringOf(d, "backend");
  r.world_size = static_cast<int64_t>(NumberOf(d, "world_size").value_or(0));
  r.windowed = StringOf(d, "figures_per") == "window";  // absent (written before): per step
  v.threads = static_cast<int>(NumberOf(d, "threads").value_or(0));
  for (const rapidjson::Value& row : ranks->value.GetArray()) {
    if (!row.IsObject()) return absl::DataLossError("a row of the profile's `ranks` is no object");
    RankFigures f;
    f.info.rank = static_cast<int64_t>(NumberOf(row, "rank").value_or(-1));
    f.info.world_size = r.world_size;
    f.info.backend = r.backend;
    f.path = StringOf(row, "trace");
    for (const RankColumn& c : RankColumns()) {
      const std::optional<double> x = NumberOf(row, c.name);
      std::visit(
          [&](auto field) {
            auto& dst = f.*field;
            using V = std::decay_t<decltype(dst)>;
            if constexpr (std::is_same_v<V, std::optional<double>>) {
              dst = x;
            } else {
              dst = static_cast<V>(x.value_or(0));
            }
          },
          c.field);
    }
    f.gpu_comm = StringOf(row, "comm_timed_on") == kGpuComm;
    f.windowed = r.windowed;
    r.ranks.push_back(std::move(f));
  }
  for (const CrossRankMetric& m : CrossRankMetrics()) m.Set(r, NumberOf(d, m.name));
  r.verdict = StringOf(d, "verdict");
  if (const auto l = d.FindMember("levers"); l != d.MemberEnd() && l->value.IsArray()) {
    for (const rapidjson::Value& x : l->value.GetArray()) {
      if (x.IsString()) r.levers.push_back(x.GetString());
    }
  }
  // Absent in profiles written before issue 40: every rank present, the checks not run.
  if (const auto m = d.FindMember("missing_ranks"); m != d.MemberEnd() && m->value.IsArray()) {
    for (const rapidjson::Value& x : m->value.GetArray()) {
      if (x.IsInt64()) r.missing_ranks.push_back(x.GetInt64());
    }
  }
  if (const auto t = d.FindMember("trust"); t != d.MemberEnd() && t->value.IsObject()) {
    r.confidence = StringOf(t->value, "confidence");
    const auto reasons = t->value.FindMember("reasons");
    if (reasons != t->value.MemberEnd() && reasons->value.IsArray()) {
      for (const rapidjson::Value& x : reasons->value.GetArray()) {
        if (x.IsString()) r.trust_reasons.push_back(x.GetString());
      }
    }
    const auto checks = t->value.FindMember("checks");
    if (checks != t->value.MemberEnd() && checks->value.IsArray()) {
      for (const rapidjson::Value& c : checks->value.GetArray()) {
        if (!c.IsObject()) continue;
        r.trust_checks.push_back(
            {StringOf(c, "name"), StringOf(c, "outcome"), StringOf(c, "evidence")});
      }
    }
  }
  return v;
}

std::string RenderRanksJson(const RanksView& v) {
  const CrossRankResult& r = v.result;
  JsonWriter w;
  w.BeginObject()
      .Field("source", v.source)
      .Field("backend", r.backend)
      .Field("world_size", r.world_size)
      .Field("threads", static_cast<int64_t>(v.threads))
      .Field("figures_per", r.windowed ? "window" : "step");
  w.Key("ranks").BeginArray();
  for (const RankFigures& f : r.ranks) {
    w.BeginObject().Field("rank", f.info.rank).Field("trace", f.path);
    for (const RankColumn& c : RankColumns()) {
      std::visit([&](auto field) { w.Field(c.name, f.*field); }, c.field);
    }
    w.Field("comm_timed_on", f.gpu_comm ? kGpuComm : kCpuComm).EndObject();
  }
  w.EndArray();
  for (const CrossRankMetric& m : CrossRankMetrics()) {
    const std::optional<double> x = m.Value(r);
    if (m.integer) {
      w.Field(m.name, x ? std::optional<int64_t>(static_cast<int64_t>(*x)) : std::nullopt);
    } else {
      w.Field(m.name, x);
    }
  }
  w.Field("verdict", r.verdict);
  w.Key("levers").BeginArray();
  for (const std::string& l : r.levers) w.String(l);
  w.EndArray();
  w.Key("missing_ranks").BeginArray();
  for (int64_t k : r.missing_ranks) w.Int(k);
  w.EndArray().Key("partial").BeginArray();
  if (r.partial()) {
    for (const std::string& name : PartialFigures()) w.String(name);
  }
  w.EndArray();
  if (!r.trust_checks.empty()) {
    w.Key("trust").BeginObject().Field("confidence", r.confidence)
        .Field("line", TrustSummary(RanksAssessment(r))).Key("reasons").BeginArray();
    for (const std::string& reason : r.trust_reasons) w.String(reason);
    w.EndArray().Key("checks").BeginArray();
    for (const TrustCheck& c : r.trust_checks) {
      w.BeginObject().Field("name", c.name).Field("outcome", c.outcome)
          .Field("evidence", c.evidence).EndObject();
    }
    w.EndArray().EndObject();
  }
  w.EndObject();
  return w.Take();
}

}  // namespace libreyolo
