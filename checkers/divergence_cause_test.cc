// Each cause fires on the records of its bug and stays quiet on records that only look alike,
// through the replica checkers that attach it (as a run's report shows it) and as a rule alone.
#include "checkers/divergence_cause.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "checkers/buffers_checker.h"
#include "checkers/optimizer_state_checker.h"
#include "checkers/replica_weights_checker.h"
#include "checkers/synced_grads_checker.h"
#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::CannedRun;

const char* const kParams[] = {"w0", "w1", "w2"};

Finding OnlyFinding(const std::vector<Finding>& findings) {
  EXPECT_EQ(findings.size(), 1u);
  return findings.empty() ? Finding{} : findings.front();
}

// The canned run's all_reduces of `step`, on every rank, gone: the gradients were not averaged.
void DropReductions(CannedRun& run, int64_t step) {
  for (RankTrace& t : run.traces) {
    t.collectives.erase(std::remove_if(t.collectives.begin(), t.collectives.end(),
                                       [&](const CollectiveRecord& c) { return c.step == step && c.op == "all_reduce"; }),
                        t.collectives.end());
  }
}

// Each rank trains alone from step 1: every parameter and gradient differs on every rank.
void EachRankAlone(CannedRun& run, int ranks) {
  for (int r = 1; r < ranks; ++r) {
    for (const char* p : kParams) {
      run.Diverge(r, TensorKind::kParam, p, 1, 0.01 * r);
      run.Diverge(r, TensorKind::kGrad, p, 1, 0.02 * r);
    }
  }
}

// The canned run's initial broadcast (step 0) gone: no DDP ever sent the initial state.
void DropInitialBroadcast(CannedRun& run) {
  for (RankTrace& t : run.traces) {
    t.collectives.erase(std::remove_if(t.collectives.begin(), t.collectives.end(),
                                       [](const CollectiveRecord& c) { return c.step == 0 && c.op == "broadcast"; }),
                        t.collectives.end());
  }
}

TEST(DivergenceCauseTest, NoReductionInTheStepIsAModelWithoutDdp) {
  CannedRun run(3, 3);
  EachRankAlone(run, 3);
  DropInitialBroadcast(run);
  for (int64_t s = 1; s <= 3; ++s) DropReductions(run, s);
  const Finding weights = OnlyFinding(ReplicaWeightsChecker().Check(run.Context()));
  EXPECT_EQ(weights.cause,
            "no gradient all-reduce was issued on any rank in step 1: the model is probably not wrapped in DDP "
            "(its gradients are never averaged across ranks)");
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(run.Context())).cause, HasSubstr("not wrapped in DDP"));
}

TEST(DivergenceCauseTest, NoReductionAfterAnInitialBroadcastIsABypassedDdp) {
  // examples/lightning_manual_loss_backward.py: DDP broadcast the initial state, then
  // `loss.backward()` ran outside its hooks and no gradient was ever all-reduced.
  CannedRun run(3, 3);
  EachRankAlone(run, 3);
  for (int64_t s = 1; s <= 3; ++s) DropReductions(run, s);
  const Finding weights = OnlyFinding(ReplicaWeightsChecker().Check(run.Context()));
  EXPECT_EQ(weights.cause,
            "no gradient all-reduce was issued on any rank in step 1, although the initial state was broadcast at "
            "step 0 (as DDP does when it wraps a model): the gradient reduction was bypassed (a backward DDP does not "
            "see, e.g. `loss.backward()` where Lightning's manual optimization needs `self.manual_backward(loss)`, or "
            "a `no_sync()` that never ends)");
  EXPECT_THAT(weights.cause, Not(HasSubstr("not wrapped in DDP")));

  // A broadcast seed (int64) at step 0 is not the model's initial state.
  for (RankTrace& t : run.traces) {
    for (CollectiveRecord& c : t.collectives) {
      if (c.step == 0) c.dtype = "int64";
    }
  }
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(run.Context())).cause, HasSubstr("not wrapped in DDP"));
}

