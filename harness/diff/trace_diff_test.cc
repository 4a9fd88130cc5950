#include "harness/diff/trace_diff.h"

#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/diff/testing/canned_traces.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::CannedTraces;
using testing::Corrupt;
using testing::Cut;
using testing::FindTensor;
using Verdict = ScenarioDiff::Verdict;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RelativeDifferenceTest, ScalesByTheLargerMagnitude) {
  EXPECT_DOUBLE_EQ(RelativeDifference(1.0, 1.5), 0.5 / 1.5);
  EXPECT_DOUBLE_EQ(RelativeDifference(-2.0, 2.0), 2.0);
  EXPECT_EQ(RelativeDifference(0.0, 0.0), 0.0);
  EXPECT_EQ(RelativeDifference(0.0, -0.0), 0.0);
  EXPECT_DOUBLE_EQ(RelativeDifference(0.0, 1e-9), 1.0);
}

TEST(RelativeDifferenceTest, NonFiniteValues) {
  EXPECT_EQ(RelativeDifference(kNaN, kNaN), 0.0);
  EXPECT_EQ(RelativeDifference(kInf, kInf), 0.0);
  EXPECT_TRUE(std::isnan(RelativeDifference(kNaN, 1.0)));
  EXPECT_TRUE(std::isnan(RelativeDifference(1.0, kInf)));
  EXPECT_TRUE(SameValue(kNaN, kNaN));
  EXPECT_FALSE(SameValue(kNaN, 0.0));
  EXPECT_FALSE(SameValue(1.0, std::nextafter(1.0, 2.0)));
}

TEST(TraceDiffTest, IdenticalRunsAreIdentical) {
  const auto a = CannedTraces(4, 5), b = CannedTraces(4, 5);
  const ScenarioDiff d = DiffTraces("s", a, b);
  EXPECT_EQ(d.verdict(), Verdict::kIdentical);
  EXPECT_FALSE(d.first.has_value());
  EXPECT_EQ(d.steps_compared, 6);  // steps 0..5; the NaN losses of step 0 compare equal
  // 4 ranks x (6 steps x 5 non-grad tensors + 5 steps x 3 grads)
  EXPECT_EQ(d.records_compared, 4 * (6 * 5 + 5 * 3));
  EXPECT_EQ(d.differing_steps, 0);
  EXPECT_TRUE(d.notes.empty());
}

TEST(TraceDiffTest, BitflipNamesItsStepTensorRankAndSize) {
  auto a = CannedTraces(4, 6);
  auto b = CannedTraces(4, 6);
  Corrupt(b, 2, TensorKind::kParam, "fc2.weight", 3, 2e-3);

  const ScenarioDiff d = DiffTraces("s", a, b);
  EXPECT_EQ(d.verdict(), Verdict::kDifferent);
  ASSERT_TRUE(d.first.has_value());
  EXPECT_EQ(d.first->step, 3);
  EXPECT_TRUE(d.first->losses.empty());
  EXPECT_TRUE(d.first->gaps.empty());
  ASSERT_EQ(d.first->tensors.size(), 1u);
  const TensorDifference& t = d.first->tensors[0];
  EXPECT_EQ(t.name, "fc2.weight");
  EXPECT_EQ(t.kind, TensorKind::kParam);
  EXPECT_THAT(t.Ranks(), ElementsAre(2));
  const TensorRankDifference& r = t.per_rank[0];
  EXPECT_EQ(r.what, "digest");
  ASSERT_TRUE(r.a && r.b);
  EXPECT_EQ(r.a->digest, FindTensor(a, 2, 3, TensorKind::kParam, "fc2.weight").digest);
  EXPECT_NE(r.a->digest, r.b->digest);
  EXPECT_NEAR(r.norm_rel_diff, 2e-3 / (1 + 2e-3), 1e-12);
  EXPECT_EQ(d.differing_steps, 4);  // steps 3..6
  EXPECT_EQ(d.last_differing_step, 6);
}

TEST(TraceDiffTest, LossDifferencesOnEveryRank) {
  const auto a = CannedTraces(2, 4);
  auto b = CannedTraces(2, 4);
  for (auto& trace : b) trace.steps[2].loss = std::nextafter(trace.steps[2].loss, 10.0);
  b[1].steps[3].loss += 0.5;

  const ScenarioDiff d = DiffTraces("s", a, b);
  ASSERT_TRUE(d.first.has_value());
  EXPECT_EQ(d.first->step, 2);
  ASSERT_EQ(d.first->losses.size(), 2u);
  const LossDifference& l = d.first->losses[1];
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.a, a[1].steps[2].loss);
  EXPECT_EQ(l.b, b[1].steps[2].loss);
  EXPECT_GT(l.abs_diff, 0.0);
  EXPECT_LT(l.rel_diff, 1e-15);  // one ulp
  EXPECT_TRUE(d.first->tensors.empty());
  EXPECT_EQ(d.differing_steps, 2);
}

