// The simdjson reader against the RapidJSON reader it replaced: the same TraceData (every event,
// string id, counter and the device) and the same errors, on the fixture traces and on inputs
// made to hit every cut the streaming splitter makes (blocks and batches of a few bytes), and
// the igzip inflater against zlib's (members, truncation, trailing bytes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/io/block_reader.h"
#include "common/io/file_reader.h"
#include "common/trace/trace_reader.h"
#include "common/trace/trace_reader_internal.h"
#include "tests/support/test_files.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;

void ExpectSameData(const TraceData& a, const TraceData& b, const std::string& what) {
  std::string why;
  EXPECT_TRUE(SameTraceData(a, b, &why)) << what << ": " << why;
}

// Both readers on `json`, with the splitter's blocks and batches at many sizes. `simd_decides`:
// simdjson must accept the input itself (no fallback to RapidJSON).
void ExpectParity(const std::string& json, bool simd_decides) {
  const auto reference = ReadTraceText(json, TraceParser::kRapidJson);
  for (size_t block : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, size_t{1} << 20}) {
    for (size_t batch : {size_t{1}, size_t{40}, size_t{1} << 20}) {
      const std::string what = absl::StrCat("block ", block, ", batch ", batch, ": ",
                                            json.substr(0, 120));
      // Every other combination with batches walked on two threads besides this one.
      const int workers = (block + batch) % 2 == 0 ? 2 : 0;
      auto simd = internal::ReadTraceTextSimdjson(json, block, batch, nullptr, workers);
      if (simd_decides) {
        ASSERT_TRUE(simd.has_value()) << what << ": simdjson left it to RapidJSON";
      }
      const auto got = simd.has_value() ? *std::move(simd) : ReadTraceText(json);
      ASSERT_EQ(got.ok(), reference.ok()) << what << ": " << got.status() << " vs "
                                          << reference.status();
      if (!got.ok()) {
        EXPECT_EQ(got.status(), reference.status()) << what;
        continue;
      }
      ExpectSameData(*got, *reference, what);
    }
  }
  // The public entry point too.
  const auto got = ReadTraceText(json);
  ASSERT_EQ(got.ok(), reference.ok());
  if (got.ok()) ExpectSameData(*got, *reference, "ReadTraceText");
}

std::string Fixture(const std::string& name) {
  return std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/" + name;
}

TEST(TraceReaderParity, FixtureTracesReadTheSame) {
  for (const char* name : {"alexnet.json.gz", "amd_trace.json.gz", "cpu_only.json.gz",
                           "cupti_profiler.json.gz", "simple_add.json.gz",
                           "trace_filter.json.gz", "synthetic_async.json"}) {
    const std::string path = Fixture(name);
    auto simd = ReadTraceFile(path);
    auto rapid = ReadTraceFile(path, TraceParser::kRapidJson);
    ASSERT_TRUE(simd.ok()) << name << ": " << simd.status();
    ASSERT_TRUE(rapid.ok()) << name << ": " << rapid.status();
    ExpectSameData(*simd, *rapid, name);
    // ... and simdjson decided it itself, also cut in small blocks and batches.
    auto text = ReadWholeFile(path);
    ASSERT_TRUE(text.ok());
    for (size_t block : {size_t{4093}, size_t{1} << 20}) {
      auto small = internal::ReadTraceTextSimdjson(*text, block, 1000);
      ASSERT_TRUE(small.has_value()) << name << ": simdjson left it to RapidJSON";
      ASSERT_TRUE(small->ok()) << small->status();
      ExpectSameData(**small, *rapid, absl::StrCat(name, " in blocks of ", block));
    }
  }
}

TEST(TraceReaderParity, NumbersBeyondInt64) {
  ExpectParity(
      R"({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5,
         "pid": 18446744073709551615, "tid": 123456789012345678901234567890,
         "args": {"correlation": 9223372036854775808, "flops": 1e300}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 9, "dur": 1,
         "pid": -9223372036854775809, "tid": -0, "args": {"correlation": -9223372036854775808}},
        {"ph": "X", "cat": "cpu_op", "name": "op", "ts": 1.5e3, "dur": 2.25, "pid": 1.5,
         "tid": "7", "args": {"correlation": 1e19, "flops": 12}},
        {"ph": "i", "name": "[memory]", "ts": 3, "pid": 1, "tid": 1,
         "args": {"Bytes": 18446744073709551616, "Total Allocated": 9007199254740993,
                  "Device Type": 1}}]})",
      true);
}

