#include "checkers/optimizer_settings_checker.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkers/testing/canned_run.h"

namespace lockstep {
namespace {

using testing::CannedRun;

// Every rank's every step ran AdamW with these settings, clipped at max_norm 1.
void Agree(CannedRun& run, double lr = 1e-3) {
  for (RankTrace& t : run.traces) {
    for (StepRecord& s : t.steps) {
      if (s.step == 0) continue;  // nothing has stepped yet
      s.optimizer = {{"opt0.group0.lr", lr},           {"opt0.group0.beta1", 0.9},
                     {"opt0.group0.beta2", 0.999},     {"opt0.group0.eps", 1e-8},
                     {"opt0.group0.weight_decay", 0.01}, {"opt0.group1.lr", lr},
                     {"opt0.group1.weight_decay", 0.0}, {"clip.max_norm", 1.0}};
    }
  }
}

void Set(CannedRun& run, int rank, int64_t from_step, const std::string& setting, double value) {
  for (StepRecord& s : run.traces[static_cast<size_t>(rank)].steps) {
    if (s.step < from_step) continue;
    for (auto& [name, v] : s.optimizer) {
      if (name == setting) v = value;
    }
  }
}

TEST(OptimizerSettingsCheckerTest, QuietWhenEveryReplicaRanTheSameSettings) {
  CannedRun run(4, 5);
  Agree(run);
  EXPECT_TRUE(OptimizerSettingsChecker().Check(run.Context()).empty());
  // Traces without settings (lockstep-rank's, and every trace before 2.3): nothing to compare.
  EXPECT_TRUE(OptimizerSettingsChecker().Check(CannedRun(3, 4).Context()).empty());
}

TEST(OptimizerSettingsCheckerTest, ASchedulerSteppedOnOneRankIsCaughtAtTheFirstStepItRunsWith) {
  CannedRun run(3, 6);
  Agree(run, 0.2);
  // ReduceLROnPlateau stepped with rank 1's own loss halves its lr from step 4; the weights in
  // this canned run still agree (zero gradients would do it): only the settings tell.
  Set(run, 1, 4, "opt0.group0.lr", 0.1);
  Set(run, 1, 4, "opt0.group1.lr", 0.1);
  auto f = OptimizerSettingsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].checker, "optimizer_settings");
  EXPECT_EQ(f[0].step, 4);
  EXPECT_EQ(f[0].ranks, std::vector<int>{1});
  EXPECT_EQ(f[0].details.at("setting"), "opt0.group0.lr");
  EXPECT_EQ(f[0].details.at("settings"), "opt0.group0.lr, opt0.group1.lr");
  EXPECT_EQ(f[0].details.at("later_steps"), "2");
  EXPECT_EQ(f[0].message,
            "optimizer settings differ across replicas at step 4: lr of optimizer 0, param group 0: rank 1 has 0.1 "
            "where ranks 0,2 have 0.2; lr of optimizer 0, param group 1: rank 1 has 0.1 where ranks 0,2 have 0.2 "
            "(and at 2 later steps)");
}

TEST(OptimizerSettingsCheckerTest, TwoRanksWithoutAMajorityNameBoth) {
  CannedRun run(2, 3);
  Agree(run);
  Set(run, 0, 2, "clip.max_norm", 0.5);
  auto f = OptimizerSettingsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].details.at("majority"), "none");
  EXPECT_NE(f[0].message.find("clip_grad_norm_'s max_norm: rank 0 has 0.5, rank 1 has 1 (no majority among 2 ranks"),
            std::string::npos)
      << f[0].message;
}

TEST(OptimizerSettingsCheckerTest, ASettingOnlySomeRanksRecordedIsNoDisagreement) {
  // A hand-written sharded optimizer with a param group more on rank 0, and a clip_grad_norm_
  // only rank 2 made: nothing the others hold differs.
  CannedRun run(3, 3);
  Agree(run);
  for (StepRecord& s : run.traces[0].steps) {
    if (s.step > 0) s.optimizer.emplace_back("opt0.group2.lr", 0.5);
  }
  for (StepRecord& s : run.traces[1].steps) s.optimizer.clear();
  for (StepRecord& s : run.traces[2].steps) {
    if (s.step > 0) s.optimizer.emplace_back("clip.norm_type", 2.0);
  }
  EXPECT_TRUE(OptimizerSettingsChecker().Check(run.Context()).empty());
}

TEST(OptimizerSettingsCheckerTest, ComparesOnlyWithinTheReplicaGroupsTheParametersName) {
  // HSDP on 4 ranks: ranks {0, 2} and {1, 3} hold replicas of one shard each. Each pair runs its
  // own lr (a per-shard group of some sharded optimizer): no finding; a difference inside a pair is.
  CannedRun run(4, 3);
  Agree(run);
  auto even = std::make_shared<const ReplicaGroup>(ReplicaGroup{{0, 2}, "mesh dim replicate"});
  auto odd = std::make_shared<const ReplicaGroup>(ReplicaGroup{{1, 3}, "mesh dim replicate"});
  for (size_t r = 0; r < run.traces.size(); ++r) {
    for (StepRecord& s : run.traces[r].steps) {
      for (TensorRecord& t : s.tensors) t.group = r % 2 == 0 ? even : odd;
    }
  }
  Set(run, 1, 1, "opt0.group0.weight_decay", 0.1);
  Set(run, 3, 1, "opt0.group0.weight_decay", 0.1);
  EXPECT_TRUE(OptimizerSettingsChecker().Check(run.Context()).empty());

  Set(run, 3, 2, "opt0.group0.eps", 1e-6);
  auto f = OptimizerSettingsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 2);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1, 3}));  // two ranks: no majority
  EXPECT_NE(f[0].message.find("eps of optimizer 0, param group 0 in replica group {1, 3} on mesh dim replicate: "),
            std::string::npos)
      << f[0].message;
}

