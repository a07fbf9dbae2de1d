// libFuzzer target: Chrome trace text -> TraceData -> Profile -> profile.json -> Profile.
//
// Any input may be rejected by ReadTraceText, but nothing may crash, hang or trip a sanitizer,
// and a profile we wrote from an accepted trace must always read back (a round-trip failure is
// a bug, so it aborts and libFuzzer keeps the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "common/profile/profile_json.h"
#include "common/trace/trace_analyser.h"
#include "common/trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trace = libreyolo::ReadTraceText(text);
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