// Numbers whose nearest double takes more than a fast path: fractions of 17-20 significant
// digits (timestamps in microseconds since the epoch, with nanoseconds), halfway cases, integers
// beyond 64 bits (RapidJSON's default conversion was an ulp off for these; the fuzz target found
// a timestamp and a device's memory written with 120 digits), and timestamps at the bounds.
TEST(TraceReaderParity, NumbersThatNeedCorrectRounding) {
  ExpectParity(
      R"({"deviceProperties": [{"id": 1, "name": "d", "multiProcessorCount": 110,
          "totalGlobalMem": 68702699522222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222222220}],
        "traceEvents": []})",
      true);
  for (const char* event : {
           // The events' walker declines at the exponent: simdjson's walk reads the event again.
           R"({"ph": "X", "cat": "cpu_op", "name": "f", "ts": 1682725897235145.250, "dur": 1,
               "pid": 1, "tid": 1e3})",
           R"({"ph": "X", "cat": "cpu_op", "name": "g", "ts": 1.682725897235145250e15, "dur": 1,
               "pid": 1, "tid": 1})",
           R"({"ph": "X", "cat": "cpu_op", "name": "h", "ts": 5.5, "dur": 1, "pid": 1,
               "tid": 18446744073729551615})",
           R"({"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1682725897235145.250, "dur": 0.125,
               "pid": 1, "tid": 18446744073729551615})",
           R"({"ph": "X", "cat": "cpu_op", "name": "b", "ts": 1682725897235140.125, "dur": 1,
               "pid": 1, "tid": 1})",
           R"({"ph": "X", "cat": "cpu_op", "name": "c", "ts": 9007199254740993.0000001, "dur": 1,
               "pid": 1, "tid": 1})",
           R"({"ph": "X", "cat": "cpu_op", "name": "d", "ts": 123456789012345678901234567890,
               "dur": 1, "pid": 1, "tid": 1})",
           R"({"ph": "X", "cat": "cpu_op", "name": "e", "ts": 0.30000000000000001665,
               "dur": 2.5e-7, "pid": 1, "tid": 1})",
           R"({"ph": "i", "name": "[memory]", "ts": 7.00000000000000088817841970012523,
               "pid": 1, "tid": 1, "args": {"Bytes": 12345678901234567890123,
               "Total Allocated": 1.5}})"}) {
    SCOPED_TRACE(event);
    ExpectParity(absl::StrCat(R"({"traceEvents": [)", event, "]}"), true);
  }
  // What the fuzz target kept (its cuts are from its size, so the list runs at every cut).
  ExpectParity(
      R"({"traceEvents":[{"":{"":[[]],"":7,"":2},"":5,"":1,"":3,"":"","":1,"":1,"":1,"":{"":9,"":{"":5},"":[[{"":1}],[],true,null]},"":{"":[[],0.5,"",false]}},{"ph":"X","cat":"cpu_op","":"","ts":1682725897235140.125,"":"","id":18446744073729551615},{"":"","":"","":{"":1}},{"":"","":"","":8,"":0,"":1,"":1},[],"",{}]})",
      true);
}

TEST(TraceReaderParity, EscapesShapesStrayElementsAndLayout) {
  // Escaped keys and values, Input Dims of every JSON type, elements that are not objects,
  // two events lists, deviceProperties after the events, nested "traceEvents" that are not.
  ExpectParity(
      R"({"schemaVersion": 1, "nested": {"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}]},
          "traceEvents": [
            {"ph": "X", "c\u0061t": "cpu_op", "name": "a\"b\\c\u00e9\n", "ts": 1, "dur": 2,
             "pid": 1, "tid": 1,
             "args": {"Input Dims": [[1, 2], [], [[3]], {"k": [4, null]}, true, "s", 1.5, -0]}},
            1, "x", [1, [2]], null, {"ph": "X"}, {"ph": "X", "ts": "1"},
            {"ph": "X", "cat": "kernel", "name": "ProfilerStep#3", "ts": 0, "dur": 100,
             "ts": 2, "args": {}}
          ],
          "traceEvents": [{"ph": "s", "cat": "ac2g", "id": 5, "ts": 4, "pid": 1, "tid": 2}],
          "deviceProperties": [{"name": "AMD X", "totalGlobalMem": 1000000, "numSms": 80,
                                "id": 0}, {"name": "second"}],
          "traceName": "t,[]{}\""})",
      true);
  ExpectParity(R"([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}, 5])", true);
  ExpectParity("  [ ]  ", true);
  ExpectParity(R"({"traceEvents": [ ]})", true);
  ExpectParity(R"({"traceEvents": 5, "x": [1, 2]})", true);  // not a trace
}

