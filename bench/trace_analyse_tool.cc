// trace_analyse [--parser=simdjson|rapidjson] [--parse-only] TRACE
// trace_analyse --inflate-only TRACE
//
// The trace analyser as a library call, with the parser chosen: bench/trace_bench.py runs it
// with --parser=rapidjson as "old" (the RapidJSON SAX reader the analyser used before simdjson)
// next to "ours" (the CLI, simdjson). Times its own phases (steady clock) and prints one JSON
// line: real_steps, the parse counters, read_s (parse + inflate) and analyse_s. --inflate-only
// only reads the file through the reader's inflater (igzip for gzip, read(2) otherwise): the
// floor for a .json.gz. Exit status 1 on a read error (the message on stderr), 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include <vector>

#include "common/analysis/trace_analyser.h"
#include "common/io/block_reader.h"
#include "common/trace/trace_reader.h"

int main(int argc, char** argv) {
  using libreyolo::TraceParser;
  TraceParser parser = TraceParser::kSimdjson;
  bool parse_only = false;
  bool inflate_only = false;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--parser=simdjson") {
      parser = TraceParser::kSimdjson;
    } else if (arg == "--parser=rapidjson") {
      parser = TraceParser::kRapidJson;
    } else if (arg == "--inflate-only") {
      inflate_only = true;
    } else if (arg == "--parse-only") {
      parse_only = true;
    } else if (path == nullptr && !arg.starts_with("--")) {
      path = argv[i];
    } else {
      path = nullptr;
      break;
    }
  }
  if (path == nullptr) {
    std::fprintf(stderr,
                 "usage: trace_analyse [--parser=simdjson|rapidjson] [--parse-only] TRACE\n"
                 "       trace_analyse --inflate-only TRACE\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (inflate_only) {
    auto reader = libreyolo::BlockReader::Open(path);
    if (!reader.ok()) {
      std::fprintf(stderr, "trace_analyse: %s\n", std::string(reader.status().message()).c_str());
      return 1;
    }
    std::vector<char> block(1 << 20);
    size_t total = 0;
    while (true) {
      auto n = (*reader)->Read(block.data(), block.size());
      if (!n.ok()) {
        std::fprintf(stderr, "trace_analyse: %s\n", std::string(n.status().message()).c_str());
        return 1;
      }
      if (*n == 0) break;
      total += *n;
    }
    std::printf("{\"inflated_bytes\": %zu, \"read_s\": %.6f}\n", total,
                std::chrono::duration<double>(Clock::now() - t0).count());
    return 0;
  }
  auto data = libreyolo::ReadTraceFile(path, parser);
  if (!data.ok()) {
    std::fprintf(stderr, "trace_analyse: %s\n", std::string(data.status().message()).c_str());
    return 1;
  }
  const auto t1 = Clock::now();
  const auto stats = data->stats;
  const size_t kept = data->events.size();
  long long steps = -1;
  if (!parse_only) {
    const libreyolo::Profile p = libreyolo::AnalyseTrace(*std::move(data));
    steps = p.real_steps.value_or(-1);
  }
  const auto t2 = Clock::now();
  const double read_s = std::chrono::duration<double>(t1 - t0).count();
  const double analyse_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("{\"parser\": \"%s\", \"real_steps\": %lld, \"events\": %lld, \"kept\": %zu, "
              "\"skipped\": %lld, \"read_s\": %.6f, \"analyse_s\": %.6f}\n",
              parser == TraceParser::kRapidJson ? "rapidjson" : "simdjson", steps,
              static_cast<long long>(stats.events), kept,
              static_cast<long long>(stats.skipped_events), read_s, analyse_s);
  return 0;
}
