#include "checkers/finite_checker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(FiniteCheckerTest, QuietOnACleanRunDespiteNanAtStepZero) {
  CannedRun run(2, 4);
  ASSERT_TRUE(std::isnan(run.Step(0, 0).loss));
  EXPECT_TRUE(FiniteChecker().Check(run.Context()).empty());
}

// The probe writes a NaN gradient norm for a record without any gradient (an optimizer that
// stepped over parameters none of which had one): no norm to judge, stalled_params' case. With a
// gradient recorded, a NaN norm is non-finite.
TEST(FiniteCheckerTest, ANanGradNormWithoutAnyGradientIsNotJudged) {
  CannedRun run(2, 4);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int r : {0, 1}) {
    StepRecord& s = run.Step(r, 2);
    s.grad_norm = nan;
    std::vector<TensorRecord> kept;
    for (const TensorRecord& t : s.tensors) {
      if (t.kind != TensorKind::kGrad) kept.push_back(t);
    }
    s.tensors = kept;
  }
  EXPECT_TRUE(FiniteChecker().Check(run.Context()).empty());
  run.Step(1, 3).grad_norm = nan;  // its gradients are recorded
  auto f = FiniteChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
}

TEST(FiniteCheckerTest, NamesTheFirstStepRanksAndTensor) {
  CannedRun run(4, 6);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  run.Step(2, 3).loss = nan;
  run.Step(2, 3).grad_norm = inf;
  run.Tensor(2, 3, TensorKind::kGrad, "w1").norm = inf;
  run.Step(1, 3).loss = inf;
  for (int r = 0; r < 4; ++r) run.Step(r, 5).loss = nan;
  auto f = FiniteChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "finite");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(f[0].tensor, "w1");
  EXPECT_EQ(f[0].message,
            "non-finite values at step 3: rank 1: loss inf, rank 2: loss nan, grad norm inf, grad w1 norm inf; "
            "non-finite again at 1 later step (last: 5)");
}

// A loss scaler's overflow: an infinite loss and gradients at step 3, and every rank's weights
// as they were at step 2 (the update was skipped). Not a finding; the same values with the weights
// moved on any rank are.
TEST(FiniteCheckerTest, AnOverflowWhoseUpdateEveryRankSkippedIsNotAFinding) {
  const double inf = std::numeric_limits<double>::infinity();
  auto overflow = [&](CannedRun& run) {
    run.Step(1, 3).loss = inf;
    run.Step(1, 3).grad_norm = inf;
    run.Tensor(1, 3, TensorKind::kGrad, "w0").norm = inf;
    for (int r : {0, 1}) {
      for (const char* p : {"w0", "w1", "w2"}) {
        run.Tensor(r, 3, TensorKind::kParam, p).digest = run.Tensor(r, 2, TensorKind::kParam, p).digest;
      }
    }
  };
  CannedRun skipped(2, 4);
  overflow(skipped);
  EXPECT_TRUE(FiniteChecker().Check(skipped.Context()).empty());

  CannedRun applied(2, 4);
  overflow(applied);
  applied.Tensor(0, 3, TensorKind::kParam, "w2").digest = testing::FakeDigest("moved");
  auto f = FiniteChecker().Check(applied.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);

  CannedRun poisoned(2, 4);  // a non-finite parameter is never a skipped overflow
  overflow(poisoned);
  poisoned.Tensor(1, 3, TensorKind::kParam, "w1").norm = inf;
  ASSERT_EQ(FiniteChecker().Check(poisoned.Context()).size(), 1u);
}

TEST(FiniteCheckerTest, ANonFiniteTensorAtStepZeroCounts) {
  CannedRun run(2, 2);
  run.Tensor(0, 0, TensorKind::kParam, "w2").norm = std::numeric_limits<double>::quiet_NaN();
  auto f = FiniteChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 0);
  EXPECT_EQ(f[0].tensor, "w2");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
}


// A rank that reported no loss (a pipeline stage before the last) is not a NaN loss; a reported
// NaN beside it still is.
TEST(FiniteCheckerTest, ALossNotReportedIsNotNonFinite) {
  CannedRun run(2, 3);
  for (int r = 0; r < 2; ++r) {
    for (StepRecord& s : run.traces[r].steps) {
      s.loss = std::numeric_limits<double>::quiet_NaN();
      s.loss_reported = r == 1 && s.step == 2;  // rank 1 reports NaN at step 2
    }
  }
  auto f = FiniteChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  run.Step(1, 2).loss_reported = false;
  EXPECT_TRUE(FiniteChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
