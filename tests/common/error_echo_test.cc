// Issue 23, item 7: a reader's error that names a value the caller gave (Kernels/Ops `phase`,
// `sort`, `grep`, Get `field`, WhatIf `remove_category`, Modules `format`/`sort`, the reader's
// name) echoes it only as the one excerpt rpc.md promises (common/render/terminal_text.h,
// Excerpt): its first 64 bytes, control characters written as \xNN, "… (N bytes)" after.
// The daemon's reader RPCs return these messages as they are, so this is their contract too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/readers/modules_view.h"
#include "common/readers/run_reader.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A terminal title (OSC ... BEL), a screen clear and an unclosed regex bracket, then padding.
std::string Hostile() { return "\x1b]0;owned\x07\x1b[2J" + std::string(300, 'A'); }

// What every echo of Hostile() must look like: no control byte, not whole, bounded.
void ExpectExcerpted(const absl::Status& s) {
  ASSERT_FALSE(s.ok());
  const std::string m(s.message());
  for (const char c : m) {
    const auto b = static_cast<unsigned char>(c);
    EXPECT_FALSE(b < 0x20 || b == 0x7f) << "control byte " << int{b} << " in: " << m;
  }
  EXPECT_THAT(m, HasSubstr("\\x1b]0;owned\\x07\\x1b[2J"));
  EXPECT_THAT(m, HasSubstr("\xE2\x80\xA6 (" + std::to_string(Hostile().size()) + " bytes)"));
  EXPECT_THAT(m, Not(HasSubstr(std::string(64, 'A'))));
  EXPECT_LT(m.size(), 400u) << m;
}

Profile SmallProfile() {
  Profile p;
  p.step_ms = 10.0;
  PhaseRow forward;
  forward.phase = "forward";
  p.phases.push_back(forward);
  CategoryRow gemm;
  gemm.name = "gemm";
  gemm.ms_per_step = 1.0;
  p.categories.push_back(gemm);
  return p;
}

absl::Status Read(const ReaderInvocation& given) {
  ReaderInvocation in = given;
  in.inputs = {"profile.json"};
  const ProfileLoader load = [](const std::string&) -> absl::StatusOr<Profile> {
    return SmallProfile();
  };
  return RunReader(in, load).status();
}

TEST(ErrorEcho, KernelsPhaseSortAndGrep) {
  ReaderInvocation in;
  in.reader = ReaderId::kKernels;
  in.kernels.phase = Hostile();
  EXPECT_TRUE(absl::IsNotFound(Read(in)));
  ExpectExcerpted(Read(in));
  in.kernels.phase.reset();
  in.kernels.sort = Hostile();
  ExpectExcerpted(Read(in));
  in.kernels.sort = "time";
  in.kernels.grep = Hostile();  // "[2JAAA..." never closes its bracket: not a regex
  EXPECT_TRUE(absl::IsInvalidArgument(Read(in)));
  ExpectExcerpted(Read(in));
}

TEST(ErrorEcho, OpsPhaseAndSort) {
  ReaderInvocation in;
  in.reader = ReaderId::kOps;
  in.ops.phase = Hostile();
  ExpectExcerpted(Read(in));
  in.ops.phase.reset();
  in.ops.sort = Hostile();
  ExpectExcerpted(Read(in));
}

TEST(ErrorEcho, GetField) {
  ReaderInvocation in;
  in.reader = ReaderId::kGet;
  in.field = Hostile();
  EXPECT_TRUE(absl::IsNotFound(Read(in)));
  ExpectExcerpted(Read(in));
}

TEST(ErrorEcho, WhatIfRemoveCategory) {
  ReaderInvocation in;
  in.reader = ReaderId::kWhatIf;
  in.what_if.remove_category = Hostile();
  EXPECT_TRUE(absl::IsInvalidArgument(Read(in)));
  ExpectExcerpted(Read(in));
}

TEST(ErrorEcho, ModulesFormatAndSort) {
  ModulesOptions o;
  o.format = Hostile();
  ExpectExcerpted(BuildModules(TraceData{}, o, "src", "trace.json").status());
  o.format = "table";
  o.sort = Hostile();
  ExpectExcerpted(BuildModules(TraceData{}, o, "src", "trace.json").status());
}

// GCC 12 reports the string assigned to the empty optional<string> below as maybe
// uninitialised once ReaderInvocation starts with an enum (a false positive of its
// -Wmaybe-uninitialized through std::optional).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// A value the reader knows is still named as it is (an excerpt of a short value is the value).
TEST(ErrorEcho, AShortPrintableValueIsEchoedAsItIs) {
  ReaderInvocation in;
  in.reader = ReaderId::kGet;
  in.field = "no_such_metric";
  const absl::Status s = Read(in);
  EXPECT_THAT(std::string(s.message()), HasSubstr("unknown metric 'no_such_metric'"));
}
#pragma GCC diagnostic pop

}  // namespace
}  // namespace libreyolo