TEST(TraceReaderParity, WhatSimdjsonRejectsIsRapidJsonsToDecide) {
  for (const char* json : {
           R"([1,,2])", R"([1,])", R"([,1])", R"({"traceEvents": [{"ph": "X"} {"ph": "X"}]})",
           R"({"traceEvents": [tru]})", R"({"traceEvents": [nul]})", "{\"traceEvents\": [\"a\x01\"]}",
           R"({"traceEvents": [{"ts": NaN}, {"ts": -Infinity}]})", "\xEF\xBB\xBF[]",
           R"({"traceEvents": []} x)", R"({"traceEvents": []}])", R"({"traceEvents": [}])",
           R"({"trace\u0045vents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}]})",
           R"({"traceEvents": [{"ph": "X", "ts": 1e400}]})", "[\"\xff\"]",
           R"({"traceEvents": [{"a": "\ud800"}]})", R"({"traceEvents": [})", "", "42",
           R"({"traceEvents": [{"ph": "X", "ts": 1)", R"({"a" 1, "traceEvents": []})",
           R"({"traceEvents": [[[[]]]]]})", R"({"traceEvents" [1]})", R"(["a)",
       }) {
    ExpectParity(json, false);
  }
}

// The splitter reads the events list 64 bytes at a time (quote, backslash and bracket masks;
// strings by a prefix XOR): quotes, escapes, runs of backslashes and brackets inside strings are
// put at every offset to a 64-byte boundary (and to the blocks' edges), with whitespace between
// an element and its comma; every element is a place to cut (batches of 1 and 40 bytes).
TEST(TraceReaderParity, StringsEscapesAndBracketsAtEvery64ByteOffset) {
  const std::string events =
      R"({"ph": "X", "cat": "cpu_op", "name": "a[{\"}]\\", "ts": 1, "dur": 2, "pid": 1,)"
      R"( "tid": 1, "args": {"Input Dims": [[1, 2], []], "k\\\"": "]]}}\\\\\\\"{["}}  ,)"
      "\n"
      R"(  {"ph": "X", "cat": "kernel", "name": "\\\\", "ts": 3, "dur": 1, "pid": 0,)"
      R"( "tid": 7, "args": {"correlation": 5, "grid": [1, [2, {"x": "\\"}], 3]}})"
      "\t\r\n,"
      R"({"ph": "X", "cat": "cuda_runtime", "name": "\"", "ts": 2, "dur": 1, "pid": 1,)"
      R"( "tid": 1, "args": {"correlation": 5}}, 7, "]", [], {})";
  for (size_t pad = 0; pad < 64; ++pad) {
    const std::string spaces(pad, ' ');
    ExpectParity(absl::StrCat("{\"traceEvents\": [", spaces, events, "], \"x\": 1}"), true);
    ExpectParity(absl::StrCat(spaces, "[", events, spaces, "]"), true);
  }
}

// After a cut (the comma dropped), what follows is still checked: an empty element or a
// trailing comma is RapidJSON's to report, wherever the cut falls.
TEST(TraceReaderParity, EmptyElementsAndTrailingCommasAfterACut) {
  for (size_t pad = 0; pad < 64; pad += 7) {
    const std::string spaces(pad, ' ');
    for (const std::string& json : {
             absl::StrCat("{\"traceEvents\": [{\"ph\": \"X\"}", spaces, ",", spaces, "]}"),
             absl::StrCat("{\"traceEvents\": [{\"ph\": \"X\"},", spaces, ", {}]}"),
             absl::StrCat("[[1],", spaces, "]"),
             absl::StrCat("[{\"a\": \"}\"}", spaces, "{}]"),
         }) {
      ExpectParity(json, false);
    }
  }
}

TEST(TraceReaderParity, DeepNestingIsStillRejectedWithItsMessage) {
  const std::string deep = "{\"traceEvents\": [" + std::string(300, '[') +
                           std::string(300, ']') + "]}";
  auto r = ReadTraceText(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("nested deeper than 256 levels"));
  ExpectParity(deep, false);
}

