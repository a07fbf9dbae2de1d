// trace_analyse [--parser=simdjson|rapidjson] [--parse-only] TRACE
//
// The trace analyser as a library call, with the parser chosen: bench/trace_bench.py runs it
// with --parser=rapidjson as "old" (the RapidJSON SAX reader the analyser used before simdjson)
// next to "ours" (the CLI, simdjson). Times its own phases (steady clock) and prints one JSON
// line: real_steps, the parse counters, read_s (parse + inflate) and analyse_s. Exit status 1 on
// a read error (the message on stderr), 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "common/trace/trace_analyser.h"
#include "common/trace/trace_reader.h"

int main(int argc, char** argv) {
  using libreyolo::TraceParser;
  TraceParser parser = TraceParser::kSimdjson;
  bool parse_only = false;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--parser=simdjson") {
      parser = TraceParser::kSimdjson;
    } else if (arg == "--parser=rapidjson") {
      parser = TraceParser::kRapidJson;
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
                 "usage: trace_analyse [--parser=simdjson|rapidjson] [--parse-only] TRACE\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
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
