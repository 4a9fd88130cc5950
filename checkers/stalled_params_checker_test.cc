#include "checkers/stalled_params_checker.h"

#include <gtest/gtest.h>

#include <limits>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

const char* kParams[] = {"w0", "w1", "w2"};

// From `from` on, `rank`'s parameters keep the digests they had at step from - 1: its optimizer
// steps (the canned gradients are non-zero, lr 0.01) and nothing moves.
void Freeze(CannedRun& run, int rank, int64_t from, const std::vector<std::string>& names = {"w0", "w1", "w2"}) {
  for (const std::string& name : names) {
    const Digest128 before = run.Tensor(rank, from - 1, TensorKind::kParam, name).digest;
    for (StepRecord& s : run.traces[static_cast<size_t>(rank)].steps) {
      if (s.step >= from) run.Tensor(rank, s.step, TensorKind::kParam, name).digest = before;
    }
  }
}

// The probe's record of an optimizer that holds none of the model's parameters: no gradient, no
// state, its parameters never change, and no step 0.
void OptimizerHoldsOtherTensors(CannedRun& run, int rank) {
  Freeze(run, rank, 1);
  for (StepRecord& s : run.traces[static_cast<size_t>(rank)].steps) {
    if (s.step == 0) continue;
    std::vector<TensorRecord> kept;
    for (const TensorRecord& t : s.tensors) {
      if (t.kind == TensorKind::kParam) kept.push_back(t);
    }
    s.tensors = kept;
    s.grad_norm = std::numeric_limits<double>::quiet_NaN();
  }
  auto& steps = run.traces[static_cast<size_t>(rank)].steps;
  steps.erase(steps.begin());  // a probed program's trace starts at step 1
}

TEST(StalledParamsCheckerTest, QuietOnACleanRun) {
  CannedRun run(4, 6);
  EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty());
}

TEST(StalledParamsCheckerTest, NothingMovesThoughTheGradientsShouldHaveMovedIt) {
  CannedRun run(2, 6);
  for (int r : {0, 1}) Freeze(run, r, 3);  // every rank agrees: the replica checkers see nothing
  auto f = StalledParamsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "stalled_params");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].tensor, "w0");
  EXPECT_EQ(f[0].message,
            "stalled training from step 3 on ranks 0,1: not one of the 3 parameters changed (steps 3-6, 4 records) "
            "although 3 had a gradient that should have moved them (first: w0, gradient norm 0.1, lr 0.01): the "
            "optimizer's step changed nothing (does it hold other tensors than the model's, or is its update "
            "overwritten before the next step?)");
  EXPECT_EQ(f[0].details.at("rank1_stalled_steps"), "3-6");
  EXPECT_EQ(f[0].details.at("gradients"), "non-zero");
}

// The corpus's fsdp_optimizer_before_wrap: the optimizer steps over parameters none of which has a
// gradient. Caught at the first record, which has no earlier one to compare with.
TEST(StalledParamsCheckerTest, AnOptimizerWhoseParametersHaveNoGradientAtAll) {
  CannedRun run(2, 4);
  run.scenario.steps = 0;
  for (int r : {0, 1}) OptimizerHoldsOtherTensors(run, r);
  auto f = StalledParamsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].message,
            "stalled training from step 1 on ranks 0,1: the optimizer stepped after a loss was backpropagated, but "
            "not one of the 3 parameters it steps had a gradient, and none changed (steps 1-4, 4 records, lr 0.01): "
            "it holds tensors the backward pass never reaches (an optimizer built before the model was wrapped or "
            "sharded, which replaced the parameters it holds?)");
  EXPECT_EQ(f[0].details.at("gradients"), "none");
}

// Since trace 2.4 the probe writes a step 0 as the first optimizer step begins: the parameters of
// the models it knew then (here the optimizer's own, w0..w2), while the records from step 1 also
// hold a model it met at its first forward (FSDP's flat parameter). A parameter new since step 0
// is no changed model: still caught at step 1. A parameter new since a later record still is.
TEST(StalledParamsCheckerTest, AParameterFirstSeenAfterStepZeroIsNoChangedModel) {
  CannedRun run(2, 4);
  run.scenario.steps = 0;
  for (int r : {0, 1}) {
    OptimizerHoldsOtherTensors(run, r);
    StepRecord initial;
    initial.step = 0;
    initial.lr = 0.0;
    initial.loss_reported = false;
    for (const TensorRecord& t : run.Step(r, 1).tensors) initial.tensors.push_back(t);
    auto& steps = run.traces[static_cast<size_t>(r)].steps;
    for (StepRecord& s : steps) {
      TensorRecord flat = s.tensors.front();
      flat.name = "_flat_param";
      flat.digest = testing::FakeDigest("flat");  // never stepped either
      s.tensors.push_back(flat);
    }
    steps.insert(steps.begin(), initial);
  }
  auto f = StalledParamsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].details.at("gradients"), "none");
}