// --- the events' own walker (ElementWalker) ---------------------------------------------------

// Elements read by the events' own walker and declined by it, `json` read whole (one batch) or
// one element a batch; parity with RapidJSON at every cut (ExpectParity) besides.
internal::EventWalkCounts Walked(const std::string& json, size_t batch) {
  internal::EventWalkCounts counts;
  auto r = internal::ReadTraceTextSimdjson(json, size_t{1} << 20, batch, &counts);
  EXPECT_TRUE(r.has_value() && r->ok()) << json.substr(0, 120);
  return counts;
}

// Events as no exporter writes them, all read by the walker itself (nothing declined): keys in
// any order, kept keys twice (the last wins, or both count, as in RapidJSON's SAX order), kept
// keys of the wrong JSON type, kept key names inside unknown keys' objects and arrays, keys that
// are a kept key's prefix or extension, numbers of every kind the walker converts, whitespace of
// every kind, empty objects and lists.
TEST(TraceReaderParity, EventWalkerReadsUnusualEventsLikeRapidJson) {
  const std::string events = R"([
    {"args": {"Input Dims": [[1, 2]], "correlation": 7, "flops": 2.5}, "ts": 5, "tid": 2,
     "pid": 1, "name": "op", "dur": 3, "cat": "cpu_op", "ph": "X"},
    {"ph": "X", "cat": "kernel", "name": "k1", "ts": 1, "ts": 2, "dur": 1, "dur": 4,
     "name": "k2", "pid": 0, "tid": 7, "args": {"correlation": 1},
     "args": {"correlation": 2, "correlation": 3}},
    {"ph": "X", "cat": "cpu_op", "name": "dims twice", "ts": 3, "dur": 1, "pid": 1, "tid": 1,
     "args": {"Input Dims": [[1]], "Input Dims": [[2, 3], [], [[4]]]}},
    {"ph": "X", "cat": "cpu_op", "name": "nested unknowns", "ts": 4, "dur": 1, "pid": 1,
     "tid": 1, "x": {"ts": 99, "name": "no", "args": {"correlation": 5},
                     "y": [[{"dur": 1}], [], {}, "args"]},
     "args": {"z": {"Input Dims": [[9]], "flops": 4}, "correlation": 8, "w": [1, {"flops": 3}]},
     "tss": 1, "t": 2, "nam": "x", "argss": {"correlation": 6}, "Ph": "i"},
    {"ph": "X", "cat": "cpu_op", "name": "types", "ts": 5, "dur": 1, "pid": "1", "tid": 2.5,
     "args": {"correlation": "c", "flops": -1, "Input Dims": [true, false, null, "s", -0, 1.25,
              12345678901234567890, -9223372036854775808, 0.000001, 10.0]}},
    {"ph": "X", "cat": "cpu_op", "name": 5, "ts": 6, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "ts null", "ts": null, "dur": 1},
    {"ph": "X", "cat": ["cpu_op"], "name": "cat list", "ts": 7, "dur": 1},
    {"ph": {"a": 1}, "cat": "cpu_op", "name": "ph object", "ts": 8, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#12", "ts": 1682725897235145.250,
     "dur": 0.125, "pid": -3, "tid": 18446744073709551615},
    {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#13", "ts": -0, "dur": 0, "pid": -0,
     "tid": 9223372036854775807, "args": {"correlation": -9223372036854775807}},
    {"ph": "i", "name": "[memory]", "ts": 9, "pid": 1, "tid": 1,
     "args": {"Device Type": 1, "Bytes": -512, "Total Allocated": 9007199254740993,
              "Total Reserved": 1.5}},
    {"ph": "s", "cat": "ac2g", "id": 9223372036854775808, "ts": 10, "pid": 1, "tid": 1},
    {"ph":"X","cat":"gpu_memcpy","name":"ws","ts"	:
11 ,"dur"
:1,"pid":1,"tid":1,"args":{}}   ,
    {}, {"ph": "X", "cat": "cpu_op", "name": "empty args", "ts": 12, "dur": 1, "args": {},
         "args": [], "args": {"Input Dims": []}}
  ])";
  const std::string with_cr = absl::StrReplaceAll(events, {{"\n", "\r\n"}});
  const std::string object = absl::StrCat("{\"traceEvents\": ", events, "}");
  for (const std::string& json : {events, with_cr, object}) {
    ExpectParity(json, true);
    for (size_t batch : {size_t{1}, size_t{1} << 20}) {
      const internal::EventWalkCounts counts = Walked(json, batch);
      EXPECT_EQ(counts.walked, 16) << "batch " << batch;
      EXPECT_EQ(counts.declined, 0) << "batch " << batch;
    }
  }
}