TEST(TraceDiffTest, TensorsComeInRecordOrderWhicheverRankDiffers) {
  const auto a = CannedTraces(3, 3);
  auto b = CannedTraces(3, 3);
  Corrupt(b, 0, TensorKind::kGrad, "fc1.bias", 2);    // recorded after the params
  Corrupt(b, 2, TensorKind::kParam, "fc1.bias", 2);   // recorded before the grads
  Corrupt(b, 1, TensorKind::kParam, "fc1.bias", 2);

  const ScenarioDiff d = DiffTraces("s", a, b);
  ASSERT_TRUE(d.first.has_value());
  ASSERT_EQ(d.first->tensors.size(), 2u);
  EXPECT_EQ(d.first->tensors[0].kind, TensorKind::kParam);
  EXPECT_EQ(d.first->tensors[0].name, "fc1.bias");
  EXPECT_THAT(d.first->tensors[0].Ranks(), ElementsAre(1, 2));
  EXPECT_EQ(d.first->tensors[1].kind, TensorKind::kGrad);
  EXPECT_THAT(d.first->tensors[1].Ranks(), ElementsAre(0));
}

TEST(TraceDiffTest, ARankThatStoppedEarlierIsAGapAtTheStepAfter) {
  const auto a = CannedTraces(2, 5);
  auto b = CannedTraces(2, 5);
  Cut(b, 1, 2);
  b[1].truncated = true;
  b[1].truncation_note = "rank-1.trace:9: record cut after 12 bytes";

  const ScenarioDiff d = DiffTraces("s", a, b);
  EXPECT_EQ(d.verdict(), Verdict::kDifferent);
  ASSERT_TRUE(d.first.has_value());
  EXPECT_EQ(d.first->step, 3);
  ASSERT_EQ(d.first->gaps.size(), 1u);
  EXPECT_EQ(d.first->gaps[0].rank, 1);
  EXPECT_FALSE(d.first->gaps[0].missing_in_a);
  EXPECT_EQ(d.first->gaps[0].last_step, 2);
  EXPECT_TRUE(d.first->tensors.empty());  // rank 0 still agrees
  EXPECT_EQ(d.steps_compared, 6);         // rank 0 compared every step
  EXPECT_THAT(d.notes, ElementsAre(HasSubstr("B rank 1: trace truncated (rank-1.trace:9")));
}

TEST(TraceDiffTest, WorldSizeMismatchIsADifferenceAndCommonRanksAreCompared) {
  const auto a = CannedTraces(4, 2);
  auto b = CannedTraces(2, 2);
  const ScenarioDiff same_prefix = DiffTraces("s", a, b);
  EXPECT_EQ(same_prefix.verdict(), Verdict::kDifferent);
  EXPECT_FALSE(same_prefix.first.has_value());
  EXPECT_THAT(same_prefix.notes, ElementsAre(HasSubstr("world size differs: 4 ranks in A, 2 in B")));

  Corrupt(b, 1, TensorKind::kBuffer, "bn.running_mean", 1);
  const ScenarioDiff d = DiffTraces("s", a, b);
  ASSERT_TRUE(d.first.has_value());
  EXPECT_EQ(d.first->step, 1);
  EXPECT_EQ(d.first->tensors[0].name, "bn.running_mean");
}

TEST(TraceDiffTest, DtypeNumelAndMissingTensors) {
  const auto a = CannedTraces(1, 2);
  auto b = CannedTraces(1, 2);
  FindTensor(b, 0, 1, TensorKind::kParam, "fc1.weight").dtype = "bfloat16";
  FindTensor(b, 0, 1, TensorKind::kParam, "fc1.bias").numel = 7;
  auto& tensors = b[0].steps[1].tensors;
  TensorRecord extra = tensors.back();
  extra.name = "fc3.weight";
  tensors.push_back(extra);
  tensors.erase(tensors.begin() + 2);  // fc2.weight (param)

  const ScenarioDiff d = DiffTraces("s", a, b);
  ASSERT_TRUE(d.first.has_value());
  ASSERT_EQ(d.first->tensors.size(), 4u);
  EXPECT_EQ(d.first->tensors[0].per_rank[0].what, "dtype float32 vs bfloat16");
  EXPECT_EQ(d.first->tensors[1].per_rank[0].what, "numel 128 vs 7");
  EXPECT_EQ(d.first->tensors[2].name, "fc2.weight");
  EXPECT_EQ(d.first->tensors[2].per_rank[0].what, "only in A");
  EXPECT_FALSE(d.first->tensors[2].per_rank[0].b.has_value());
  EXPECT_EQ(d.first->tensors[3].name, "fc3.weight");
  EXPECT_EQ(d.first->tensors[3].per_rank[0].what, "only in B");
}

TEST(TraceDiffTest, SameDigestDifferentNormIsNotADifference) {
  // The digest is the content; a norm is derived from it and only says by how much.
  const auto a = CannedTraces(1, 1);
  auto b = CannedTraces(1, 1);
  FindTensor(b, 0, 1, TensorKind::kParam, "fc1.weight").norm += 1e-12;
  EXPECT_EQ(DiffTraces("s", a, b).verdict(), Verdict::kIdentical);
}

TEST(TraceDiffTest, NoStepInCommonIsNothingToCompare) {
  auto a = CannedTraces(2, 2), b = CannedTraces(2, 2);
  for (auto* run : {&a, &b}) {
    for (RankTrace& t : *run) {
      t.steps.clear();
      t.footer.reset();
    }
  }
  const ScenarioDiff d = DiffTraces("s", a, b);
  EXPECT_EQ(d.verdict(), Verdict::kNotCompared);
  EXPECT_EQ(d.steps_compared, 0);
}

}  // namespace
}  // namespace lockstep
