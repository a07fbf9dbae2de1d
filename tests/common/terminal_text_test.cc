// The one escaper for text printed to a terminal (common/render/terminal_text.h): control
// characters, bidirectional overrides and invalid UTF-8 become \xNN; everything else, including
// non-ASCII text, stays as it is; excerpts are short and say how long the value was.
#include "common/render/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace libreyolo {
namespace {

TEST(TerminalSafe, EscapesWhatATerminalWouldInterpret) {
  EXPECT_EQ(TerminalSafe("plain text, Grüße 東京"), "plain text, Grüße 東京");
  EXPECT_EQ(TerminalSafe("\x1b[2Jx"), "\\x1b[2Jx");
  EXPECT_EQ(TerminalSafe("a\rb\nc\td"), "a\\x0db\\x0ac\\x09d");
  EXPECT_EQ(TerminalSafe("a\rb\nc\td", /*multiline=*/true), "a\\x0db\nc\td");
  EXPECT_EQ(TerminalSafe(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(TerminalSafe("\x7f"), "\\x7f");
  EXPECT_EQ(TerminalSafe("\xc2\x9b" "31m"), "\\xc2\\x9b31m");        // C1 CSI
  EXPECT_EQ(TerminalSafe("a\xe2\x80\xae" "b"), "a\\xe2\\x80\\xaeb");  // right-to-left override
  EXPECT_EQ(TerminalSafe("\xff\xfe"), "\\xff\\xfe");                 // not UTF-8
  EXPECT_EQ(TerminalSafe("\xe2\x82"), "\\xe2\\x82");                 // truncated sequence
}

TEST(TerminalSafe, PrintableUtf8IsTheLabelCharacterSet) {
  EXPECT_TRUE(IsPrintableUtf8("team-a / ci #42 – ok ✓"));
  EXPECT_TRUE(IsPrintableUtf8(""));
  EXPECT_FALSE(IsPrintableUtf8("tab\there"));
  EXPECT_FALSE(IsPrintableUtf8("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(IsPrintableUtf8("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(IsPrintableUtf8("\xe2\x81\xa6"));  // U+2066 LEFT-TO-RIGHT ISOLATE
}

TEST(Excerpt, ShortAndSaysHowLong) {
  EXPECT_EQ(Excerpt("short"), "short");
  const std::string e = Excerpt(std::string(10 << 20, 'w'));
  EXPECT_EQ(e, std::string(64, 'w') + "\xE2\x80\xA6 (10485760 bytes)");
  // Cut at a character boundary: a 3-byte character straddling byte 64 is left out whole.
  const std::string cut = Excerpt(std::string(63, 'a') + "東京", 64);
  EXPECT_EQ(cut, std::string(63, 'a') + "\xE2\x80\xA6 (69 bytes)");
  EXPECT_EQ(Excerpt("\x1b\x1b\x1b", 2), "\\x1b\\x1b\xE2\x80\xA6 (3 bytes)");
}

}  // namespace
}  // namespace libreyolo