// What the walker does not take (escapes, exponents, integers beyond 64 bits, elements that are
// not objects) it declines, after the handler has seen part of the event (and interned its Input
// Dims): simdjson walks the batch from that element, and the result is RapidJSON's.
TEST(TraceReaderParity, EventWalkerDeclinesMidEventAndSimdjsonTakesOver) {
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1,
     "args": {"Input Dims": [[1, 2]], "k": "esc\"aped"}},
    {"ph": "X", "cat": "cpu_op", "name": "b", "ts": 2, "dur": 1, "pid": 1, "tid": 1,
     "args": {"Input Dims": [[3]], "flops": 1e3}},
    {"ph": "X", "cat": "cpu_op", "n\u0061me": "c", "ts": 3, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "d", "ts": 4, "dur": 1, "pid": -9223372036854775809,
     "tid": 1},
    {"ph": "X", "cat": "cpu_op", "name": "e", "ts": 5, "dur": 1, "pid": 1, "tid": 1,
     "args": {"Input Dims": [[4, 5]]}},
    7, [1], "x",
    {"ph": "X", "cat": "cpu_op", "name": "f", "ts": 6.5, "dur": 1, "pid": 1, "tid": 1,
     "args": {"Input Dims": [[6]], "x": [1E2]}},
    {"ph": "X", "cat": "cpu_op", "name": "g", "ts": 7, "dur": 1, "pid": 1, "tid": 1,
     "args": {"Input Dims": [[7]], "flops": 12345678901234567890123}}]})";
  ExpectParity(json, true);
  // Batches end where an element ends with a bracket: a, b, c, d, e, [7, [1]], ["x", f], g.
  const internal::EventWalkCounts one = Walked(json, 1);
  EXPECT_EQ(one.walked, 1);  // e
  EXPECT_EQ(one.declined, 7);
  const internal::EventWalkCounts whole = Walked(json, size_t{1} << 20);
  EXPECT_EQ(whole.walked, 0);
  EXPECT_EQ(whole.declined, 1);  // the rest of the one batch went to simdjson
}

// Bad JSON inside events, where the walker reads: it declines, simdjson rejects, RapidJSON
// reports (the same error and offset).
TEST(TraceReaderParity, BadJsonInsideEventsIsStillRapidJsonsToReport) {
  for (const char* event : {
           R"({"ph": "X", "ts": tru})", R"({"ph": "X", "ts": 01})", R"({"ph": "X", "ts": 1.})",
           R"({"ph": "X", "ts": -})", R"({"ph": "X", "ts": 1,})", R"({"ph": "X" "ts": 1})",
           R"({"ph": "X", "ts" 1})", R"({"ph": "X", "args": {"a": [1 2]}})",
           R"({"ph": "X", "args": {"a": [1,]}})", "{\"ph\": \"X\", \"name\": \"a\x01\"}",
           R"({"ph": "X", 5: 1})", R"({"ph": "X", "x": nulll})", R"({"ph": "X", "x": falsey})",
           R"({"ph": "X", "ts": 1}})", R"({"ph": "X", "ts": 1]})", R"({"ph": "X", "ts": .5})",
           R"({"ph": "X", "ts": +5})", R"({"ph": "X", "ts": 1 2})", R"({"ph": "X", "x": [})",
           R"({"ph": "X", "ts": 5, "dur": 1e999})", R"({"ph": "X", "x": "\u12"})",
           // Zero with an exponent past 308: RapidJSON refuses it whatever its value (the fuzz
           // target's find: the walker had read it as 0 and accepted the trace).
           R"({"ph": "X", "args": {"memory bandwidth": 0E22535211267605634}})",
           R"({"ph": "X", "ts": 5, "dur": 0e309})",
       }) {
    ExpectParity(absl::StrCat(R"({"traceEvents": [{"ph": "X", "ts": 1}, )", event, "]}"), false);
  }
}

