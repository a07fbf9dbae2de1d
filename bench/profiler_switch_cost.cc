// profiler_switch_cost: what each of the profiler's costly switches (record_shapes,
// profile_memory, with_flops) adds to a LibreYOLO9 forward on this machine, the measurement
// behind their fixed defaults (server/engine/job/overhead_budget.h, kDefault*).
//
// One process, interleaved: every round runs, in a rotating order, a short block of forwards
// for each configuration (no profiler; the bare profiler with all three off; each switch alone;
// all three but one; all three; the bare profiler and all three with module scopes; our native
// RecordFunction op collector, server/engine/collect/op_collector.h, bare, with shapes and with
// all three; an empty RecordFunction callback pair without and with inputs, the floor of any
// collector on RecordFunction), so that load from other processes falls on every
// configuration alike, which separate runs of libreyolo-engine on a shared machine cannot
// promise. Prints per
// configuration the median forward, the median added over no profiler and over the bare
// profiler, and then each switch's cost alone (over bare) and within all three (all three minus
// all but it: what --no-<switch> saves), for LibTorch's profiler and for our collector.
// --cpu-time 1 times the calling thread's CPU time instead of wall time: with --threads 1 the
// whole forward, and the profiler's bookkeeping, runs on that thread, and its CPU time does not
// count the time spent waiting for a core, so a loaded machine still gives clean numbers.
//
//   profiler_switch_cost [--weights PATH] [--imgsz 320] [--threads 2] [--rounds 12] [--block 3]
//                        [--cpu-time 0|1] [--only "NAME,NAME"]  (a subset, e.g. for perf record:
//                        the per-configuration table only)
#include <ATen/record_function.h>
#include <time.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "server/engine/collect/op_collector.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/job/model_loader.h"
#include "server/engine/job/overhead_budget.h"
#include "server/engine/model/module_scope.h"
#include "server/engine/runtime/runtime_info.h"

