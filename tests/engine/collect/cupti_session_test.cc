// Two CUPTI collections in one process (issue 23 item 10), on recorded activity: the kernels and
// runtime calls of a real training rank (trace_filter.json.gz, from HTA's test data) replayed
// as CUPTI's records, twice, as a daemon's worker records two identical jobs. Each collection
// must take exactly its own records (not a late buffer of the one before, not the buffers
// completed between them) and convert its times with its own clock samples, so the second job's
// kernels land where the first's do.
#include "server/engine/collect/cupti_session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "common/trace/trace_reader.h"
#include "server/engine/collect/cupti_convert.h"
#include "tests/engine/collect/cupti_test_records.h"

namespace libreyolo::engine {
namespace {

uint32_t AfterSlash(const std::string& thread) {
  const size_t slash = thread.rfind('/');
  uint32_t v = 0;
  const std::string tail = slash == std::string::npos ? thread : thread.substr(slash + 1);
  std::from_chars(tail.data(), tail.data() + tail.size(), v);
  return v;
}

// The recorded rank as CUPTI would have delivered it, `ahead_ns` ahead of the CPU clock.
CuptiRecords RecordedRank(const TraceData& t, int64_t ahead_ns) {
  CuptiRecords r;
  for (const TraceEvent& e : t.events) {
    const std::string& thread = t.strings.Get(e.thread);
    const uint32_t correlation = e.correlation == kNoId ? 0 : static_cast<uint32_t>(e.correlation);
    const auto start = static_cast<uint64_t>(e.ts_ns + ahead_ns);
    const auto end = static_cast<uint64_t>(e.ts_ns + e.dur_ns + ahead_ns);
    if (e.cls == EventClass::kKernel) {
      CuptiKernelRecord k =
          testing_records::Kernel(t.strings.Get(e.name), start, end, correlation);
      k.stream = AfterSlash(thread);
      r.kernels.push_back(k);
    } else if (e.cls == EventClass::kRuntime) {
      r.api_calls.push_back(testing_records::Api(CuptiApiDomain::kRuntime, 211, start, end,
                                                 AfterSlash(thread), correlation));
    }
  }
  r.devices.push_back(testing_records::Device());
  return r;
}

// Five back-to-back samples around `cpu_ns` with CUPTI `ahead_ns` ahead, as SampleClocks takes.
std::vector<ClockSample> Samples(int64_t cpu_ns, int64_t ahead_ns) {
  std::vector<ClockSample> s;
  for (int i = 0; i < 5; ++i) {
    const int64_t c = cpu_ns + i * 100;
    s.push_back({c, c + 20 + ahead_ns, c + 40});
  }
  return s;
}

// Kernel start times in the CPU clock after the merge, sorted.
std::vector<int64_t> KernelStarts(CollectedTrace gpu) {
  CollectedTrace cpu;
  MergeGpuActivity(cpu, std::move(gpu));
  std::vector<int64_t> starts;
  for (const CollectedEvent& e : cpu.events) {
    if (e.kind == CollectedKind::kKernel) starts.push_back(e.start_ns);
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

// Splits records into two buffers at `at` (the second holds the tail of every kind).
std::pair<CuptiRecords, CuptiRecords> Split(CuptiRecords all, double at) {
  CuptiRecords head, tail;
  const auto cut = [at](auto& from, auto& a, auto& b) {
    const size_t n = static_cast<size_t>(static_cast<double>(from.size()) * at);
    a.assign(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n));
    b.assign(from.begin() + static_cast<std::ptrdiff_t>(n), from.end());
  };
  cut(all.kernels, head.kernels, tail.kernels);
  cut(all.api_calls, head.api_calls, tail.api_calls);
  head.devices = all.devices;
  return {head, tail};
}

TEST(CuptiSessions, TwoJobsInOneWorkerEachGetTheirOwnRecordsAndClock) {
  auto trace = ReadTraceFile(std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/trace_filter.json.gz");
  ASSERT_TRUE(trace.ok()) << trace.status();
  const int64_t first = trace->min_ts_ns, last = trace->max_end_ns;
  std::vector<int64_t> recorded;
  for (const TraceEvent& e : trace->events) {
    if (e.cls == EventClass::kKernel) recorded.push_back(e.ts_ns);
  }
  std::sort(recorded.begin(), recorded.end());
  ASSERT_EQ(recorded.size(), 1154u);  // the fixture's README

  CuptiSessionSink sink;
  // Job 1: CUPTI's clock 3 s ahead of the CPU's; its records arrive in two buffers, the second
  // of which completes only after job 1 stopped (CUPTI's flush is asynchronous at the edges).
  constexpr int64_t kAhead1 = 3'000'000'000;
  auto [head1, tail1] = Split(RecordedRank(*trace, kAhead1), 0.8);
  sink.Open(Samples(first - 1'000'000, kAhead1));
  sink.Deliver(head1);
  const CuptiSessionRecords job1 = sink.Close(Samples(last + 1'000'000, kAhead1));
  EXPECT_EQ(job1.ordinal, 1u);
  EXPECT_EQ(job1.stale, 0u);
  EXPECT_EQ(job1.records.kernels.size(), head1.kernels.size());

  // Between the jobs a buffer of job 1 completes: nobody's.
  auto [late_a, late_b] = Split(tail1, 0.5);
  sink.Deliver(late_a);
  EXPECT_FALSE(sink.open());

  // Job 2 replays the same work 40 s later, and the CPU clock was stepped in between (NTP):
  // CUPTI is now 3 s + 37 s ahead. Job 1's last buffer arrives while job 2 records.
  constexpr int64_t kLater = 40'000'000'000, kAhead2 = kAhead1 + 37'000'000'000;
  TraceData shifted = *trace;
  for (TraceEvent& e : shifted.events) e.ts_ns += kLater;
  sink.Open(Samples(first + kLater - 1'000'000, kAhead2));
  sink.Deliver(late_b);  // job 1's: began long before job 2 opened
  sink.Deliver(RecordedRank(shifted, kAhead2));
  const CuptiSessionRecords job2 = sink.Close(Samples(last + kLater + 1'000'000, kAhead2));

  EXPECT_EQ(job2.ordinal, 2u);
  EXPECT_EQ(job2.discarded, late_a.kernels.size() + late_a.api_calls.size());
  EXPECT_EQ(job2.stale, late_b.kernels.size() + late_b.api_calls.size());
  EXPECT_EQ(job2.records.kernels.size(), 1154u);  // its own, all of them, nothing of job 1
  EXPECT_EQ(job2.records.api_calls.size(),
            head1.api_calls.size() + tail1.api_calls.size());
  EXPECT_EQ(job2.records.devices.size(), 1u);

  // Each converts on its own clock: job 2's kernels are the recorded ones, 40 s on, exactly.
  const CollectedTrace t2 = ConvertCuptiSession(job2, testing_records::NameTable());
  ASSERT_EQ(t2.notes.size(), 1u);
  EXPECT_EQ(t2.notes[0], "CUPTI: " + std::to_string(job2.stale) +
                             " records of an earlier collection in this process arrived late "
                             "and were left out");
  std::vector<int64_t> expected2 = recorded;
  for (int64_t& ts : expected2) ts += kLater;
  EXPECT_EQ(KernelStarts(t2), expected2);
  // Job 1 kept its own conversion too (its first 80 %).
  const std::vector<int64_t> starts1 =
      KernelStarts(ConvertCuptiSession(job1, testing_records::NameTable()));
  ASSERT_EQ(starts1.size(), head1.kernels.size());
  for (size_t i = 0; i < starts1.size(); ++i) {
    EXPECT_TRUE(std::binary_search(recorded.begin(), recorded.end(), starts1[i])) << i;
  }
  // One clock for both (the mistake this guards against) would put job 2 37 s off.
  CuptiSessionRecords wrong = job2;
  wrong.clock_samples = job1.clock_samples;
  EXPECT_EQ(KernelStarts(ConvertCuptiSession(wrong, testing_records::NameTable())).front(),
            expected2.front() + 37'000'000'000);
}

TEST(CuptiSessions, ACollectionStartsEmptyWhateverWasLeft) {
  CuptiSessionSink sink;
  CuptiRecords r;
  r.kernels.push_back(testing_records::Kernel("k", 100, 200, 1));
  sink.Deliver(r);  // before any collection
  sink.Open({{0, 50, 10}});
  sink.Deliver(r);  // began at 100 >= 50: this collection's
  CuptiSessionRecords a = sink.Close({});
  EXPECT_EQ(a.discarded, 1u);
  EXPECT_EQ(a.records.kernels.size(), 1u);
  sink.Open({{0, 150, 10}});
  const CuptiSessionRecords b = sink.Close({});  // nothing delivered: nothing carried over
  EXPECT_TRUE(b.records.kernels.empty());
  EXPECT_EQ(b.stale, 0u);
  EXPECT_EQ(b.clock_samples.size(), 1u);
  EXPECT_TRUE(ConvertCuptiSession(b, testing_records::NameTable()).notes.empty());
}

}  // namespace
}  // namespace libreyolo::engine
