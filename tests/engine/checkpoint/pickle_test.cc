// The pickle machine and the zip reader on their own: opcodes torch.save does not use but other
// writers (pickle protocols 0 and 4) do, resource limits against hostile input, and zip64.
#include <gtest/gtest.h>
#include <zlib.h>

#include <gmock/gmock.h>

#include <string>

#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/checkpoint/pickle.h"
#include "server/engine/checkpoint/zip_archive.h"
#include "tests/engine/checkpoint/pickle_builder.h"

namespace libreyolo::engine {
namespace {

using ::testing::HasSubstr;
using std::string_literals::operator""s;
using testing::Dict;
using testing::Floats;
using testing::Global;
using testing::Le;
using testing::Pickle;
using testing::Str;
using testing::Tensor;

PickleGraph Run(const std::string& pickle) {
  auto g = Unpickle(pickle, "p");
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : PickleGraph{};
}

std::string RunError(const std::string& pickle) {
  auto g = Unpickle(pickle, "p");
  EXPECT_FALSE(g.ok());
  return g.ok() ? "" : std::string(g.status().message());
}

std::string Repr(const std::string& pickle) {
  const PickleGraph g = Run(pickle);
  return g.root() == kNoValue ? "" : g.Repr(g.root());
}

TEST(Pickle, Integers) {
  EXPECT_EQ(Repr("\x80\x02J\xff\xff\xff\xff."), "-1");                  // BININT
  EXPECT_EQ(Repr("\x80\x02M\xff\xff."), "65535");                       // BININT2
  EXPECT_EQ(Repr("\x80\x02\x8a\x00."s), "0");  // LONG1, empty
  EXPECT_EQ(Repr("\x80\x02\x8a\x01\xff."), "-1");                       // LONG1, negative
  EXPECT_EQ(Repr("\x80\x02\x8a\x02\x00\x80."s), "-32768");
  EXPECT_EQ(Repr("\x80\x02\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09."),
            "<builtins.int (too large) object>");
  EXPECT_EQ(Repr("I01\n."), "True");  // protocol 0 spells booleans as INT
  EXPECT_EQ(Repr("I-42\n."), "-42");
  EXPECT_EQ(Repr("L12L\n."), "12");
}

TEST(Pickle, FloatsAndStrings) {
  EXPECT_EQ(Repr("\x80\x02G\x3f\xf8\x00\x00\x00\x00\x00\x00."s), "1.5");
  EXPECT_EQ(Repr("F0.25\n."), "0.25");
  EXPECT_EQ(Repr("\x80\x02U\x02hi."), "'hi'");        // SHORT_BINSTRING
  EXPECT_EQ(Repr("\x80\x04\x8c\x02hi."), "'hi'");     // SHORT_BINUNICODE
  EXPECT_EQ(Repr("\x80\x03" "C\x03" "abc."), "<3 bytes>");  // SHORT_BINBYTES
}

TEST(Pickle, ContainersMemoAndStackOps) {
  EXPECT_EQ(Repr("\x80\x02(K\x01K\x02l."), "[1, 2]");
  EXPECT_EQ(Repr("\x80\x02K\x01\x85."), "(1,)");
  EXPECT_EQ(Repr("\x80\x02K\x01K\x02K\x03\x87."), "(1, 2, 3)");
  EXPECT_EQ(Repr("\x80\x02(K\x01K\x02" "d."), "{1: 2}");
  EXPECT_EQ(Repr("\x80\x02]q\x00K\x07" "ah\x00."s), "[7]");  // BINPUT / BINGET share
  EXPECT_EQ(Repr("\x80\x04]\x94K\x07" "a0h\x00."s), "[7]");  // MEMOIZE, POP
  EXPECT_EQ(Repr("\x80\x02K\x01(K\x02K\x03" "1."), "1");  // POP_MARK
  EXPECT_EQ(Repr("\x80\x02]2K\x05" "a0."), "[5]");  // DUP
  EXPECT_EQ(Repr("\x80\x02\x8f(K\x01\x90."), "[1]");         // EMPTY_SET, ADDITEMS
}

TEST(Pickle, CyclesAndDeepNestingStayBounded) {
  // A list holding itself: the text ends at the depth cap instead of recursing forever.
  const std::string cyclic = Repr("\x80\x02]q\x00h\x00" "a."s);
  EXPECT_THAT(cyclic, HasSubstr("[[[[...]]]]"));
  EXPECT_LE(cyclic.size(), 64u);
  std::string deep = "\x80\x02";  // 100k nested lists, built with APPEND
  for (int i = 0; i < 100000; ++i) deep += "]";
  for (int i = 0; i < 99999; ++i) deep += "a";
  EXPECT_LE(Repr(deep + ".").size(), 64u);
  // A wide shared graph: 2^20 paths through 20 memoised levels, cut at max_chars.
  std::string wide = "\x80\x02K\x01";
  for (int i = 0; i < 20; ++i) wide += "2\x86";  // DUP + TUPLE2: (x, x)
  const std::string text = Repr(wide + ".");
  EXPECT_LE(text.size(), 4096u + 3);
}

TEST(Pickle, GlobalsAndCalls) {
  const std::string od = Global("collections", "OrderedDict");
  // OrderedDict() then BUILD with `_metadata`, as nn.Module.state_dict() pickles.
  EXPECT_EQ(Repr("\x80\x02" + od + ")R(K\x01K\x02u}(" + Str("_metadata") + "}ub."), "{1: 2}");
  EXPECT_EQ(Repr("\x80\x04\x8c\x03mod\x8c\x03" "Cls\x93)\x81."), "<mod.Cls object>");
  EXPECT_EQ(Repr("\x80\x02(" + Global("mod", "Cls") + "K\x01o."), "<mod.Cls object>");  // OBJ
  EXPECT_EQ(Repr("\x80\x02(K\x01imod\nCls\n."), "<mod.Cls object>");                   // INST
  // _rebuild_parameter(tensor, requires_grad, hooks) is the tensor itself.
  const std::string param = Global("torch._utils", "_rebuild_parameter") + "(" + Tensor({}) +
                            "\x88" + od + ")Rt" + "R";
  EXPECT_EQ(Repr("\x80\x02" + param + "."), "<tensor>");
}

TEST(Pickle, StackGlobalWhileTheValuesGrow) {
  // Found by checkpoint_fuzzer: STACK_GLOBAL read its two strings through references into the
  // value array, which the new global's allocation could move (use-after-free under ASan).
  std::string many = "\x80\x04";
  for (int i = 0; i < 200; ++i) many += "\x8c\x01m\x8c\x01n\x93" "0";
  EXPECT_EQ(Repr(many + "\x8c\x03mod\x8c\x04name\x93."), "mod.name");
}

TEST(Pickle, Errors) {
  EXPECT_THAT(RunError("\x80\x02."), HasSubstr("stack underflow"));
  EXPECT_THAT(RunError("\x80\x02(."), HasSubstr("stack underflow"));  // MARK fences the stack
  EXPECT_THAT(RunError("\x80\x02h\x05."), HasSubstr("memo key 5 not found"));
  EXPECT_THAT(RunError("\x80\x02K\x01K\x02K\x03s."), HasSubstr("SETITEM on a int"));
  EXPECT_THAT(RunError("\x80\x02)K\x01" "a."), HasSubstr("APPEND to a tuple"));
  EXPECT_THAT(RunError("\x80\x02" + Global("m", "f") + "K\x01R."), HasSubstr("not a tuple"));
  EXPECT_THAT(RunError("\x80\x02K\x01Q."), HasSubstr("unsupported persistent id"));
  EXPECT_THAT(RunError("\x80\x02]K\x01u."), HasSubstr("MARK missing"));
  EXPECT_THAT(RunError("\x80\x02]e."), HasSubstr("MARK missing"));
  EXPECT_THAT(RunError("\x80\x02T\xff\xff\xff\xff."), HasSubstr("negative BINSTRING"));
  EXPECT_THAT(RunError("\x80\x02" "cmod"), HasSubstr("unterminated line"));
}

TEST(Pickle, ResourceLimits) {
  EXPECT_THAT(RunError(std::string(1200000, '(') + "."), HasSubstr("too many pickle MARKs"));
  EXPECT_THAT(RunError(std::string(1100000, 'N') + "."), HasSubstr("pickle stack too deep"));
  std::string many;  // push and pop a fresh tuple: values grow, the stack does not
  for (int i = 0; i < 1100000; ++i) many += ")0";
  EXPECT_THAT(RunError(many + "N."), HasSubstr("more than 1048576 values"));
  EXPECT_THAT(RunError("\x80\x02N" + std::string("\x8d\xff\xff\xff\xff\xff\xff\xff\x7f", 9)),
              HasSubstr("truncated pickle"));  // a 2^63-byte string is never allocated
}

// A one-entry zip64 archive: sizes and offset saturated, the real values in zip64 fields.
std::string Zip64(const std::string& name, const std::string& data) {
  const std::string crc = Le(crc32(0, reinterpret_cast<const Bytef*>(data.data()),
                                   static_cast<uInt>(data.size())), 4);
  const std::string sat = Le(0xffffffff, 4);
  std::string out = Le(0x04034b50, 4) + Le(45, 2) + Le(0, 2) + Le(0, 2) + Le(0, 4) + crc + sat +
                    sat + Le(name.size(), 2) + Le(20, 2) + name + Le(1, 2) + Le(16, 2) +
                    Le(data.size(), 8) + Le(data.size(), 8) + data;
  const std::string dir = Le(0x02014b50, 4) + Le(45, 2) + Le(45, 2) + Le(0, 2) + Le(0, 2) +
                          Le(0, 4) + crc + sat + sat + Le(name.size(), 2) + Le(28, 2) +
                          Le(0, 8) + Le(0, 2) + sat + name + Le(1, 2) + Le(24, 2) +
                          Le(data.size(), 8) + Le(data.size(), 8) + Le(0, 8);
  const size_t dir_at = out.size();
  out += dir;
  const size_t end64_at = out.size();
  out += Le(0x06064b50, 4) + Le(44, 8) + Le(45, 2) + Le(45, 2) + Le(0, 8) + Le(1, 8) +
         Le(1, 8) + Le(dir.size(), 8) + Le(dir_at, 8);
  out += Le(0x07064b50, 4) + Le(0, 4) + Le(end64_at, 8) + Le(1, 4);
  out += Le(0x06054b50, 4) + Le(0, 4) + Le(0xffff, 2) + Le(0xffff, 2) + sat + sat + Le(0, 2);
  return out;
}

TEST(Zip, Zip64Records) {
  const std::string bytes = Zip64("a/b.bin", "payload");
  auto zip = ZipArchive::Open(bytes, "z");
  ASSERT_TRUE(zip.ok()) << zip.status();
  ASSERT_EQ(zip->entries().size(), 1u);
  const ZipEntry* e = zip->Find("a/b.bin");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->uncompressed_size, 7u);
  auto data = zip->Read(*e);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(*data, "payload");
}

TEST(Zip, UnsupportedCompressionMethod) {
  std::string bytes = WriteStoredZip({{"x", "data"}});
  bytes[bytes.find("PK\x01\x02") + 10] = 12;  // bzip2, in the central directory
  auto zip = ZipArchive::Open(bytes, "z");
  ASSERT_TRUE(zip.ok()) << zip.status();
  auto data = zip->Read(zip->entries()[0]);
  EXPECT_THAT(data.status().message(), HasSubstr("unsupported compression method 12"));
}

TEST(Zip, CheckpointThroughZip64) {
  // The archive layer is independent of the pickle: a checkpoint whose only entry is data.pkl
  // in a zip64 archive still reaches the converter (and fails there for its missing storage).
  auto r = ReadCheckpointBytes(Zip64("a/data.pkl", Pickle(Dict({{Str("w"), Tensor({})}}))),
                               "z64.pt");
  EXPECT_THAT(r.status().message(), HasSubstr("a/data/0 is missing"));
}

}  // namespace
}  // namespace libreyolo::engine
