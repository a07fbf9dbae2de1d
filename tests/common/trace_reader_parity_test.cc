// The simdjson reader against the RapidJSON reader it replaced: the same TraceData (every event,
// string id, counter and the device) and the same errors, on the fixture traces and on inputs
// made to hit every cut the streaming splitter makes (blocks and batches of a few bytes), and
// the igzip inflater against zlib's (members, truncation, trailing bytes).
#include <gtest/gtest.h>
#include <zlib.h>

#include <gmock/gmock.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/block_reader.h"
#include "common/io/file_reader.h"
#include "common/trace/trace_reader.h"

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
      auto simd = internal::ReadTraceTextSimdjson(json, block, batch);
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

// --- igzip ----------------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "parity-XXXXXX").string();
    path_ = ::mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

 private:
  std::string path_;
};

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