// Numbers with a fraction where the handler keeps them (flops: compared bit for bit), of 1 to
// 15 digits with the point anywhere: the walker's short path gives the correctly rounded double,
// as RapidJSON does for these (beyond 2^53 RapidJSON's default precision is not exact, and the
// simdjson reader, before this walker as now, keeps the correctly rounded value).
TEST(TraceReaderParity, EventWalkerConvertsFractionsBitForBit) {
  std::string json = "[";
  uint64_t x = 88172645463325252u;  // xorshift64: deterministic digits
  for (int i = 0; i < 4000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int digits = 1 + static_cast<int>(x % 14);
    std::string num = absl::StrCat(x % 9 + 1);
    for (int d = 1; d < digits; ++d) num += static_cast<char>('0' + (x >> (2 * d)) % 10);
    const size_t point = 1 + (x >> 40) % num.size();
    num.insert(point, point == num.size() ? ".5" : ".");
    absl::StrAppend(&json, i == 0 ? "" : ",\n", R"({"ph": "X", "cat": "cpu_op", "name": "op",)",
                    R"( "ts": 1, "dur": 1, "args": {"flops": )", num, "}}");
  }
  json += "]";
  auto got = ReadTraceText(json);
  auto reference = ReadTraceText(json, TraceParser::kRapidJson);
  ASSERT_TRUE(got.ok() && reference.ok());
  ASSERT_EQ(got->flops.size(), 4000u);
  ExpectSameData(*got, *reference, "fractions");
  EXPECT_EQ(Walked(json, size_t{1} << 18).declined, 0);
}

// Batches walked on other threads, each into a partial result, merged in file order: the same
// data as one walk in order (string ids, side-table indexes, steps, counters), whichever thread
// finishes first; also where some batches are declined to simdjson or hold stray elements.
TEST(TraceReaderParity, BatchesWalkedInParallelMergeToTheSameData) {
  std::vector<std::string> texts;
  for (const char* name : {"trace_filter.json.gz", "alexnet.json.gz", "amd_trace.json.gz",
                           "cpu_only.json.gz", "synthetic_async.json"}) {
    auto text = ReadWholeFile(Fixture(name));
    ASSERT_TRUE(text.ok());
    texts.push_back(*std::move(text));
  }
  std::string mixed = "[";
  for (int i = 0; i < 300; ++i) {
    absl::StrAppend(&mixed, i == 0 ? "" : ",\n",
                    R"({"ph": "X", "cat": "cpu_op", "name": "op)", i % 7, R"(", "ts": )", i,
                    R"(, "dur": 1, "pid": 1, "tid": )", i % 3,
                    R"(, "args": {"Input Dims": [[)", i % 5, R"(]], "flops": )", i,
                    i % 11 == 0 ? R"(, "e": "\u0041")" : "", "}},\n",
                    R"({"ph": "i", "name": "[memory]", "ts": )", i,
                    R"(, "pid": 1, "tid": 1, "args": {"Bytes": )", i, "}}",
                    i % 13 == 0 ? ", 5, [1]" : "",
                    R"(, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)", i,
                    R"(", "ts": )", i, R"(, "dur": 2})");
  }
  mixed += "]";
  texts.push_back(mixed);
  for (const std::string& text : texts) {
    auto reference = ReadTraceText(text, TraceParser::kRapidJson);
    ASSERT_TRUE(reference.ok());
    internal::EventWalkCounts in_order;
    auto one = internal::ReadTraceTextSimdjson(text, size_t{1} << 16, 1000, &in_order, 0);
    ASSERT_TRUE(one.has_value() && one->ok());
    EXPECT_GT(in_order.walked, 0);
    for (int workers : {1, 2, 3}) {
      internal::EventWalkCounts counts;
      auto got = internal::ReadTraceTextSimdjson(text, size_t{1} << 16, 1000, &counts, workers);
      ASSERT_TRUE(got.has_value() && got->ok()) << workers << " workers";
      ExpectSameData(**got, *reference, absl::StrCat(workers, " workers: ", text.substr(0, 60)));
      EXPECT_EQ(counts.walked, in_order.walked);
      EXPECT_EQ(counts.declined, in_order.declined);
    }
  }
}