// Every rank's every step clipped, and clip_grad_norm_ returned `norm` on it.
void ClipNorms(CannedRun& run, const std::vector<double>& norm) {
  for (size_t r = 0; r < run.traces.size(); ++r) {
    for (StepRecord& s : run.traces[r].steps) {
      if (s.step > 0) s.optimizer.emplace_back("clip.total_norm", norm[r]);
    }
  }
}

TEST(OptimizerSettingsCheckerTest, AShardsOwnGradientNormIsCaughtAtTheFirstStep) {
  // torch.nn.utils.clip_grad_norm_ over an FSDP1 model's local shards: same max_norm, same
  // parameter names, each rank's norm its own shard's.
  CannedRun run(2, 3);
  Agree(run);
  ClipNorms(run, {3.25, 2.5});
  auto f = OptimizerSettingsChecker().Check(run.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));  // two ranks: no majority
  EXPECT_EQ(f[0].details.at("setting"), "clip.total_norm");
  EXPECT_EQ(f[0].details.at("later_steps"), "2");
  EXPECT_EQ(f[0].message.rfind("the clipped gradient norm differs across the ranks of one model at step 1: the "
                               "gradient norm clip_grad_norm_ returned: rank 0 has 3.25, rank 1 has 2.5 (no majority",
                               0),
            0u)
      << f[0].message;
  EXPECT_NE(f[0].cause.find("each computed the norm over its own gradients only"), std::string::npos) << f[0].cause;

  // Three ranks, one odd: the odd one is named, beside a setting that differs too.
  CannedRun three(3, 2);
  Agree(three);
  ClipNorms(three, {1.5, 1.5, 0.75});
  Set(three, 2, 1, "clip.max_norm", 2.0);
  f = OptimizerSettingsChecker().Check(three.Context());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, std::vector<int>{2});
  EXPECT_EQ(f[0].details.at("settings"), "clip.max_norm, clip.total_norm");
  EXPECT_EQ(f[0].message.rfind("optimizer settings differ across replicas at step 1: ", 0), 0u) << f[0].message;
}

TEST(OptimizerSettingsCheckerTest, GradientNormsOfOtherModelsOrOfGradientsThatDifferAreNotCompared) {
  // Equal norms (DDP's replicas, FSDP's all-reducing clip_grad_norm_): quiet.
  CannedRun same(3, 3);
  Agree(same);
  ClipNorms(same, {0.5, 0.5, 0.5});
  EXPECT_TRUE(OptimizerSettingsChecker().Check(same.Context()).empty());

  // Two pipeline stages, each clipping its own parameters: other names, another model's norm.
  CannedRun stages(2, 3);
  Agree(stages);
  ClipNorms(stages, {3.25, 2.5});
  for (StepRecord& s : stages.traces[1].steps) {
    for (TensorRecord& t : s.tensors) t.name = "stage1." + t.name;
  }
  EXPECT_TRUE(OptimizerSettingsChecker().Check(stages.Context()).empty());

  // DDP whose gradients were not all-reduced on rank 2: its norm differs as a consequence of the
  // gradients, which synced_grads names; this check adds nothing.
  CannedRun unsynced(3, 3);
  Agree(unsynced);
  ClipNorms(unsynced, {0.5, 0.5, 0.75});
  unsynced.Diverge(2, TensorKind::kGrad, "w1", 1);
  EXPECT_TRUE(OptimizerSettingsChecker().Check(unsynced.Context()).empty());

  // A rank that clipped nothing (clipping on rank 0 only) has no norm to disagree with.
  CannedRun one(2, 3);
  Agree(one);
  ClipNorms(one, {0.5, 0.75});
  for (StepRecord& s : one.traces[1].steps) s.optimizer.clear();
  EXPECT_TRUE(OptimizerSettingsChecker().Check(one.Context()).empty());
}

TEST(OptimizerSettingsCheckerTest, DescribesTheSettingItsParamGroupAndOptimizer) {
  EXPECT_EQ(DescribeOptimizerSetting("opt1.group12.beta2"), "beta2 of optimizer 1, param group 12");
  EXPECT_EQ(DescribeOptimizerSetting("clip.max_norm"), "clip_grad_norm_'s max_norm");
  EXPECT_EQ(DescribeOptimizerSetting("clip.total_norm"), "the gradient norm clip_grad_norm_ returned");
  EXPECT_EQ(DescribeOptimizerSetting("opt0.group0."), "opt0.group0.");
  EXPECT_EQ(DescribeOptimizerSetting("something"), "something");
}

}  // namespace
}  // namespace lockstep