TEST(StalledParamsCheckerTest, RanksThatStallLaterAreNamedWithTheirStep) {
  CannedRun run(3, 6);
  Freeze(run, 0, 2);
  Freeze(run, 2, 4);
  auto f = StalledParamsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_NE(f[0].message.find("; rank 2 from step 4"), std::string::npos) << f[0].message;
}

// One step that moves nothing may be the program's own skip (a batch it drops, an optimizer
// wrapper that skips a spike): only two running are a stall.
TEST(StalledParamsCheckerTest, QuietOnOneStepThatMovesNothing) {
  CannedRun run(2, 6);
  Freeze(run, 0, 3);
  for (const char* name : kParams) run.Tensor(0, 4, TensorKind::kParam, name).digest = testing::FakeDigest(name);
  EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty());
}

// Some parameters stay put while others train: frozen (no gradient), a group whose lr is 0, an
// update that rounds away, a shard another rank steps. Only a record where nothing moved counts.
TEST(StalledParamsCheckerTest, QuietWhileAnyParameterMoves) {
  CannedRun run(2, 6);
  for (int r : {0, 1}) Freeze(run, r, 1, {"w0", "w1"});
  EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty());
}

// Nothing moves, and nothing should have: lr 0 (warmup, or an lr the probe could not read), a
// gradient that is not finite (GradScaler skips the step), zero gradients, an update below the
// parameter's rounding unit (bf16 with a tiny lr), no gradient on a rank that backpropagated no
// loss (a pipeline stage before the last).
TEST(StalledParamsCheckerTest, QuietWhenTheStepShouldNotHaveMovedAnything) {
  auto frozen = [] {
    CannedRun run(2, 6);
    for (int r : {0, 1}) Freeze(run, r, 3);
    return run;
  };
  {
    CannedRun run = frozen();
    for (int r : {0, 1}) {
      for (StepRecord& s : run.traces[static_cast<size_t>(r)].steps) s.lr = 0.0;
    }
    EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty()) << "lr 0";
  }
  {
    CannedRun run = frozen();
    for (int r : {0, 1}) {
      for (int64_t step = 3; step <= 6; ++step) {
        run.Tensor(r, step, TensorKind::kGrad, "w2").norm = std::numeric_limits<double>::infinity();
      }
    }
    EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty()) << "inf gradient";
  }
  {
    CannedRun run = frozen();
    for (int r : {0, 1}) {
      for (int64_t step = 1; step <= 6; ++step) {
        for (const char* name : kParams) run.Tensor(r, step, TensorKind::kGrad, name).norm = 0.0;
      }
    }
    EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty()) << "zero gradients";
  }
  {
    CannedRun run = frozen();
    for (int r : {0, 1}) {
      for (StepRecord& s : run.traces[static_cast<size_t>(r)].steps) {
        s.lr = 1e-5;  // 1e-5 x 0.1 = 1e-6 < 2^-7 x 1.03: a bf16 update that may round away everywhere
        for (TensorRecord& t : s.tensors) t.dtype = "bfloat16";
      }
    }
    EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty()) << "bf16 underflow";
    // The same lr in float32 cannot round away: 1e-6 >= 2^-23 x 3.06.
    for (int r : {0, 1}) {
      for (StepRecord& s : run.traces[static_cast<size_t>(r)].steps) {
        for (TensorRecord& t : s.tensors) t.dtype = "float32";
      }
    }
    EXPECT_EQ(StalledParamsChecker().Check(run.Context()).size(), 1u) << "float32";
  }
  {
    CannedRun run(2, 4);
    for (int r : {0, 1}) {
      OptimizerHoldsOtherTensors(run, r);
      for (StepRecord& s : run.traces[static_cast<size_t>(r)].steps) {
        s.loss_reported = false;
        s.loss = std::numeric_limits<double>::quiet_NaN();
      }
    }
    EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty()) << "no loss, no gradient";
  }
}

// A parameter that appears, or changes shape, between records: the model changed, no stall.
TEST(StalledParamsCheckerTest, QuietWhenTheRecordsParametersChange) {
  CannedRun run(2, 6);
  for (int r : {0, 1}) {
    Freeze(run, r, 3);
    run.Tensor(r, 4, TensorKind::kParam, "w1").numel = 64;
    run.Tensor(r, 6, TensorKind::kParam, "w2").name = "w3";
  }
  // Only step 3 stalls, alone: step 4 changes w1's shape, step 5 changes it back, step 6 has a new w3.
  EXPECT_TRUE(StalledParamsChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
