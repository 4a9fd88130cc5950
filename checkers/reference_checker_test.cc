#include "checkers/reference_checker.h"

#include <gtest/gtest.h>

#include <cmath>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(ReferenceCheckerTest, QuietWhenTheCurvesAgreeWithinTolerance) {
  CannedRun run(4, 5);
  CannedRun ref(1, 5);
  // Per-rank losses differ (local batches) but their mean is the reference's loss.
  for (int64_t s = 1; s <= 5; ++s) {
    run.Step(0, s).loss += 0.1;
    run.Step(1, s).loss -= 0.1;
    ref.Step(0, s).loss *= 1.0 + 5e-6;  // inside rtol 1e-5
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
  EXPECT_EQ(f[0].details.at("rel_diff"), "0.001");
  EXPECT_NE(f[0].message.find("2 later steps differ too"), std::string::npos) << f[0].message;
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
