#include "harness/capture/tensor_capture.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness/capture/tensor_digest.h"
#include "harness/capture/testing/tensor_record_oracle.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

// Each record as MakeTensorRecord, the per-tensor definition, makes it: digest, norm (bit for bit),
// numel, dtype; name, kind, replicated and group as given.
TEST(TensorCaptureTest, RecordsAreThePerTensorDefinitions) {
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({16, 8});
  const std::vector<torch::Tensor> tensors = {w, w.t(), torch::randn({3}, torch::kFloat64),
                                              torch::arange(10, torch::kInt64), torch::Tensor(),
                                              torch::randn({4}).to(torch::kBFloat16)};
  const auto group = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim dp"});
  TensorCapture capture;
  std::vector<TensorRecord> records;
  capture.Begin(records);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorKind kind = i % 2 ? TensorKind::kGrad : TensorKind::kParam;
    ASSERT_TRUE(capture.Add("t" + std::to_string(i), kind, tensors[i], i != 2, i == 3 ? group : nullptr).ok());
  }
  ASSERT_TRUE(capture.Finish().ok());
  ASSERT_EQ(records.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorKind kind = i % 2 ? TensorKind::kGrad : TensorKind::kParam;
    Result<TensorRecord> want = MakeTensorRecord("t" + std::to_string(i), kind, tensors[i], i != 2);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const TensorRecord& got = records[i];
    EXPECT_EQ(got.name, want->name);
    EXPECT_EQ(got.kind, want->kind);
    EXPECT_EQ(got.digest, want->digest) << got.name;
    EXPECT_EQ(Bits(got.norm), Bits(want->norm)) << got.name << ": " << got.norm << " vs " << want->norm;
    EXPECT_EQ(got.numel, want->numel);
    EXPECT_EQ(got.dtype, want->dtype);
    EXPECT_EQ(got.replicated, want->replicated);
    EXPECT_EQ(got.group, i == 3 ? group : nullptr);
  }
}

// A second list into the same records: fewer tensors shrink them, and nothing of the first list's
// records survives in the second's (a group given before, none now).
TEST(TensorCaptureTest, ASecondListReusesTheRecordsAndLeavesNothingOfTheFirst) {
  TensorCapture capture;
  std::vector<TensorRecord> records;
  const auto group = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, ""});
  capture.Begin(records);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(capture.Add("first" + std::to_string(i), TensorKind::kParam, torch::ones({4}), true, group).ok());
  ASSERT_TRUE(capture.Finish().ok());
  ASSERT_EQ(records.size(), 3u);

  capture.Begin(records);
  const torch::Tensor x = torch::full({2}, 3.0);
  ASSERT_TRUE(capture.Add("second", TensorKind::kOptimizerState, x, false).ok());
  ASSERT_TRUE(capture.Finish().ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].name, "second");
  EXPECT_EQ(records[0].kind, TensorKind::kOptimizerState);
  EXPECT_FALSE(records[0].replicated);
  EXPECT_EQ(records[0].group, nullptr);
  EXPECT_EQ(records[0].digest, DigestTensor(x));
  EXPECT_EQ(records[0].norm, std::sqrt(18.0));
}

// A tensor LibTorch cannot read (a meta tensor has no bytes to copy): an error naming it.
TEST(TensorCaptureTest, ATensorThatCannotBeReadIsAnErrorNamingIt) {
  TensorCapture capture;
  std::vector<TensorRecord> records;
  capture.Begin(records);
  ASSERT_TRUE(capture.Add("fine", TensorKind::kParam, torch::ones({2}), true).ok());
  const Status s = capture.Add("layer.weight", TensorKind::kParam, torch::empty({4}, torch::kMeta), true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("digest of layer.weight"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace lockstep
