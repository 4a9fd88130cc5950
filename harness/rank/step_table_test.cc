#include "harness/rank/step_table.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lockstep {
namespace {

TensorRecord Tensor(const std::string& name, TensorKind kind, uint64_t digest, double norm, bool replicated = true) {
  TensorRecord t;
  t.name = name;
  t.kind = kind;
  t.digest = Digest128{digest, ~digest};
  t.norm = norm;
  t.replicated = replicated;
  return t;
}

StepRecord Step(uint64_t w_digest, double w_norm) {
  StepRecord s;
  s.step = 3;
  s.tensors = {Tensor("w", TensorKind::kParam, w_digest, w_norm), Tensor("zero1.shard0#exp_avg", TensorKind::kOptimizerState, 9, 1.0, false),
               Tensor("w", TensorKind::kGrad, 5, 0.25)};
  return s;
}

TEST(StepTableTest, PacksReplicatedTensorsOnlyAndUnpacksEveryRank) {
  const StepRecord r0 = Step(1, 2.0), r1 = Step(7, -0.0);
  EXPECT_EQ(StepTableRows(r0), 2);
  std::vector<int64_t> all = PackStepTable(r0);
  ASSERT_EQ(all.size(), 2u * kStepTableColumns);
  const std::vector<int64_t> other = PackStepTable(r1);
  all.insert(all.end(), other.begin(), other.end());

  Result<std::vector<StepRecord>> by_rank = UnpackStepTables(r0, all, 2);
  ASSERT_TRUE(by_rank.ok()) << by_rank.status().ToString();
  ASSERT_EQ(by_rank->size(), 2u);
  const StepRecord& back = (*by_rank)[1];
  EXPECT_EQ(back.step, 3);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].name, "w");
  EXPECT_EQ(back.tensors[0].kind, TensorKind::kParam);
  EXPECT_EQ(back.tensors[0].digest, (Digest128{7, ~uint64_t{7}}));
  EXPECT_TRUE(std::signbit(back.tensors[0].norm)) << "the norm travels bit for bit";
  EXPECT_EQ(back.tensors[1].kind, TensorKind::kGrad);
  EXPECT_EQ((*by_rank)[0].tensors[0].norm, 2.0);
}

TEST(StepTableTest, ATensorOfAnotherNameOrKindAtARowIsAnError) {
  StepRecord r0 = Step(1, 2.0), r1 = Step(1, 2.0);
  std::swap(r1.tensors[0], r1.tensors[2]);  // same rows, another order
  std::vector<int64_t> all = PackStepTable(r0);
  const std::vector<int64_t> other = PackStepTable(r1);
  all.insert(all.end(), other.begin(), other.end());
  Result<std::vector<StepRecord>> by_rank = UnpackStepTables(r0, all, 2);
  ASSERT_FALSE(by_rank.ok());
  EXPECT_EQ(by_rank.status().code(), StatusCode::kInternal);
  EXPECT_NE(by_rank.status().message().find("rank 1 has another tensor than param:w at row 0"), std::string::npos)
      << by_rank.status().ToString();
}

TEST(StepTableTest, ATableOfTheWrongSizeIsAnError) {
  const StepRecord r0 = Step(1, 2.0);
  EXPECT_FALSE(UnpackStepTables(r0, PackStepTable(r0), 2).ok());
  EXPECT_FALSE(UnpackStepTables(r0, {}, 0).ok());
}

}  // namespace
}  // namespace lockstep
