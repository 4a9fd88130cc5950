#include "checkers/replica_comparison.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

TEST(ReplicaComparisonTest, CleanRunHasNoDivergence) {
  CannedRun run(4, 5);
  for (TensorKind k : {TensorKind::kParam, TensorKind::kGrad, TensorKind::kBuffer, TensorKind::kOptimizerState}) {
    EXPECT_TRUE(FindDivergences(run.traces, k).empty()) << ToString(k);
  }
}

TEST(ReplicaComparisonTest, GroupsRanksByDigestLargestFirst) {
  CannedRun run(4, 3);
  run.Diverge(2, TensorKind::kParam, "w1", 2);
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_EQ(d.size(), 2u);  // steps 2 and 3
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "w1");
  ASSERT_EQ(d[0].groups.size(), 2u);
  EXPECT_EQ(d[0].groups[0].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(d[0].groups[1].ranks, (std::vector<int>{2}));
  EXPECT_TRUE(d[0].has_majority);
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{2}));
}

TEST(ReplicaComparisonTest, WithoutMajorityRankZerosGroupIsTheReference) {
  CannedRun run(4, 2);
  run.Diverge(2, TensorKind::kParam, "w0", 1);
  run.Diverge(3, TensorKind::kParam, "w0", 1);
  run.Tensor(3, 1, TensorKind::kParam, "w0").digest = run.Tensor(2, 1, TensorKind::kParam, "w0").digest;
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].step, 1);
  EXPECT_FALSE(d[0].has_majority);
  EXPECT_EQ(d[0].groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{2, 3}));
}

TEST(ReplicaComparisonTest, AMissingTensorIsADivergence) {
  CannedRun run(3, 2);
  auto& tensors = run.Step(1, 2).tensors;
  tensors.erase(tensors.begin());  // w0 param
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "w0");
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{1}));
  EXPECT_FALSE(d[0].groups[1].digest.has_value());
}

// A rank that records a tensor as its own (not replicated) while the others hold it replicated is
// left out of that tensor's comparison, not called missing: the probe records a DDP's buffers so
// after a rank's last step, which no broadcast made equal (examples/clean_ddp_batchnorm_join.py).
TEST(ReplicaComparisonTest, ARankHoldingATensorAsItsOwnIsNotMissingIt) {
  CannedRun run(3, 2);
  TensorRecord& own = run.Tensor(0, 2, TensorKind::kBuffer, "bn.running_mean");
  own.replicated = false;
  own.digest = Digest128{1, 2};  // its own statistics: no other rank's
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kBuffer).empty());
  // The others are still compared among themselves.
  run.Diverge(2, TensorKind::kBuffer, "bn.running_mean", 2);
  auto d = FindDivergences(run.traces, TensorKind::kBuffer);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "bn.running_mean");
  ASSERT_EQ(d[0].groups.size(), 2u);
  EXPECT_EQ(d[0].groups[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{2}));
}

// Removes `rank`'s record of `kind`/`name` at every step.
void Drop(CannedRun& run, int rank, TensorKind kind, const std::string& name) {
  for (auto& s : run.traces[static_cast<size_t>(rank)].steps) {
    auto& ts = s.tensors;
    ts.erase(std::remove_if(ts.begin(), ts.end(), [&](const TensorRecord& t) { return t.kind == kind && t.name == name; }),
             ts.end());
  }
}

// Each rank keeps the optimizer state of its own share of the parameters only (Muon's round-robin
// step, a hand-written sharded optimizer): nothing to compare, nothing missing.
TEST(ReplicaComparisonTest, OptimizerStateKeptForEachRanksOwnShareIsNotMissing) {
  CannedRun run(2, 2);
  Drop(run, 0, TensorKind::kOptimizerState, "w1#momentum");
  Drop(run, 1, TensorKind::kOptimizerState, "w0#momentum");
  Drop(run, 1, TensorKind::kOptimizerState, "w2#momentum");
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kOptimizerState).empty());
}