TEST(DivergenceCauseTest, AReductionOnOneRankIsNotAMissingDdp) {
  CannedRun run(3, 3);
  EachRankAlone(run, 3);
  CannedRun with_one = run;
  for (int64_t s = 1; s <= 3; ++s) DropReductions(run, s);
  // The same divergence with the all-reduces recorded: the records show a reduction.
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(with_one.Context())).cause, Not(HasSubstr("DDP")));
  // Rank 0 alone still all-reduces in step 1 (the others do not): not "on any rank".
  for (const CollectiveRecord& c : with_one.traces[0].collectives) {
    if (c.step == 1 && c.op == "all_reduce") run.traces[0].collectives.push_back(c);
  }
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(run.Context())).cause, Not(HasSubstr("DDP")));
}

TEST(DivergenceCauseTest, StepZeroHasNoGradientsToReduce) {
  CannedRun run(3, 2);
  run.Diverge(1, TensorKind::kParam, "w0", 0);  // differs after the initial broadcast
  DropReductions(run, 0);
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(run.Context())).cause, Not(HasSubstr("DDP")));
}

// From step 4 rank 2 steps with the summed gradient: 3x the others' on every parameter, and its
// weights follow.
void ForgotDivide(CannedRun& run, int rank, double factor) {
  for (const char* p : kParams) {
    run.Diverge(rank, TensorKind::kGrad, p, 4, factor - 1.0);
    run.Diverge(rank, TensorKind::kParam, p, 4, 1e-2);
  }
}

TEST(DivergenceCauseTest, GradientsWorldSizeTimesTheOthersAreASumNotDivided) {
  CannedRun run(3, 6);
  ForgotDivide(run, 2, 3.0);
  const Finding grads = OnlyFinding(SyncedGradsChecker().Check(run.Context()));
  EXPECT_EQ(grads.step, 4);
  EXPECT_EQ(grads.cause,
            "rank 2's gradients are 3x the others' (every divergent gradient at step 4): a sum not divided by the "
            "world size (3)");
  // The weights that diverge at the same step carry the same cause.
  EXPECT_EQ(OnlyFinding(ReplicaWeightsChecker().Check(run.Context())).cause, grads.cause);
}

TEST(DivergenceCauseTest, AnotherFactorOrOneGradientIsNotASumNotDivided) {
  CannedRun twice(3, 6);
  ForgotDivide(twice, 2, 2.0);  // 2x in a world of 3
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(twice.Context())).cause, Not(HasSubstr("not divided")));

  CannedRun mixed(3, 6);
  mixed.Diverge(2, TensorKind::kGrad, "w0", 4, 2.0);  // 3x
  mixed.Diverge(2, TensorKind::kGrad, "w1", 4, 0.5);  // 1.5x
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(mixed.Context())).cause, Not(HasSubstr("not divided")));

  CannedRun two_ranks(3, 6);  // different ranks odd on different tensors
  two_ranks.Diverge(2, TensorKind::kGrad, "w0", 4, 2.0);
  two_ranks.Diverge(1, TensorKind::kGrad, "w1", 4, 2.0);
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(two_ranks.Context())).cause, Not(HasSubstr("not divided")));
}

TEST(DivergenceCauseTest, OnlyRunningStatisticsDivergingIsBatchNormWithoutBroadcast) {
  CannedRun run(3, 4);
  for (int r = 1; r < 3; ++r) run.Diverge(r, TensorKind::kBuffer, "bn.running_mean", 1, 0.01 * r);
  EXPECT_EQ(OnlyFinding(BuffersChecker().Check(run.Context())).cause,
            "only buffers diverge (parameters and gradients agree): BatchNorm statistics are not broadcast "
            "(broadcast_buffers=False?)");
}

TEST(DivergenceCauseTest, OtherBuffersAreNotCalledBatchNorm) {
  CannedRun run(3, 4);
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) {
      for (TensorRecord& rec : s.tensors) {
        if (rec.kind == TensorKind::kBuffer) rec.name = "rope.cache";
      }
    }
  }
  run.Diverge(1, TensorKind::kBuffer, "rope.cache", 2);
  EXPECT_EQ(OnlyFinding(BuffersChecker().Check(run.Context())).cause,
            "only buffers diverge (parameters and gradients agree): buffers are not synchronized across ranks");
}

