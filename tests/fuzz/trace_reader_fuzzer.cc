// libFuzzer target: Chrome trace text -> TraceData -> Profile -> profile.json -> Profile.
//
// Any input may be rejected by ReadTraceText, but nothing may crash, hang or trip a sanitizer,
// and a profile we wrote from an accepted trace must always read back (a round-trip failure is
// a bug, so it aborts and libFuzzer keeps the input).
// The reader is the simdjson one (streamed in blocks and batches whose sizes vary with the
// input, so the splitter's cuts fall everywhere, and for some inputs its batches walked on two
// other threads and merged in order); it is also checked against the RapidJSON
// reader: where simdjson decides an input itself, both must accept it with the same data, or
// both reject it with the same error.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "common/analysis/profile_json_write.h"
#include "common/analysis/trace_analyser.h"
#include "common/profile/profile_json.h"
#include "common/trace/trace_reader.h"
#include "common/trace/trace_reader_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t block = 1 + size % 17;
  const size_t batch = 1 + (size / 17) % 97;
  // One input in seven has its batches walked on two other threads and merged (threads cost
  // the fuzzer two thirds of its speed when every input starts them).
  const int workers = size % 7 == 3 ? 2 : 0;
  auto simd = libreyolo::internal::ReadTraceTextSimdjson(text, block, batch, nullptr, workers);
  if (simd.has_value()) {
    auto reference = libreyolo::ReadTraceText(text, libreyolo::TraceParser::kRapidJson);
    std::string why = "one accepts, the other does not";
    if (simd->ok() != reference.ok() ||
        (simd->ok() && !libreyolo::SameTraceData(**simd, *reference, &why)) ||
        (!simd->ok() && simd->status() != reference.status())) {
      std::fprintf(stderr, "simdjson and RapidJSON readers differ: %s\n", why.c_str());
      std::abort();
    }
  }
  auto trace = simd.has_value() ? *std::move(simd) : libreyolo::ReadTraceText(text);
  if (!trace.ok()) return 0;
  const libreyolo::Profile profile = libreyolo::AnalyseTrace(std::move(*trace));
  const std::string json = libreyolo::WriteProfileJson(profile);
  auto again = libreyolo::ReadProfileJson(json, "fuzz round trip");
  if (!again.ok()) {
    std::fprintf(stderr, "round trip failed: %s\n--- written profile.json ---\n%s\n",
                 std::string(again.status().message()).c_str(), json.c_str());
    std::abort();
  }
  return 0;
}