// Gradients reduced to the rank that owns each parameter and freed on the others (fairscale's
// ShardedDDP with OSS, examples/real_bugs/amp_inf_check_unsynced_shards_fixed.py): each rank's own
// share, not missing; a gradient both ranks hold beside them makes it no partition, and the
// others are missing again.
TEST(ReplicaComparisonTest, GradientsReducedToTheirOwnerAreNotMissing) {
  CannedRun run(2, 2);
  Drop(run, 0, TensorKind::kGrad, "w1");
  Drop(run, 1, TensorKind::kGrad, "w0");
  Drop(run, 1, TensorKind::kGrad, "w2");
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kGrad).empty());

  CannedRun shared(2, 1);
  Drop(shared, 1, TensorKind::kGrad, "w0");
  Drop(shared, 0, TensorKind::kGrad, "w1");
  auto d = FindDivergences(shared.traces, TensorKind::kGrad);
  ASSERT_EQ(d.size(), 2u);  // w2 on both ranks: w0 and w1 are missing, not shares
}

// One rank holding state the other lacks altogether is missing state (a checkpoint's optimizer
// state loaded on rank 0 only), and so is a tensor two ranks hold and a third lacks.
TEST(ReplicaComparisonTest, StateOneRankHoldsAndAnotherLacksIsStillMissing) {
  CannedRun two(2, 2);
  for (const char* name : {"w0#momentum", "w1#momentum", "w2#momentum"}) Drop(two, 1, TensorKind::kOptimizerState, name);
  auto d = FindDivergences(two.traces, TensorKind::kOptimizerState);
  ASSERT_EQ(d.size(), 6u);  // 3 tensors at steps 1 and 2
  EXPECT_EQ(d[0].step, 1);

  CannedRun three(3, 1);
  Drop(three, 0, TensorKind::kOptimizerState, "w1#momentum");
  Drop(three, 1, TensorKind::kOptimizerState, "w0#momentum");
  Drop(three, 2, TensorKind::kOptimizerState, "w0#momentum");
  d = FindDivergences(three.traces, TensorKind::kOptimizerState);
  ASSERT_EQ(d.size(), 2u);  // w0 held by rank 0 only, w1 by ranks 1 and 2: not one share each
}

// A zero gradient where another rank has none: the same, nothing to apply. A non-zero gradient
// where another rank has none is missing.
TEST(ReplicaComparisonTest, AZeroGradientAndNoGradientAgree) {
  CannedRun run(2, 2);
  Drop(run, 0, TensorKind::kGrad, "w2");
  for (int64_t step : {1, 2}) run.Tensor(1, step, TensorKind::kGrad, "w2").norm = 0.0;
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kGrad).empty());
  run.Tensor(1, 2, TensorKind::kGrad, "w2").norm = 0.25;
  auto d = FindDivergences(run.traces, TensorKind::kGrad);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "w2");
}

TEST(ReplicaComparisonTest, ShardedTensorsAreNotCompared) {
  CannedRun run(2, 2);
  for (auto& t : run.traces) {
    for (auto& s : t.steps) {
      for (auto& rec : s.tensors) {
        if (rec.kind == TensorKind::kOptimizerState) rec.replicated = false;
      }
    }
  }
  run.Diverge(1, TensorKind::kOptimizerState, "w0#momentum", 1);
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kOptimizerState).empty());
}

// A pass says what it judged: the judge counts the tensors, steps and groups it compared.
TEST(ReplicaComparisonTest, TheJudgeCountsWhatItCompared) {
  CannedRun run(4, 5);
  auto judge = StartReplicaJudge(ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  EXPECT_TRUE(JudgeInMemory(*judge, "replica_weights", run.Context()).empty());
  const std::optional<CheckerCoverage> c = judge->Coverage();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kind, "param");
  EXPECT_EQ(c->tensors, 3);  // w0..w2
  EXPECT_EQ(c->steps, 6);    // steps 0..5
  EXPECT_EQ(c->groups, 1);   // every rank
  EXPECT_EQ(c->comparisons, 18);
}

