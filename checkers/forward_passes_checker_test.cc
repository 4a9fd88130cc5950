#include "checkers/forward_passes_checker.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Every rank counted one forward pass in each step after step 0.
void OneForwardEach(CannedRun& run) {
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) {
      if (s.step > 0) s.forwards = 1;
    }
  }
}

void SetForwards(CannedRun& run, int rank, int64_t step, int64_t forwards) {
  for (StepRecord& s : run.traces[static_cast<size_t>(rank)].steps) {
    if (s.step == step) s.forwards = forwards;
  }
}

TEST(ForwardPassesCheckerTest, QuietWhenEveryReplicaRanTheSameForwards) {
  CannedRun run(4, 5);
  OneForwardEach(run);
  // Gradient accumulation: four micro-batches a step on every rank alike.
  for (int r = 0; r < 4; ++r) SetForwards(run, r, 2, 4);
  EXPECT_TRUE(ForwardPassesChecker().Check(run.Context()).empty());
  // Traces without counts (lockstep-rank's, and every trace before 2.5): nothing to compare.
  EXPECT_TRUE(ForwardPassesChecker().Check(CannedRun(3, 4).Context()).empty());
}

TEST(ForwardPassesCheckerTest, ARankWithoutACountIsNoDisagreement) {
  CannedRun run(3, 4);
  OneForwardEach(run);
  for (StepRecord& s : run.traces[2].steps) s.forwards.reset();
  EXPECT_TRUE(ForwardPassesChecker().Check(run.Context()).empty());
  // Two ranks with counts still compare.
  SetForwards(run, 1, 3, 2);
  auto f = ForwardPassesChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));  // two counted: no majority
}

TEST(ForwardPassesCheckerTest, ABatchSkippedOnOneRankIsCaughtAtItsStep) {
  // Lightning#5243's pattern: at step 3 rank 2 saw a NaN loss and skipped backward and optimizer
  // step; its next batch's forward ran in the same step. Its later steps run one forward again.
  CannedRun run(3, 5);
  OneForwardEach(run);
  SetForwards(run, 2, 3, 2);
  auto f = ForwardPassesChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "forward_passes");
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, std::vector<int>{2});
  EXPECT_EQ(f[0].message,
            "replicas ran different numbers of training forward passes in step 3: rank 2 ran 2 where ranks 0,1 ran 1");
  EXPECT_EQ(f[0].details.at("forwards"), "rank 2 ran 2 where ranks 0,1 ran 1");
  EXPECT_EQ(f[0].details.count("majority"), 0u);
  EXPECT_NE(f[0].cause.find("left a batch out of its step"), std::string::npos) << f[0].cause;

  // A later step that differs too is counted, not reported again.
  SetForwards(run, 0, 4, 3);
  f = ForwardPassesChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].details.at("later_steps"), "1");
}

TEST(ForwardPassesCheckerTest, TwoRanksWithoutAMajorityNameBoth) {
  CannedRun run(2, 3);
  OneForwardEach(run);
  SetForwards(run, 0, 1, 0);
  auto f = ForwardPassesChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("rank 0 ran 0, rank 1 ran 1 (no majority among 2 ranks"), std::string::npos)
      << f[0].message;
}

TEST(ForwardPassesCheckerTest, ComparesOnlyWithinTheReplicaGroupsTheParametersName) {
  // Two pipeline stages on 4 ranks, each replicated over {0, 2} and {1, 3}: the stages run their
  // own numbers of micro-batch forwards (no finding); a difference inside a pair is one.
  CannedRun run(4, 3);
  OneForwardEach(run);
  auto even = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim dp"});
  auto odd = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, "mesh dim dp"});
  for (size_t r = 0; r < run.traces.size(); ++r) {
    for (StepRecord& s : run.traces[r].steps) {
      for (TensorRecord& t : s.tensors) t.group = r % 2 == 0 ? even : odd;
      if (r % 2 == 1 && s.step > 0) s.forwards = 4;
    }
  }
  EXPECT_TRUE(ForwardPassesChecker().Check(run.Context()).empty());

  SetForwards(run, 3, 2, 5);
  auto f = ForwardPassesChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_NE(f[0].message.find("rank 1 ran 4, rank 3 ran 5 in replica group {1, 3} on mesh dim dp (no majority"),
            std::string::npos)
      << f[0].message;
}

}  // namespace
}  // namespace lockstep