TEST(DivergenceCauseTest, BuffersWithWeightsAreNotOnlyBuffers) {
  CannedRun run(3, 4);
  run.Diverge(1, TensorKind::kBuffer, "bn.running_mean", 2);
  run.Diverge(1, TensorKind::kParam, "w1", 2);
  EXPECT_THAT(OnlyFinding(BuffersChecker().Check(run.Context())).cause, Not(HasSubstr("only buffers")));
}

TEST(DivergenceCauseTest, RoundingLevelDifferencesAreANonDeterministicReduction) {
  CannedRun run(3, 4);
  run.Diverge(1, TensorKind::kGrad, "w0", 2, 3e-7);
  run.Diverge(1, TensorKind::kParam, "w0", 2, 1e-7);
  const Finding grads = OnlyFinding(SyncedGradsChecker().Check(run.Context()));
  EXPECT_EQ(grads.cause,
            "differences at rounding level only (max relative norm difference 3e-07): probably a non-deterministic "
            "reduction (the ranks summed in different orders)");
}

TEST(DivergenceCauseTest, ALargerOrNoNormDifferenceIsNotRoundingLevel) {
  CannedRun larger(3, 4);
  larger.Diverge(1, TensorKind::kGrad, "w0", 2, 3e-7);
  larger.Diverge(1, TensorKind::kParam, "w0", 2, 1e-3);  // one tensor beyond rounding
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(larger.Context())).cause, Not(HasSubstr("rounding")));

  CannedRun same_norm(3, 4);  // other bits, same norm: nothing says by how little
  same_norm.Diverge(1, TensorKind::kGrad, "w0", 2, 0.0);
  EXPECT_EQ(OnlyFinding(SyncedGradsChecker().Check(same_norm.Context())).cause, "");
}

TEST(DivergenceCauseTest, WeightsThatDifferWhileTheGradientsAgreeChangedOutsideTheUpdate) {
  // examples/inplace_weight_edit.py: rank 1 scales a weight by a hair after the optimizer step;
  // the gradients, reduced in the step (two all_reduces a step on every rank), agree.
  CannedRun run(3, 4);
  run.Diverge(1, TensorKind::kParam, "w0", 3, 1.4e-6);
  const Finding weights = OnlyFinding(ReplicaWeightsChecker().Check(run.Context()));
  EXPECT_THAT(weights.message, HasSubstr("rounding level"));  // what the message has always said
  EXPECT_EQ(weights.cause,
            "rank 1's parameters differ while its reduced gradients agree (6 reducing collectives in step 3; the "
            "parameters agreed at step 2): the weights changed outside the synchronized update (an edit after the "
            "optimizer step, an optimizer setting such as the learning rate or gradient clipping that differs across "
            "ranks, or a sharded optimizer's skipped all-gather)");

  // Two ranks of four, each edited its own way: no majority, so no rank is blamed.
  CannedRun two(4, 3);
  two.Diverge(2, TensorKind::kParam, "w1", 2);
  two.Diverge(3, TensorKind::kParam, "w1", 2);
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(two.Context())).cause,
              HasSubstr("the ranks' parameters differ while their reduced gradients agree"));
}