// A fully sharded program (FSDP2 on 2 ranks): nothing replicated, nothing compared, and the
// coverage says so instead of a bare pass.
TEST(ReplicaComparisonTest, NothingReplicatedIsCountedAsNothingCompared) {
  CannedRun run(2, 3);
  for (auto& t : run.traces) {
    for (auto& s : t.steps) {
      for (auto& rec : s.tensors) {
        if (rec.kind == TensorKind::kParam) rec.replicated = false;
      }
    }
  }
  auto judge = StartReplicaJudge(ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  EXPECT_TRUE(JudgeInMemory(*judge, "replica_weights", run.Context()).empty());
  ASSERT_TRUE(judge->Coverage().has_value());
  EXPECT_EQ(judge->Coverage()->tensors, 0);
  EXPECT_EQ(judge->Coverage()->steps, 0);
  EXPECT_EQ(judge->Coverage()->groups, 0);
}

TEST(ReplicaComparisonTest, RanksAreComparedOnlyAtTheStepsTheyRecorded) {
  CannedRun run(3, 4);
  run.Cut(1, 2);
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kParam).empty());
}

TEST(ReplicaComparisonTest, FindingSummarizesLaterStepsAndKeepsAllTensorsOfTheFirst) {
  CannedRun run(4, 6);
  run.Diverge(1, TensorKind::kParam, "w2", 3);
  run.Diverge(1, TensorKind::kParam, "w0", 3);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "replica_weights");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].tensor, "w0");  // recording order
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"w0", "w2"}));
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].details.at("later_divergent_steps"), "3");
  EXPECT_EQ(f[0].details.at("last_divergent_step"), "6");
  EXPECT_NE(f[0].message.find("differs from the majority (ranks 0,2,3)"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("diverged again at 3 later steps (last: 6)"), std::string::npos) << f[0].message;
}

TEST(ReplicaComparisonTest, TwoRanksHaveNoMajorityAndTheMessageListsTheGroups) {
  CannedRun run(2, 3);
  run.Diverge(1, TensorKind::kParam, "w1", 2);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  // Rank 1 edited, but two digests cannot say which: both ranks are named, never rank 0 alone or
  // rank 1 alone by the accident of which is lower.
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("every rank that disagrees is named"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("no majority among 2 ranks"), std::string::npos) << f[0].message;
  const std::string groups = f[0].details.at("groups");
  EXPECT_NE(groups.find("rank 0: " + run.Tensor(0, 2, TensorKind::kParam, "w1").digest.ToHex()), std::string::npos) << groups;
  EXPECT_NE(groups.find("rank 1: " + run.Tensor(1, 2, TensorKind::kParam, "w1").digest.ToHex()), std::string::npos) << groups;
}

// The probe at 2 ranks watches each update: a rank's record lists the parameters it wrote after
// its optimizer step. The side that did is named, and the cause says what it did.
void WatchEveryStep(CannedRun& run) {
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) s.edited_after_update = std::vector<std::string>{};
  }
}

TEST(ReplicaComparisonTest, AtTwoRanksTheRankThatWroteItsWeightsAfterTheUpdateIsNamed) {
  CannedRun run(2, 3);
  WatchEveryStep(run);
  run.Diverge(0, TensorKind::kParam, "w1", 2);
  run.Step(0, 2).edited_after_update = std::vector<std::string>{"w1"};
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(f[0].details.at("named"), "the side that wrote its weights after its update");
  EXPECT_NE(f[0].message.find("no majority among 2 ranks, but the ranks' own records single one side out: rank 0"),
            std::string::npos) << f[0].message;
  EXPECT_NE(f[0].cause.find("rank 0 wrote w1 after its optimizer step of step 2 and before the next forward"),
            std::string::npos) << f[0].cause;
}

