#include "checkers/tp_inputs_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;
using testing::FakeDigest;

// Every step from 1 on, each rank records the replicated inputs of a column-parallel `up` (two
// forwards a step) and the `mask` keyword input of `attn`, in its TP group: `tp` ranks per group
// (a DP x TP mesh: ranks {0,1}, {2,3}, ... with tp 2), each group fed its own batch.
void Record(CannedRun& run, int tp) {
  for (size_t r = 0; r < run.traces.size(); ++r) {
    const int first = static_cast<int>(r) / tp * tp;
    ReplicaGroup group{{}, "mesh dim tp"};
    for (int k = 0; k < tp; ++k) group.ranks.push_back(first + k);
    for (StepRecord& s : run.traces[r].steps) {
      if (s.step == 0) continue;  // no forward before the first step
      const std::string batch = std::to_string(s.step) + "/" + std::to_string(first);
      s.tp_inputs.push_back(TpInputRecord{"layers.0.up", "0", FakeDigest("up " + batch), 2, group});
      s.tp_inputs.push_back(TpInputRecord{"layers.0.attn", "mask", FakeDigest("mask " + batch), 2, group});
    }
  }
}

// From `from_step` on, rank `rank` saw another `up` input (its own dropout mask).
void Differ(CannedRun& run, int rank, int64_t from_step) {
  for (StepRecord& s : run.traces[static_cast<size_t>(rank)].steps) {
    if (s.step < from_step) continue;
    for (TpInputRecord& in : s.tp_inputs) {
      if (in.module == "layers.0.up") in.digest = FakeDigest("own mask of rank " + std::to_string(rank));
    }
  }
}

TEST(TpInputsCheckerTest, QuietWhenEveryTpGroupSawTheSameInputs) {
  CannedRun run(4, 5);
  Record(run, 2);  // two TP groups, whose inputs differ from each other's as DP ranks' batches do
  EXPECT_TRUE(TpInputsChecker().Check(run.Context()).empty());
  // Traces without tp_inputs (no tensor parallelism, traces before 2.4): nothing to compare.
  EXPECT_TRUE(TpInputsChecker().Check(CannedRun(2, 4).Context()).empty());
  // A rank that did not record a step (it died) leaves its peers nothing to disagree with.
  CannedRun cut(2, 4);
  Record(cut, 2);
  cut.Cut(1, 2);
  EXPECT_TRUE(TpInputsChecker().Check(cut.Context()).empty());
}

TEST(TpInputsCheckerTest, TwoTpRanksFedDifferentInputsAreBothNamedAtTheFirstStep) {
  CannedRun run(2, 5);
  Record(run, 2);
  Differ(run, 0, 1);  // only TP rank 0 drew from the default generator: its dropout mask is its own
  auto f = TpInputsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "tp_inputs");
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));  // no majority of 2: both sides
  EXPECT_EQ(f[0].tensor, "layers.0.up");
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_EQ(f[0].details.at("later_steps"), "4");
  EXPECT_NE(f[0].message.find("input 0 of 'layers.0.up' in group {0, 1} on mesh dim tp"), std::string::npos)
      << f[0].message;
}

TEST(TpInputsCheckerTest, TheOddRankOfALargerGroupIsNamedByMajorityWithinItsOwnGroup) {
  CannedRun run(8, 6);
  Record(run, 4);  // TP groups {0..3} and {4..7}
  Differ(run, 6, 3);
  auto f = TpInputsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 3);
  EXPECT_EQ(f[0].ranks, std::vector<int>{6});
  EXPECT_EQ(f[0].details.count("majority"), 0u);
  EXPECT_NE(f[0].message.find("group {4, 5, 6, 7}"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("where ranks 4,5,7 have"), std::string::npos) << f[0].message;
}

TEST(TpInputsCheckerTest, AKeywordInputIsNamedAfterItsModule) {
  CannedRun run(2, 3);
  Record(run, 2);
  for (TpInputRecord& in : run.Step(1, 2).tp_inputs) {
    if (in.input == "mask") in.forwards = 3;  // an extra forward on rank 1: the fold differs too
  }
  auto f = TpInputsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].tensor, "layers.0.attn#mask");
  EXPECT_NE(f[0].message.find("input 'mask' of 'layers.0.attn'"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("over 3 forwards"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace lockstep