// The real traces the benchmark replicates (and others) take the fast path whole.
TEST(TraceReaderParity, EventWalkerReadsEveryFixtureEventItself) {
  for (const auto& [name, events] : std::vector<std::pair<std::string, int64_t>>{
           {"trace_filter.json.gz", 4855}, {"alexnet.json.gz", 1408},
           {"cupti_profiler.json.gz", 4222}, {"simple_add.json.gz", 1348}}) {
    auto text = ReadWholeFile(Fixture(name));
    ASSERT_TRUE(text.ok());
    const internal::EventWalkCounts counts = Walked(*text, size_t{1} << 18);
    EXPECT_EQ(counts.walked, events) << name;
    EXPECT_EQ(counts.declined, 0) << name;
  }
}

// --- igzip ----------------------------------------------------------------------------------

using test::TempDir;

std::string Gzip(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

absl::StatusOr<std::string> ReadAllBlocks(const std::string& path) {
  auto r = BlockReader::Open(path);
  if (!r.ok()) return r.status();
  std::string all;
  std::vector<char> buf(1000);
  while (true) {
    auto n = (*r)->Read(buf.data(), buf.size());
    if (!n.ok()) return n.status();
    if (*n == 0) return all;
    all.append(buf.data(), *n);
  }
}

TEST(IgzipReader, InflatesLikeZlibMembersAndTrailingBytesIncluded) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 200000; ++i) absl::StrAppend(&big, "{\"i\": ", i * 7919 % 100003, "},\n");
  const std::string two = Gzip(big) + Gzip("second member");
  for (const auto& [name, bytes] :
       std::vector<std::pair<std::string, std::string>>{
           {"one.gz", Gzip(big)}, {"two.gz", two}, {"tail.gz", two + "trailing junk"},
           {"empty.gz", Gzip("")}, {"plain.json", big}}) {
    const std::string path = dir.Write(name, bytes);
    auto ours = ReadAllBlocks(path);
    auto zlib = ReadWholeFile(path);
    ASSERT_TRUE(ours.ok()) << name << ": " << ours.status();
    ASSERT_TRUE(zlib.ok()) << name << ": " << zlib.status();
    EXPECT_EQ(*ours == *zlib, true) << name << ": " << ours->size() << " vs " << zlib->size();
  }
}

TEST(IgzipReader, TruncatedOrCorruptGzipIsDataLoss) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 50000; ++i) absl::StrAppend(&big, "[", i, "],");
  const std::string gz = Gzip(big);
  std::string corrupt = gz;
  corrupt[gz.size() / 2] = static_cast<char>(corrupt[gz.size() / 2] ^ 0x55);
  for (const std::string& bytes : {gz.substr(0, gz.size() / 2), gz.substr(0, gz.size() - 3),
                                   corrupt}) {
    auto r = ReadAllBlocks(dir.Write("bad.gz", bytes));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("corrupt or truncated gzip data"));
  }
  auto missing = ReadAllBlocks(dir.Write("x", "") + ".none");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

// A device or a FIFO is refused before it is read: /dev/zero was read until memory ran out, and a
// FIFO blocked the command until a writer came.
TEST(IgzipReader, ADeviceOrAFifoIsRefusedAtOnce) {
  TempDir dir;
  const std::string fifo = dir.path() + "/stream";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/zero", "is a character device"}, {fifo, "is a FIFO (a pipe)"}}) {
    auto blocks = ReadAllBlocks(path);
    EXPECT_EQ(blocks.status().code(), absl::StatusCode::kInvalidArgument) << blocks.status();
    EXPECT_THAT(std::string(blocks.status().message()), HasSubstr(path + " " + kind));
    EXPECT_EQ(ReadWholeFile(path).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(ReadTraceFile(path).ok());
  }
}

TEST(IgzipReader, TraceFromGzipReadsTheSameAsPlain) {
  TempDir dir;
  auto text = ReadWholeFile(Fixture("trace_filter.json.gz"));
  ASSERT_TRUE(text.ok());
  auto plain = ReadTraceFile(dir.Write("t.json", *text));
  auto gz = ReadTraceFile(dir.Write("t.json.gz", Gzip(*text) + Gzip("")));
  ASSERT_TRUE(plain.ok() && gz.ok());
  ExpectSameData(*gz, *plain, "gzip vs plain");
  auto cut = ReadTraceFile(dir.Write("cut.json.gz", Gzip(*text).substr(0, 5000)));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(cut.status().message()), HasSubstr("truncated gzip"));
}

}  // namespace
}  // namespace libreyolo
