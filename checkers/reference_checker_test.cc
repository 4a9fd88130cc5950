#include "checkers/reference_checker.h"

#include <gtest/gtest.h>

#include <cmath>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Multiplies the norm of every tensor of `run` at `step` (all ranks) by `factor`.
void ScaleNorms(CannedRun& run, int64_t step, double factor) {
  for (auto& t : run.traces) {
    for (auto& s : t.steps) {
      if (s.step != step) continue;
      for (auto& rec : s.tensors) rec.norm *= factor;
    }
  }
}

TEST(ReferenceCheckerTest, QuietWhenTheCurvesAgreeWithinTolerance) {
  CannedRun run(4, 5);
  CannedRun ref(1, 5);
  // Per-rank losses differ (local batches) but their mean is the reference's loss.
  for (int64_t s = 1; s <= 5; ++s) {
    run.Step(0, s).loss += 0.1;
    run.Step(1, s).loss -= 0.1;
    ref.Step(0, s).loss *= 1.0 + 5e-6;  // inside the floor rtol 1e-5
  }
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  EXPECT_TRUE(ReferenceChecker().Check(ctx).empty());
}

TEST(ReferenceCheckerTest, NamesTheFirstStepOutsideTolerance) {
  CannedRun run(4, 6);
  CannedRun ref(1, 6);
  for (int r = 0; r < 4; ++r) {
    for (int64_t s = 4; s <= 6; ++s) run.Step(r, s).loss *= 1.001;
  }
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  auto f = ReferenceChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "reference");
  EXPECT_EQ(f[0].outcome, FindingOutcome::kFail);
  EXPECT_EQ(f[0].step, 4);
  EXPECT_TRUE(f[0].ranks.empty());
  EXPECT_EQ(f[0].details.at("rel_diff"), "0.000999");
  EXPECT_NE(f[0].message.find("2 later steps differ too"), std::string::npos) << f[0].message;
}

// The false alarm: the N-rank run differs from the reference by reassociation noise that
// grows over the steps. The split reference shows noise of the same size, so it is no finding.
TEST(ReferenceCheckerTest, NoiseMeasuredBetweenTheReferencesWidensTheTolerance) {
  CannedRun run(4, 6);
  CannedRun ref(1, 6);
  CannedRun split(1, 6);
  for (int64_t s = 1; s <= 6; ++s) {
    const double noise = 1e-5 * static_cast<double>(s);  // grows with the steps
    split.Step(0, s).loss *= 1.0 + noise;
    ScaleNorms(split, s, 1.0 - noise);
    for (int r = 0; r < 4; ++r) run.Step(r, s).loss *= 1.0 + 3 * noise;
    ScaleNorms(run, s, 1.0 + 2 * noise);
  }
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  EXPECT_FALSE(ReferenceChecker().Check(ctx).empty()) << "without the noise measurement the floor alone applies";
  ctx.reference_split = &split.traces;
  auto f = ReferenceChecker().Check(ctx);
  EXPECT_TRUE(f.empty()) << f[0].message;
}

TEST(ReferenceCheckerTest, FlagsWhatLiesFarOutsideTheMeasuredNoise) {
  CannedRun run(4, 6);
  CannedRun ref(1, 6);
  CannedRun split(1, 6);
  for (int64_t s = 1; s <= 6; ++s) ScaleNorms(split, s, 1.0 + 1e-6);
  // Rank 2's replica of w1 leaves the envelope at step 3 (1e-3 >> 10 x 1e-6 + 1e-5).
  run.Diverge(2, TensorKind::kParam, "w1", 3, 1e-3);
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  ctx.reference_split = &split.traces;
  auto f = ReferenceChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].tensor, "w1");
  EXPECT_EQ(f[0].ranks, std::vector<int>{2});
  EXPECT_EQ(f[0].details.at("noise"), "1e-06");
  EXPECT_NE(f[0].message.find("param:w1"), std::string::npos) << f[0].message;
}

// ZeRO-1: rank 1 updated its shard wrongly and all-gathered it. Every replica is identical (no
// cross-rank check can see it); the finding names the rank whose shard holds the tensor.
TEST(ReferenceCheckerTest, NamesTheOwningRankOfShardedState) {
  CannedRun run(4, 5);
  CannedRun ref(1, 5);
  // Flat layout: w0 [0,32) w1 [32,64) w2 [64,96); 4 shards of 24 elements.
  for (int r = 0; r < 4; ++r) {
    for (auto& s : run.traces[static_cast<size_t>(r)].steps) {
      TensorRecord shard;
      shard.name = "zero1.grad_shard" + std::to_string(r);
      shard.kind = TensorKind::kGrad;
      shard.numel = 24;
      shard.replicated = false;
      s.tensors.push_back(shard);
    }
  }
  // Rank 1's shard [24,48) reaches into w0 and w1.
  for (int r = 0; r < 4; ++r) {
    run.Diverge(r, TensorKind::kParam, "w0", 2, 1e-3);
    run.Diverge(r, TensorKind::kParam, "w1", 2, 1e-3);
  }
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  auto f = ReferenceChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, std::vector<int>{1});
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"w0", "w1"}));
  EXPECT_NE(f[0].message.find("zero1 shard of rank 1"), std::string::npos) << f[0].message;
}

TEST(ReferenceCheckerTest, UsesTheScenarioTolerances) {
  CannedRun run(2, 3);
  CannedRun ref(1, 3);
  for (int r = 0; r < 2; ++r) run.Step(r, 2).loss *= 1.001;
  run.scenario.tolerances.reference_rtol = 1e-2;
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  EXPECT_TRUE(ReferenceChecker().Check(ctx).empty());
}

TEST(ReferenceCheckerTest, ANanLossDiffers) {
  CannedRun run(2, 3);
  CannedRun ref(1, 3);
  run.Step(1, 3).loss = std::nan("");
  CheckContext ctx = run.Context();
  ctx.reference = &ref.traces;
  auto f = ReferenceChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
}

TEST(ReferenceCheckerTest, WithoutAReferenceItIsAnError) {
  CannedRun run(2, 3);
  auto f = ReferenceChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
  std::vector<RankTrace> empty_ref(1);
  CheckContext ctx = run.Context();
  ctx.reference = &empty_ref;
  f = ReferenceChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
}

}  // namespace
}  // namespace lockstep