TEST(DivergenceCauseTest, AgreeingGradientsSayNothingWhereNoneWereRecordedOrReduced) {
  // ZeRO's gradient shards are not replicated: no recorded gradient vouches for the update.
  CannedRun unrecorded(3, 4);
  for (RankTrace& t : unrecorded.traces) {
    for (StepRecord& s : t.steps) {
      for (TensorRecord& rec : s.tensors) rec.replicated = rec.replicated && rec.kind != TensorKind::kGrad;
    }
  }
  unrecorded.Diverge(1, TensorKind::kParam, "w0", 3);
  EXPECT_EQ(OnlyFinding(ReplicaWeightsChecker().Check(unrecorded.Context())).cause, "");

  // The gradients differ too: the update is not the only thing that went wrong.
  CannedRun grads_too(3, 4);
  grads_too.Diverge(1, TensorKind::kParam, "w0", 3);
  grads_too.Diverge(1, TensorKind::kGrad, "w0", 3, 0.5);
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(grads_too.Context())).cause,
              Not(HasSubstr("outside the synchronized update")));

  // Weights that differ after the initial broadcast (step 0) had no update to step outside of.
  CannedRun initial(3, 2);
  initial.Diverge(1, TensorKind::kParam, "w0", 0);
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(initial.Context())).cause,
              Not(HasSubstr("outside the synchronized update")));

  // The parameters diverged before the optimizer state did: the state's finding does not say
  // they agreed at a step they did not.
  CannedRun params_first(3, 5);
  params_first.Diverge(1, TensorKind::kParam, "w0", 2);
  params_first.Diverge(1, TensorKind::kOptimizerState, "w0#momentum", 3);
  EXPECT_THAT(OnlyFinding(OptimizerStateChecker().Check(params_first.Context())).cause,
              HasSubstr("the parameters agreed at step 1)"));
}

// The probe's traces start after the first update (no step 0): HSDP replicas seeded apart
// differ at step 1 already, under gradients the cross-replica all-reduce made agree.
void RecordFromStepOne(CannedRun& run) {
  for (RankTrace& t : run.traces) {
    t.steps.erase(std::remove_if(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.step == 0; }),
                  t.steps.end());
  }
}

TEST(DivergenceCauseTest, WeightsThatDifferAtTheFirstRecordedStepDifferedFromTheStart) {
  CannedRun run(3, 4);
  RecordFromStepOne(run);
  run.Diverge(2, TensorKind::kParam, "w0", 1);
  run.Diverge(2, TensorKind::kParam, "w1", 1);
  EXPECT_EQ(OnlyFinding(ReplicaWeightsChecker().Check(run.Context())).cause,
            "rank 2's parameters differ at the first recorded step (1) while its reduced gradients agree: the "
            "weights probably differed from the start (initialized with a seed that differs across ranks and never "
            "broadcast, or loaded from different checkpoints)");
}

TEST(DivergenceCauseTest, WeightsThatDifferAtStepZeroDifferBeforeAnyUpdate) {
  // lockstep-rank records step 0 after initialization and its broadcast (inject no_initial_broadcast).
  CannedRun run(3, 2);
  run.Diverge(1, TensorKind::kParam, "w0", 0);
  EXPECT_EQ(OnlyFinding(ReplicaWeightsChecker().Check(run.Context())).cause,
            "rank 1's parameters differ at step 0, before any update: the initial weights differ (initialized with a "
            "seed that differs across ranks and never broadcast, or loaded from different checkpoints)");
  // Only a buffer at step 0: not the weights.
  CannedRun buffer(3, 2);
  buffer.Diverge(1, TensorKind::kBuffer, "bn.running_mean", 0);
  EXPECT_THAT(OnlyFinding(BuffersChecker().Check(buffer.Context())).cause, Not(HasSubstr("initial weights")));
}

TEST(DivergenceCauseTest, WeightsThatAgreedFirstOrGradientsThatDifferAreNotTheStart) {
  CannedRun later(3, 4);
  RecordFromStepOne(later);
  later.Diverge(2, TensorKind::kParam, "w0", 2);  // agreed at step 1
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(later.Context())).cause,
              AllOf(Not(HasSubstr("from the start")), HasSubstr("the parameters agreed at step 1")));

  CannedRun grads(3, 4);
  RecordFromStepOne(grads);
  grads.Diverge(2, TensorKind::kParam, "w0", 1);
  grads.Diverge(2, TensorKind::kGrad, "w0", 1, 0.5);  // the gradients differ too: a data or sync bug
  EXPECT_THAT(OnlyFinding(ReplicaWeightsChecker().Check(grads.Context())).cause, Not(HasSubstr("from the start")));
}

