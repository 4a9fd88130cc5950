#include "checkers/determinism_checker.h"

#include <gtest/gtest.h>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(DeterminismCheckerTest, QuietWhenTheRepeatIsIdentical) {
  CannedRun run(4, 5);
  CannedRun repeat(4, 5);
  CheckContext ctx = run.Context();
  ctx.repeat = &repeat.traces;
  EXPECT_TRUE(DeterminismChecker().Check(ctx).empty());
}

TEST(DeterminismCheckerTest, NamesTheFirstDifferingStepRanksAndTensor) {
  CannedRun run(4, 5);
  CannedRun repeat(4, 5);
  repeat.Diverge(1, TensorKind::kGrad, "w2", 3);
  repeat.Diverge(3, TensorKind::kParam, "w1", 4);
  repeat.Step(1, 3).loss += 1e-12;
  CheckContext ctx = run.Context();
  ctx.repeat = &repeat.traces;
  auto f = DeterminismChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "determinism");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].tensor, "w2");
  EXPECT_NE(f[0].message.find("rank 1: loss"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("grad w2 digest"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].details.at("later_steps"), "2");
}

TEST(DeterminismCheckerTest, AShorterFinishedRepeatDiffers) {
  CannedRun run(2, 4);
  CannedRun repeat(2, 3);
  CheckContext ctx = run.Context();
  ctx.repeat = &repeat.traces;
  auto f = DeterminismChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 4);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
}

// A repeat cut short (a crash or a kill: no footer) lacks its later steps; that is for `crash`
// and `hang`, not a difference between the runs.
TEST(DeterminismCheckerTest, ARepeatCutShortIsQuietAboutTheStepsItLacks) {
  CannedRun run(2, 4);
  CannedRun repeat(2, 3);
  for (RankTrace& t : repeat.traces) t.footer.reset();
  CheckContext ctx = run.Context();
  ctx.repeat = &repeat.traces;
  EXPECT_TRUE(DeterminismChecker().Check(ctx).empty());
  // What it did record is still compared.
  repeat.Diverge(1, TensorKind::kParam, "w1", 2);
  auto f = DeterminismChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].tensor, "w1");
}

TEST(DeterminismCheckerTest, WithoutARepeatItIsAnError) {
  CannedRun run(2, 3);
  auto f = DeterminismChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
  CannedRun other(3, 3);
  CheckContext ctx = run.Context();
  ctx.repeat = &other.traces;
  f = DeterminismChecker().Check(ctx);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].outcome, FindingOutcome::kError);
}

}  // namespace
}  // namespace lockstep
