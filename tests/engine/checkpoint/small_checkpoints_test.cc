// The tiny checkpoints of tests/fixtures/checkpoints (made by make_checkpoints.py there; the
// expected values are the ones that script writes, widened to double as torch's .tolist() does).
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <cmath>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "server/engine/checkpoint/checkpoint.h"

namespace libreyolo::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Checkpoint Load(const std::string& file) {
  auto r = ReadCheckpoint(LIBREYOLO_FIXTURES_DIR "/checkpoints/" + file);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : Checkpoint{};
}

const CheckpointTensor& Get(const Checkpoint& ck, const std::string& name) {
  for (const auto& [n, t] : ck.tensors) {
    if (n == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  static const CheckpointTensor kEmpty;
  return kEmpty;
}

std::vector<double> Values(const CheckpointTensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.At(i));
  return v;
}

std::vector<std::string> Names(const Checkpoint& ck) {
  std::vector<std::string> names;
  for (const auto& [n, t] : ck.tensors) names.push_back(n);
  return names;
}

const std::vector<std::string> kModuleNames = {
    "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
    "1.num_batches_tracked"};

void ExpectSmallModule(const Checkpoint& ck) {
  EXPECT_THAT(Names(ck), ElementsAreArray(kModuleNames));
  const CheckpointTensor& w = Get(ck, "0.weight");
  EXPECT_THAT(w.shape, ElementsAre(2, 1, 2, 2));
  EXPECT_THAT(Values(w), ElementsAre(-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75));
  EXPECT_THAT(Values(Get(ck, "0.bias")), ElementsAre(0.5, -0.5));
  EXPECT_THAT(Values(Get(ck, "1.running_var")), ElementsAre(2, 3));
  const CheckpointTensor& nbt = Get(ck, "1.num_batches_tracked");
  EXPECT_EQ(nbt.dtype, DType::kInt64);
  EXPECT_THAT(Values(nbt), ElementsAre(7));
}

TEST(SmallCheckpoints, BareOrderedDictWithMetadataAttribute) {
  const Checkpoint ck = Load("bare_state_dict.pt");
  ExpectSmallModule(ck);
  EXPECT_TRUE(ck.metadata.empty());
  EXPECT_TRUE(ck.class_names.empty());
}

TEST(SmallCheckpoints, DeflatedArchiveReadsTheSame) { ExpectSmallModule(Load("deflated.pt")); }

TEST(SmallCheckpoints, EveryDtype) {
  const Checkpoint ck = Load("dtypes.pt");
  EXPECT_EQ(ck.tensors.size(), 11u);
  const CheckpointTensor& half = Get(ck, "half");
  EXPECT_EQ(half.dtype, DType::kFloat16);
  EXPECT_THAT(Values(half), ElementsAre(1.5, -2.25, 65504.0, std::ldexp(1.0, -24), 0.0));
  EXPECT_EQ(Get(ck, "bf16").dtype, DType::kBFloat16);
  EXPECT_THAT(Values(Get(ck, "bf16")), ElementsAre(1.5, -3.00405527047391e+38));
  EXPECT_EQ(Get(ck, "double").dtype, DType::kFloat64);
  EXPECT_THAT(Get(ck, "double").shape, ElementsAre(1, 2));
  EXPECT_THAT(Values(Get(ck, "double")), ElementsAre(0.1, -1e300));
  const CheckpointTensor& lng = Get(ck, "long");
  EXPECT_EQ(lng.dtype, DType::kInt64);
  EXPECT_THAT(Values(lng), ElementsAre(-1099511627776.0, 0.0, 9007199254740992.0));
  EXPECT_EQ(Get(ck, "int").dtype, DType::kInt32);
  EXPECT_THAT(Values(Get(ck, "int")), ElementsAre(-7, 2147483647));
  EXPECT_THAT(Values(Get(ck, "short")), ElementsAre(-300));
  EXPECT_EQ(Get(ck, "char").dtype, DType::kInt8);
  EXPECT_THAT(Values(Get(ck, "char")), ElementsAre(-128, 127));
  EXPECT_EQ(Get(ck, "byte").dtype, DType::kUInt8);
  EXPECT_THAT(Values(Get(ck, "byte")), ElementsAre(0, 255));
  EXPECT_EQ(Get(ck, "bool").dtype, DType::kBool);
  EXPECT_THAT(Values(Get(ck, "bool")), ElementsAre(1, 0, 1));
  const CheckpointTensor& scalar = Get(ck, "scalar");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_THAT(Values(scalar), ElementsAre(3.25));
  const CheckpointTensor& empty = Get(ck, "empty");
  EXPECT_THAT(empty.shape, ElementsAre(0, 4));
  EXPECT_EQ(empty.numel(), 0);
}

TEST(SmallCheckpoints, DtypeHelpers) {
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8);
  EXPECT_EQ(DTypeSize(DType::kBool), 1);
  EXPECT_STREQ(DTypeName(DType::kFloat16), "float16");
  EXPECT_STREQ(DTypeName(DType::kUInt8), "uint8");
}