TEST(ReplicaComparisonTest, AtTwoRanksBothSidesStayNamedWhereTheRecordsDoNotSingleOneOut) {
  struct Case {
    const char* why;
    void (*edit)(CannedRun&);
  };
  for (const Case& c : std::vector<Case>{
           {"neither rank wrote its weights after the update", [](CannedRun&) {}},
           {"both ranks did", [](CannedRun& run) {
              run.Step(0, 2).edited_after_update = std::vector<std::string>{"w1"};
              run.Step(1, 2).edited_after_update = std::vector<std::string>{"w1"};
            }},
           {"rank 1 did not watch", [](CannedRun& run) {
              run.Step(0, 2).edited_after_update = std::vector<std::string>{"w1"};
              run.Step(1, 2).edited_after_update.reset();
            }},
           {"rank 0 wrote another tensor", [](CannedRun& run) {
              run.Step(0, 2).edited_after_update = std::vector<std::string>{"w0"};
            }},
       }) {
    CannedRun run(2, 3);
    WatchEveryStep(run);
    run.Diverge(0, TensorKind::kParam, "w1", 2);
    c.edit(run);
    auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
    ASSERT_EQ(f.size(), 1u) << c.why;
    EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1})) << c.why;
    EXPECT_EQ(f[0].details.count("named"), 0u) << c.why;
    EXPECT_NE(f[0].message.find("every rank that disagrees is named"), std::string::npos) << c.why << f[0].message;
    EXPECT_EQ(f[0].cause.find("before the next forward"), std::string::npos) << c.why << f[0].cause;
  }
}

TEST(ReplicaComparisonTest, RoundingLevelDifferenceIsNamedWithItsSize) {
  CannedRun run(4, 3);
  run.Diverge(3, TensorKind::kParam, "w1", 2, /*rel_norm=*/2e-7);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("at rounding level"), std::string::npos) << f[0].message;
  const double rel = std::stod(f[0].details.at("max_rel_diff"));
  EXPECT_GT(rel, 1e-7);
  EXPECT_LT(rel, 3e-7);
}

TEST(ReplicaComparisonTest, LargeDifferenceIsNotCalledRounding) {
  CannedRun run(4, 3);
  run.Diverge(3, TensorKind::kParam, "w1", 2, /*rel_norm=*/0.25);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.find("rounding"), std::string::npos) << f[0].message;
  EXPECT_NEAR(std::stod(f[0].details.at("max_rel_diff")), 0.2, 0.01);  // |1.25x - x| / 1.25x
}

TEST(ReplicaComparisonTest, MissingAndEmptyTracesAreSkipped) {
  CannedRun run(3, 2);
  run.traces[2] = RankTrace{};
  run.traces[2].missing = true;
  EXPECT_TRUE(CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"}).empty());
}


// ----------------------------------------------------------------------------- replica groups

std::shared_ptr<const ReplicaGroup> Group(std::vector<int> ranks, const std::string& label) {
  return std::make_shared<const ReplicaGroup>(ReplicaGroup{std::move(ranks), label});
}

// At every step: rank r's `name` of `kind` is in `group`; with `shard`, ranks of different groups
// hold different values (their own shard), as a DTensor sharded on another mesh dim does.
void InGroup(CannedRun& run, int rank, TensorKind kind, const std::string& name,
             const std::shared_ptr<const ReplicaGroup>& group, bool shard = true) {
  for (StepRecord& s : run.traces[rank].steps) {
    for (TensorRecord& t : s.tensors) {
      if (t.kind != kind || t.name != name) continue;
      t.group = group;
      if (shard) t.digest = testing::FakeDigest(DescribeReplicaGroup(*group) + "/" + name + "/" + std::to_string(s.step));
    }
  }
}

// HSDP on a 2x2 mesh: ranks {0, 2} hold one shard, {1, 3} the other.
void Hsdp(CannedRun& run, const std::string& name) {
  auto a = Group({0, 2}, "mesh dim replicate");
  auto b = Group({1, 3}, "mesh dim replicate");
  for (int r : {0, 2}) InGroup(run, r, TensorKind::kParam, name, a);
  for (int r : {1, 3}) InGroup(run, r, TensorKind::kParam, name, b);
}

TEST(ReplicaComparisonTest, ShardsOfDifferentReplicaGroupsAreNotCompared) {
  CannedRun run(4, 3);
  Hsdp(run, "w0");
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kParam).empty());
}