namespace {

using libreyolo::engine::TorchProfiler;
using libreyolo::engine::TorchProfilerOptions;
using Clock = std::chrono::steady_clock;

double ThreadCpuMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Config {
  std::string name;
  bool profiled = false;
  TorchProfilerOptions options;
  bool modules = false;  // module scopes (--with-modules) on for this configuration
  bool ours = false;     // our op collector instead of LibTorch's profiler
  // The floor of any RecordFunction collector: an empty callback pair (no ObserverContext),
  // with or without the inputs boxed for it (options.record_shapes).
  bool floor = false;
};

std::unique_ptr<at::ObserverContext> EmptyStart(const at::RecordFunction&) { return nullptr; }
void EmptyEnd(const at::RecordFunction&, at::ObserverContext*) {}

std::vector<Config> Configs() {
  auto with = [](const std::string& name, bool s, bool m, bool f) {
    Config c{name, true, {}};
    c.options.record_shapes = s;
    c.options.profile_memory = m;
    c.options.with_flops = f;
    c.options.cuda = false;
    return c;
  };
  return {
      Config{"no profiler", false, {}},          with("bare (all off)", false, false, false),
      with("record_shapes", true, false, false), with("profile_memory", false, true, false),
      with("with_flops", false, false, true),    with("all but shapes", false, true, true),
      with("all but memory", true, false, true), with("all but flops", true, true, false),
      with("all three", true, true, true),
      // Module scopes: what the named ranges add, bare and with everything on.
      Config{"bare + modules", true, with("", false, false, false).options, true},
      Config{"all + modules", true, with("", true, true, true).options, true},
      // Our collector (issue 13): ops and ranges, then with shapes (options.record_shapes).
      Config{"ours (ops)", true, with("", false, false, false).options, false, true},
      Config{"ours + shapes", true, with("", true, false, false).options, false, true},
      Config{"ours all three", true, with("", true, true, true).options, false, true},
      // Each switch within all three on our collector, the default (issue 36, section 4: what
      // a job's probe measures for it, and what --no-<switch> saves).
      Config{"ours all but shapes", true, with("", false, true, true).options, false, true},
      Config{"ours all but memory", true, with("", true, false, true).options, false, true},
      Config{"ours all but flops", true, with("", true, true, false).options, false, true},
      Config{"callback floor", true, with("", false, false, false).options, false, false, true},
      Config{"floor + inputs", true, with("", true, false, false).options, false, false, true},
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::string weights = "/work/shared/fixtures/models/libreyolo9t_seed1234.pt";
  int64_t imgsz = 320, threads = 2, rounds = 12, block = 3, cpu_time = 0;
  std::string only;  // --only "ours + shapes,no profiler": just these configurations (perf runs)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    int64_t n = 0;
    if (flag == "--weights") {
      weights = value;
      continue;
    }
    if (flag == "--only") {
      only = value;
      continue;
    }
    if (!absl::SimpleAtoi(value, &n) || n < 0) {
      std::cerr << "bad value for " << flag << ": " << value << "\n";
      return 2;
    }
    if (flag == "--imgsz") {
      imgsz = n;
    } else if (flag == "--threads") {
      threads = n;
    } else if (flag == "--rounds") {
      rounds = n;
    } else if (flag == "--block") {
      block = n;
    } else if (flag == "--cpu-time") {
      cpu_time = n;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  const auto t = libreyolo::engine::ConfigureThreads(static_cast<int>(threads));
  auto loaded = libreyolo::engine::LoadModel(weights, "t", 0);
  if (!loaded.ok()) {
    std::cerr << loaded.status() << "\n";
    return 1;
  }
  loaded->model->eval();
  torch::InferenceMode guard;
  const torch::Tensor x = torch::rand({1, 3, imgsz, imgsz});
  for (int i = 0; i < 3; ++i) loaded->model->predict(x);

  // Ops and ranges one forward records: the per-op figures below divide by it.
  int64_t records_per_forward = 0;
  {
    auto counting = libreyolo::engine::OpCollector::Start({});
    if (!counting.ok()) {
      std::cerr << counting.status() << "\n";
      return 1;
    }
    loaded->model->predict(x);
    auto counted = (*counting)->Stop();
    if (!counted.ok()) {
      std::cerr << counted.status() << "\n";
      return 1;
    }
    records_per_forward = static_cast<int64_t>(counted->events.size());
  }
  std::vector<Config> configs = Configs();
  if (!only.empty()) {
    const std::vector<std::string> wanted = absl::StrSplit(only, ',');
    std::erase_if(configs, [&](const Config& c) {
      return std::find(wanted.begin(), wanted.end(), c.name) == wanted.end();
    });
    if (configs.empty()) {
      std::cerr << "--only: no configuration named " << only << "\n";
      return 2;
    }
  }
  std::map<std::string, std::vector<double>> ms;
  for (int64_t r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < configs.size(); ++k) {
      const Config& c = configs[(k + static_cast<size_t>(r)) % configs.size()];
      std::optional<libreyolo::engine::ModuleScopes> scopes;
      if (c.modules) scopes.emplace(*loaded->model);
      std::unique_ptr<TorchProfiler> session;
      std::unique_ptr<libreyolo::engine::OpCollector> ours;
      std::optional<at::CallbackHandle> floor;
      if (c.floor) {
        at::RecordFunctionCallback cb(&EmptyStart, &EmptyEnd);
        cb.needsInputs(c.options.record_shapes)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                     at::RecordScope::USER_SCOPE});
        floor = at::addThreadLocalCallback(cb);
      } else if (c.ours) {
        libreyolo::engine::OpCollectorOptions oo;
        oo.record_shapes = c.options.record_shapes;
        oo.profile_memory = c.options.profile_memory;
        // FLOPs only with shapes, as a job's session counts them (profiling_session.cc).
        oo.with_flops = c.options.with_flops && c.options.record_shapes;
        auto started = libreyolo::engine::OpCollector::Start(oo);
        if (!started.ok()) {
          std::cerr << started.status() << "\n";
          return 1;
        }
        ours = *std::move(started);
      } else if (c.profiled) {
        auto started = TorchProfiler::Start(c.options);
        if (!started.ok()) {
          std::cerr << started.status() << "\n";
          return 1;
        }
        session = *std::move(started);
      }
      for (int64_t i = 0; i < block; ++i) {
        const auto t0 = Clock::now();
        const double c0 = ThreadCpuMs();
        loaded->model->predict(x);
        ms[c.name].push_back(
            cpu_time != 0 ? ThreadCpuMs() - c0
                          : std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      if (floor) at::removeCallback(*floor);
    }
  }
  const double none = libreyolo::engine::MedianMs(ms["no profiler"]);
  const double bare = libreyolo::engine::MedianMs(ms["bare (all off)"]);
  std::cout << absl::StrFormat(
      "# LibreYOLO9t forward, %dx%d, threads %d (blas %s, blas_threads %s, OMP_WAIT_POLICY %s); "
      "%d rounds x %d forwards per configuration, interleaved; %s\n",
      imgsz, imgsz, t.threads, t.blas, t.blas_threads ? std::to_string(*t.blas_threads) : "-",
      t.omp_wait_policy, rounds, block, cpu_time != 0 ? "calling thread's CPU time" : "wall time");
  std::cout << absl::StrFormat("%-16s %10s %12s %8s %14s\n", "configuration", "median ms",
                               "+ms vs none", "+%", "+ms vs bare");
  for (const Config& c : configs) {
    const double m = libreyolo::engine::MedianMs(ms[c.name]);
    std::cout << absl::StrFormat("%-16s %10.2f %12.2f %7.1f%% %14s\n", c.name, m, m - none,
                                 100.0 * (m - none) / none,
                                 c.profiled ? absl::StrFormat("%.2f", m - bare) : "-");
  }
  if (!only.empty()) return 0;  // the comparisons below need every configuration
  const double all = libreyolo::engine::MedianMs(ms["all three"]);
  std::cout << absl::StrFormat("%-16s %14s %18s\n", "switch", "alone +ms", "within all +ms");
  for (const auto& [name, without] :
       std::vector<std::pair<std::string, std::string>>{{"record_shapes", "all but shapes"},
                                                        {"profile_memory", "all but memory"},
                                                        {"with_flops", "all but flops"}}) {
    std::cout << absl::StrFormat("%-16s %14.2f %18.2f\n", name,
                                 libreyolo::engine::MedianMs(ms[name]) - bare,
                                 all - libreyolo::engine::MedianMs(ms[without]));
  }
  // Our collector (the default): what each switch adds within all three, in ms and in % of the
  // forward without a profiler: what --no-<switch> saves a default job.
  const double ours_all = libreyolo::engine::MedianMs(ms["ours all three"]);
  for (const auto& [name, without] : std::vector<std::pair<std::string, std::string>>{
           {"record_shapes", "ours all but shapes"},
           {"profile_memory", "ours all but memory"},
           {"with_flops", "ours all but flops"}}) {
    const double saved = ours_all - libreyolo::engine::MedianMs(ms[without]);
    std::cout << absl::StrFormat("%-16s %14s %18.2f   (ours, within all three: %.1f%% of none)\n",
                                 name, "-", saved, 100.0 * saved / none);
  }
  std::cout << absl::StrFormat("%-16s %14.2f %18.2f\n", "with_modules",
                               libreyolo::engine::MedianMs(ms["bare + modules"]) - bare,
                               libreyolo::engine::MedianMs(ms["all + modules"]) - all);
  // Side by side: our collector against LibTorch's profiler doing the same (ops; ops + shapes).
  // The floor: what RecordFunction itself costs with one empty callback (inputs boxed for the
  // shapes column), below which no collector on it can go.
  auto added = [&](const std::string& name) { return libreyolo::engine::MedianMs(ms[name]) - none; };
  std::cout << absl::StrFormat("%-16s %14s %18s %16s\n", "collector", "ops +ms", "ops+shapes +ms",
                               "all three +ms");
  std::cout << absl::StrFormat("%-16s %14.2f %18.2f %16.2f\n", "libtorch", bare - none,
                               added("record_shapes"), all - none);
  std::cout << absl::StrFormat("%-16s %14.2f %18.2f %16.2f\n", "ours", added("ours (ops)"),
                               added("ours + shapes"), added("ours all three"));
  std::cout << absl::StrFormat("%-16s %14.2f %18.2f %16s\n", "callback floor",
                               added("callback floor"), added("floor + inputs"), "-");
  const double per_op_us = 1e3 / static_cast<double>(std::max<int64_t>(1, records_per_forward));
  std::cout << absl::StrFormat("%-16s %14.3f %18.3f %16.3f   (us per record, %d records a forward)\n",
                               "ours per record", added("ours (ops)") * per_op_us,
                               added("ours + shapes") * per_op_us,
                               added("ours all three") * per_op_us, records_per_forward);
  std::cout << absl::StrFormat("%-16s %14.3f %18.3f %16.3f\n", "libtorch per rec",
                               (bare - none) * per_op_us, added("record_shapes") * per_op_us,
                               (all - none) * per_op_us);
  std::cout << absl::StrFormat("%-16s %14.2f %18.2f %16.2f\n", "ours / libtorch",
                               added("ours (ops)") / (bare - none),
                               added("ours + shapes") / added("record_shapes"),
                               added("ours all three") / (all - none));
  return 0;
}
