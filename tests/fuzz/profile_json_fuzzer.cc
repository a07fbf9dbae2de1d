// libFuzzer target: profile.json text -> Profile -> profile.json -> Profile.
//
// Any input may be rejected by ReadProfileJson, but nothing may crash, hang or trip a sanitizer,
// and what WriteProfileJson makes of an accepted profile must always read back (a round-trip
// failure is a bug, so it aborts and libFuzzer keeps the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/analysis/profile_json_write.h"
#include "common/profile/profile_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = libreyolo::ReadProfileJson(text, "fuzz input");
  if (!profile.ok()) return 0;
  const std::string json = libreyolo::WriteProfileJson(*profile);
  auto again = libreyolo::ReadProfileJson(json, "fuzz round trip");
  if (!again.ok()) {
    std::fprintf(stderr, "round trip failed: %s\n--- written profile.json ---\n%s\n",
                 std::string(again.status().message()).c_str(), json.c_str());
    std::abort();
  }
  return 0;
}