TEST(ReplicaComparisonTest, ARankThatLeavesItsReplicaGroupIsFoundWithinIt) {
  CannedRun run(4, 3);
  Hsdp(run, "w0");
  run.Diverge(3, TensorKind::kParam, "w0", 2);
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_EQ(d.size(), 2u);  // steps 2 and 3, group {1, 3} only
  EXPECT_EQ(d[0].step, 2);
  ASSERT_NE(d[0].group, nullptr);
  EXPECT_EQ(d[0].group->ranks, (std::vector<int>{1, 3}));
  EXPECT_FALSE(d[0].has_majority);
  EXPECT_EQ(d[0].odd_ranks, (std::vector<int>{3}));

  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1, 3}));  // a group of two: no majority, both named
  EXPECT_NE(f[0].message.find("within a replica group (first: w0, replica group {1, 3} on mesh dim replicate)"),
            std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].details.at("replica_groups"), "{1, 3} on mesh dim replicate");
}

TEST(ReplicaComparisonTest, TheOddRankOfAReplicaGroupOfThreeIsFoundByMajority) {
  CannedRun run(4, 2);
  // Ranks 0-2 hold w1 alike (rank 3 holds another piece, compared with nobody).
  auto g = Group({0, 1, 2}, "mesh dim dp");
  for (int r : {0, 1, 2}) InGroup(run, r, TensorKind::kParam, "w1", g);
  for (StepRecord& s : run.traces[3].steps) {
    for (TensorRecord& t : s.tensors) {
      if (t.kind == TensorKind::kParam && t.name == "w1") t.replicated = false;
    }
  }
  run.Diverge(3, TensorKind::kParam, "w1", 1);
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kParam).empty());
  run.Diverge(1, TensorKind::kParam, "w1", 2);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(f[0].message.find("rank 1 differs from the rest of its replica group (ranks 0,2)"), std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("{0, 1, 2} on mesh dim dp"), std::string::npos) << f[0].message;
}

TEST(ReplicaComparisonTest, ATensorHeldBySomeRanksIsComparedAmongThemAndMissingOnAMemberIsFound) {
  CannedRun run(4, 2);
  // A pipeline stage's weight: ranks 0 and 1 hold it, ranks 2 and 3 (the other stage) do not.
  auto stage = Group({0, 1}, "mesh dim dp");
  for (int r : {0, 1}) InGroup(run, r, TensorKind::kParam, "w2", stage, /*shard=*/false);
  for (int r : {2, 3}) {
    for (StepRecord& s : run.traces[r].steps) {
      auto& ts = s.tensors;
      ts.erase(std::remove_if(ts.begin(), ts.end(), [](const TensorRecord& t) {
                 return t.kind == TensorKind::kParam && t.name == "w2";
               }), ts.end());
    }
  }
  EXPECT_TRUE(FindDivergences(run.traces, TensorKind::kParam).empty());
  // Rank 1 loses it at step 2: its group says it should hold it.
  auto& ts = run.Step(1, 2).tensors;
  ts.erase(std::remove_if(ts.begin(), ts.end(), [](const TensorRecord& t) {
             return t.kind == TensorKind::kParam && t.name == "w2";
           }), ts.end());
  auto d = FindDivergences(run.traces, TensorKind::kParam);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].step, 2);
  EXPECT_EQ(d[0].tensor, "w2");
  ASSERT_EQ(d[0].groups.size(), 2u);
  EXPECT_EQ(d[0].groups[1].ranks, (std::vector<int>{1}));
  EXPECT_FALSE(d[0].groups[1].digest.has_value());
}

TEST(ReplicaComparisonTest, EveryGroupThatDivergedIsNamedAndTheTensorCountedOnce) {
  CannedRun run(4, 2);
  Hsdp(run, "w0");
  run.Diverge(2, TensorKind::kParam, "w0", 1);
  run.Diverge(3, TensorKind::kParam, "w0", 1);
  auto f = CompareReplicas(run.Context(), ReplicaComparison{"replica_weights", TensorKind::kParam, "parameters"});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1, 2, 3}));  // groups of two: no majority in either
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"w0"}));
  EXPECT_EQ(f[0].details.at("divergent_tensors"), "1");
  EXPECT_NE(f[0].message.find("1 tensor differs within a replica group"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("also in replica group {1, 3} on mesh dim replicate"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace lockstep