TEST(DivergenceCauseTest, AnUnexplainedDivergenceHasNoCause) {
  // One rank's gradient off by half (a bit flip, a skipped reduction of one bucket): it matches
  // no rule, and the finding says what differs only.
  CannedRun run(4, 3);
  run.Diverge(2, TensorKind::kGrad, "w1", 2, 0.5);
  run.Diverge(2, TensorKind::kParam, "w1", 2);
  const Finding f = OnlyFinding(ReplicaWeightsChecker().Check(run.Context()));
  EXPECT_EQ(f.cause, "");
  EXPECT_THAT(f.message, HasSubstr("diverge at step 2"));
}

// From `from` on, `rank` records as step s the gradients the others reduced at step s + 1 (it
// skipped the optimizer step of `from` but ran its backward), and its weights differ.
void SkipStep(CannedRun& run, int rank, int64_t from, int64_t steps) {
  for (int64_t s = from; s < steps; ++s) {
    for (const char* p : kParams) run.Tensor(rank, s, TensorKind::kGrad, p) = run.Tensor(0, s + 1, TensorKind::kGrad, p);
  }
  for (const char* p : kParams) run.Diverge(rank, TensorKind::kParam, p, from, 1e-2);
}

TEST(DivergenceCauseTest, GradientsThatAreTheOthersNextStepsAreASkippedStep) {
  CannedRun run(3, 5);
  SkipStep(run, 2, 3, 5);
  for (const Finding& f : {OnlyFinding(SyncedGradsChecker().Check(run.Context())),
                           OnlyFinding(ReplicaWeightsChecker().Check(run.Context()))}) {
    EXPECT_EQ(f.step, 3) << f.checker;
    EXPECT_EQ(f.ranks, (std::vector<int>{2})) << f.checker;
    EXPECT_THAT(f.cause, AllOf(HasSubstr("rank 2's reduced gradients recorded as step 3 are those the other ranks reduced "
                                         "at step 4"),
                               HasSubstr("rank 2 skipped the optimizer step of step 3"),
                               HasSubstr("numbered one step behind")))
        << f.checker;
  }
}

TEST(DivergenceCauseTest, GradientsThatDifferOtherwiseAreNotASkippedStep) {
  // Rank 2's gradients differ from step 3 on, but are nobody's of a later step.
  CannedRun run(3, 5);
  for (const char* p : kParams) {
    run.Diverge(2, TensorKind::kGrad, p, 3);
    run.Diverge(2, TensorKind::kParam, p, 3, 1e-2);
  }
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(run.Context())).cause, Not(HasSubstr("skipped")));
  // The last recorded step: no next step to hold them against.
  CannedRun last(3, 4);
  for (const char* p : kParams) last.Diverge(2, TensorKind::kGrad, p, 4);
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(last.Context())).cause, Not(HasSubstr("skipped")));
  // Only one of the divergent gradients is the next step's.
  CannedRun partly(3, 5);
  SkipStep(partly, 2, 3, 5);
  partly.Diverge(2, TensorKind::kGrad, "w1", 3);
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(partly.Context())).cause, Not(HasSubstr("skipped")));
}

TEST(DivergenceCauseTest, TheFirstCauseThatHoldsWins) {
  // No reduction at all and rounding-level differences: the missing reduction is the cause.
  CannedRun run(3, 3);
  run.Diverge(1, TensorKind::kGrad, "w0", 1, 1e-7);
  DropReductions(run, 1);
  EXPECT_THAT(OnlyFinding(SyncedGradsChecker().Check(run.Context())).cause,
              HasSubstr("no gradient all-reduce was issued on any rank in step 1"));

  std::set<std::string_view> names;
  for (const DivergenceCause& c : DivergenceCauses()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_EQ(c.explain(DivergenceFacts{}), std::nullopt) << c.name << " fires on no divergence at all";
  }
  EXPECT_EQ(names.size(), 8u);
}

}  // namespace
}  // namespace lockstep
