// ranks_analyse [--threads=N] DIR
//
// The cross-rank analysis of a folder of per-rank traces (common/readers/ranks_view.h) with the
// number of threads chosen (the CLI uses one per core), for the speed and peak-memory figures
// of bench/README.md: run it under /usr/bin/time -v with --threads=1 and --threads=N. Prints
// one JSON line: ranks, threads, seconds (steady clock), the straggler and its wait. Exit
// status 1 on an analysis error (the message on stderr), 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "common/readers/ranks_view.h"

int main(int argc, char** argv) {
  int threads = 0;
  const char* dir = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--threads=") && absl::SimpleAtoi(arg.substr(10), &threads)) continue;
    if (dir != nullptr || arg.starts_with("--")) {
      dir = nullptr;
      break;
    }
    dir = argv[i];
  }
  if (dir == nullptr) {
    std::fprintf(stderr, "usage: ranks_analyse [--threads=N] DIR\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto v = libreyolo::BuildRanksView(dir, threads);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!v.ok()) {
    std::fprintf(stderr, "ranks_analyse: %s\n", std::string(v.status().message()).c_str());
    return 1;
  }
  const libreyolo::CrossRankResult& r = v->result;
  std::printf(
      "{\"ranks\": %lld, \"threads\": %d, \"seconds\": %.3f, \"straggler\": %lld, "
      "\"collective_wait_ms\": %.3f}\n",
      static_cast<long long>(r.world_size), v->threads, s,
      static_cast<long long>(r.straggler.value_or(-1)), r.collective_wait_ms.value_or(-1));
  return 0;
}