TEST(SmallCheckpoints, NonContiguousViewsShareOneStorage) {
  const Checkpoint ck = Load("noncontiguous.pt");
  const CheckpointTensor& tr = Get(ck, "transposed");  // arange(6).reshape(2, 3).t()
  EXPECT_THAT(tr.shape, ElementsAre(3, 2));
  EXPECT_THAT(tr.strides, ElementsAre(1, 3));
  EXPECT_THAT(Values(tr), ElementsAre(0, 3, 1, 4, 2, 5));
  const CheckpointTensor& strided = Get(ck, "strided");  // arange(12)[2:10:3]
  EXPECT_EQ(strided.storage_offset, 2);
  EXPECT_THAT(strided.strides, ElementsAre(3));
  EXPECT_THAT(Values(strided), ElementsAre(2, 5, 8));
  const CheckpointTensor& tail = Get(ck, "tail");  // arange(12).reshape(3, 4)[1:, 2:]
  EXPECT_EQ(tail.storage_offset, 6);
  EXPECT_THAT(Values(tail), ElementsAre(6, 7, 10, 11));
  const CheckpointTensor& whole = Get(ck, "whole");
  EXPECT_EQ(whole.numel(), 12);
  EXPECT_EQ(whole.storage, tr.storage);  // one blob, read once
}

TEST(SmallCheckpoints, AtOutsideTheTensorIsNaN) {
  const Checkpoint ck = Load("noncontiguous.pt");
  const CheckpointTensor& tr = Get(ck, "transposed");
  EXPECT_TRUE(std::isnan(tr.At(-1)));
  EXPECT_TRUE(std::isnan(tr.At(6)));
  CheckpointTensor bad = tr;  // a hand-made view past the end of its storage
  bad.storage_offset = 1000;
  EXPECT_TRUE(std::isnan(bad.At(0)));
}

TEST(SmallCheckpoints, MetadataBesideTheModel) {
  const Checkpoint ck = Load("with_metadata.pt");
  ExpectSmallModule(ck);
  const auto& m = ck.metadata;
  EXPECT_EQ(std::get<std::string>(m.at("schema_version")), "1.0");
  EXPECT_EQ(std::get<int64_t>(m.at("nc")), 3);
  EXPECT_EQ(std::get<int64_t>(m.at("imgsz")), 320);
  EXPECT_EQ(std::get<double>(m.at("lr")), 0.01);
  EXPECT_EQ(std::get<bool>(m.at("half")), false);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(m.at("note")));
  EXPECT_EQ(std::get<std::string>(m.at("tags")), "['a', 'b']");
  EXPECT_EQ(std::get<std::string>(m.at("names")), "{0: 'cat', 1: 'dog', 2: 'bird'}");
  // Unknown classes stay opaque instead of failing the load.
  EXPECT_EQ(std::get<std::string>(m.at("np_scalar")), "<numpy.core.multiarray.scalar object>");
  EXPECT_EQ(std::get<std::string>(m.at("args")), "<__main__.TrainArgs object>");
  EXPECT_EQ(std::get<std::string>(m.at("optimizer")),
            "{'state': {0: {'momentum_buffer': <tensor>}}, 'lr': 0.1}");
  EXPECT_FALSE(m.contains("model"));
  EXPECT_THAT(ck.class_names, ElementsAre("cat", "dog", "bird"));
}

TEST(SmallCheckpoints, EmaWhenModelIsNone) {
  const Checkpoint ck = Load("ema_only.pt");
  ExpectSmallModule(ck);
  EXPECT_THAT(ck.class_names, ElementsAre("x", "y"));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(ck.metadata.at("model")));
}

TEST(SmallCheckpoints, PickleProtocol4) {
  const Checkpoint ck = Load("protocol4.pt");
  ExpectSmallModule(ck);
  EXPECT_THAT(ck.class_names, ElementsAre("a"));
  EXPECT_EQ(std::get<int64_t>(ck.metadata.at("neg")), -5);
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("pair")), "(1, 2)");
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("big")), "<builtins.int (too large) object>");
}

TEST(SmallCheckpoints, DirectoryIsNotACheckpoint) {
  auto r = ReadCheckpoint(LIBREYOLO_FIXTURES_DIR "/checkpoints");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace libreyolo::engine
