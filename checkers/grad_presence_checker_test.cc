#include "checkers/grad_presence_checker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Every rank holds its own piece of every parameter (FSDP2's shards): none is compared by value.
void Shard(CannedRun& run) {
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) {
      for (TensorRecord& r : s.tensors) {
        if (r.kind == TensorKind::kParam || r.kind == TensorKind::kGrad) r.replicated = false;
      }
    }
  }
}

// From `from` on, `rank` records no gradient of `name`.
void DropGrad(CannedRun& run, int rank, const std::string& name, int64_t from) {
  for (StepRecord& s : run.traces[static_cast<size_t>(rank)].steps) {
    if (s.step < from) continue;
    auto& ts = s.tensors;
    ts.erase(std::remove_if(ts.begin(), ts.end(),
                            [&](const TensorRecord& t) { return t.kind == TensorKind::kGrad && t.name == name; }),
             ts.end());
  }
}

TEST(GradPresenceCheckerTest, QuietWhenEveryRankHoldingAShardHasItsGradient) {
  CannedRun run(4, 6);
  Shard(run);
  EXPECT_TRUE(GradPresenceChecker().Check(run.Context()).empty());
}

// The corpus example fsdp2_branch_per_rank: rank 0 runs one branch, rank 1 the other, each
// reduce-scatters only its own branch's gradient.
TEST(GradPresenceCheckerTest, FiresWhenABranchChosenPerRankLeavesAShardWithoutItsGradient) {
  CannedRun run(2, 5);
  Shard(run);
  DropGrad(run, 1, "w1", 2);
  DropGrad(run, 0, "w2", 2);
  auto f = GradPresenceChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "grad_presence");
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].tensor, "w1");
  EXPECT_EQ(f[0].tensors, (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(f[0].message,
            "sharded parameters received a gradient on some ranks and not on others at step 2 (2 parameters): w1 (a "
            "gradient on rank 0; none on rank 1), w2 (a gradient on rank 1; none on rank 0); every rank holding a "
            "piece of a parameter must reduce its gradient, or the reduce-scatters of different parameters of the "
            "same shape pair up silently (a branch or layer chosen per rank?); again in 3 later steps, the last 5");
  EXPECT_EQ(f[0].details.at("later_steps"), "3");
}

// HSDP: a parameter compared within its replica group only, whose replicas agree with each other
// (both lack the gradient) while the other shard group's ranks have it.
TEST(GradPresenceCheckerTest, FiresForAParameterComparedOnlyWithinItsReplicaGroup) {
  CannedRun run(4, 3);
  auto group = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, "mesh dim replicate"});
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) {
      for (TensorRecord& r : s.tensors) {
        if (r.kind == TensorKind::kParam || r.kind == TensorKind::kGrad) r.group = group;
      }
    }
  }
  DropGrad(run, 1, "w0", 1);
  DropGrad(run, 3, "w0", 1);
  auto f = GradPresenceChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1, 3}));
}

// Parameters every rank holds alike are synced_grads' to judge; a hand-written sharded optimizer
// keeps gradients for its own share of them only.
TEST(GradPresenceCheckerTest, QuietForParametersReplicatedOnEveryRank) {
  CannedRun run(2, 4);
  DropGrad(run, 1, "w1", 1);
  DropGrad(run, 0, "w2", 1);
  EXPECT_TRUE(GradPresenceChecker().Check(run.Context()).empty());
}

// FSDP1 with use_orig_params: a rank's view of a parameter outside its shard is empty and has no
// gradient; and a rank that recorded no gradient at all says nothing about presence.
TEST(GradPresenceCheckerTest, QuietForEmptyPiecesAndRanksWithoutAnyGradient) {
  CannedRun run(3, 4);
  Shard(run);
  for (StepRecord& s : run.traces[1].steps) {
    for (TensorRecord& r : s.tensors) {
      if (r.kind == TensorKind::kParam && r.name == "w1") r.numel = 0;
    }
  }
  DropGrad(run, 1, "w1", 0);
  for (const char* name : {"w0", "w1", "w2"}) DropGrad(run, 2, name, 2);
  EXPECT_TRUE(GradPresenceChecker().Check(run.Context()).empty());
}

}  // namespace
}  // namespace lockstep
