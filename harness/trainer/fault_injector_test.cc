// Each injection acts on the named rank from its onset (or exactly at it, for one-off events),
// and the trainer then shows the desync it models; ranks that are not named stay correct.
#include "harness/trainer/fault_injector.h"

#include <gtest/gtest.h>

#include "harness/trainer/testing/thread_training.h"

namespace lockstep {
namespace {

using trainer_testing::BaseScenario;
using trainer_testing::RankRun;
using trainer_testing::Train;

Injection Inject(const std::string& kind, int rank, int64_t step) {
  Injection i;
  i.kind = kind;
  i.ranks = {rank};
  i.step = step;
  return i;
}

TEST(FaultInjectorTest, ActsOnNamedRankFromOnset) {
  Scenario s = BaseScenario(ModelKind::kMlp);
  s.ranks = 4;
  s.inject = {Inject("skip_grad_allreduce", 1, 3), Inject("bitflip", 2, 5)};
  FaultInjector rank1(s, 1, nullptr), rank0(s, 0, nullptr), rank2(s, 2, nullptr);
  EXPECT_FALSE(rank1.KeepLocalGradients(2));
  EXPECT_TRUE(rank1.KeepLocalGradients(3));
  EXPECT_TRUE(rank1.KeepLocalGradients(4));  // a persistent bug stays
  EXPECT_FALSE(rank0.KeepLocalGradients(3));
  EXPECT_FALSE(rank2.KeepLocalGradients(3));
  EXPECT_EQ(rank1.LearningRateStepOffset(9), 0);
}

TEST(FaultInjectorTest, NoInitialBroadcastIsSkippedEverywhere) {
  Scenario s = BaseScenario(ModelKind::kMlp);
  s.ranks = 2;
  s.inject = {Inject("no_initial_broadcast", 1, 0)};
  FaultInjector rank0(s, 0, nullptr), rank1(s, 1, nullptr);
  EXPECT_TRUE(rank0.SkipInitialBroadcast());
  EXPECT_TRUE(rank1.SkipInitialBroadcast());
  EXPECT_EQ(rank0.InitSeedOffset(), 0u);
  EXPECT_NE(rank1.InitSeedOffset(), 0u);
}

TEST(FaultInjectorTest, DoubleDiscoveryCallsBackOnceAtOnset) {
  Scenario s = BaseScenario(ModelKind::kTransformer);
  s.inject = {Inject("double_discovery", 0, 2)};
  std::vector<std::pair<std::string, int64_t>> calls;
  FaultInjector injector(s, 0, [&](const std::string& phase, int64_t step) { calls.emplace_back(phase, step); });
  injector.OnStepBegin(1);
  injector.OnAttentionForward();
  injector.OnStepBegin(2);
  injector.OnAttentionForward();
  injector.OnAttentionForward();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(std::string("attention_forward"), int64_t{2}));
}

// The first step after which rank `odd` disagrees with rank 0 on any tensor of `prefix`, or -1.
int64_t FirstDivergence(const std::vector<RankRun>& runs, int odd, const std::string& prefix) {
  for (size_t step = 0; step < runs[0].size(); ++step) {
    for (const auto& [name, digest] : runs[0][step].digests) {
      if (name.rfind(prefix, 0) != 0) continue;
      auto it = runs[odd][step].digests.find(name);
      if (it == runs[odd][step].digests.end() || it->second != digest) return static_cast<int64_t>(step);
    }
  }
  return -1;
}

struct DesyncCase {
  const char* kind;
  ParallelMode mode;
  const char* diverges;  // the tensor kind that shows it first
  int64_t onset;
};

void PrintTo(const DesyncCase& c, std::ostream* os) { *os << c.kind; }

class InjectedDesyncTest : public ::testing::TestWithParam<DesyncCase> {};

TEST_P(InjectedDesyncTest, NamedRankDivergesAtOnset) {
  const DesyncCase& c = GetParam();
  Scenario s = BaseScenario(ModelKind::kMlp);
  s.ranks = 3;
  s.steps = 5;
  s.parallel.mode = c.mode;
  s.optimizer.clip_grad_norm = 0.01;  // skip_grad_clip needs clipping to matter
  s.optimizer.warmup_steps = 10;      // lr_mismatch needs a schedule that changes
  s.inject = {Inject(c.kind, 1, c.onset)};
  auto runs = Train(s, [&](int rank) { return std::make_unique<FaultInjector>(s, rank, nullptr); });
  EXPECT_EQ(FirstDivergence(runs, 1, c.diverges), c.onset) << c.kind;
  EXPECT_EQ(FirstDivergence(runs, 2, ""), -1) << "rank 2 must agree with rank 0";
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, InjectedDesyncTest,
    ::testing::Values(DesyncCase{"skip_grad_allreduce", ParallelMode::kDdp, "grad:", 3},
                      DesyncCase{"wrong_grad_scale", ParallelMode::kDdp, "grad:", 2},
                      DesyncCase{"stale_grad", ParallelMode::kDdp, "grad:", 3},
                      DesyncCase{"nondeterministic_reduce", ParallelMode::kDdp, "grad:", 2},
                      DesyncCase{"skip_grad_clip", ParallelMode::kDdp, "param:", 2},
                      DesyncCase{"lr_mismatch", ParallelMode::kDdp, "param:", 2},
                      DesyncCase{"bitflip", ParallelMode::kDdp, "param:", 3},
                      DesyncCase{"skip_param_allgather", ParallelMode::kZero1, "param:", 2},
                      DesyncCase{"no_initial_broadcast", ParallelMode::kDdp, "param:", 0}),
    [](const ::testing::TestParamInfo<DesyncCase>& info) { return std::string(info.param.kind); });

// The first step at which `a` and `b` differ on any tensor of `prefix`, or -1.
int64_t FirstDifference(const RankRun& a, const RankRun& b, const std::string& prefix) {
  for (size_t step = 0; step < a.size() && step < b.size(); ++step) {
    for (const auto& [name, digest] : a[step].digests) {
      if (name.rfind(prefix, 0) != 0) continue;
      auto it = b[step].digests.find(name);
      if (it == b[step].digests.end() || it->second != digest) return static_cast<int64_t>(step);
    }
  }
  return -1;
}

// zero1: the injection corrupts the update of rank 1's own shard, which the all-gather hands to
// every replica: the replicas stay identical (no cross-rank check can see it) and all of them
// leave the clean run at the onset step (what `reference` sees).
class Zero1ShardInjectionTest : public ::testing::TestWithParam<const char*> {};

TEST_P(Zero1ShardInjectionTest, EveryReplicaTakesTheWrongShardAtOnset) {
  Scenario s = BaseScenario(ModelKind::kMlp);
  s.ranks = 3;
  s.steps = 4;
  s.parallel.mode = ParallelMode::kZero1;
  const auto clean = Train(s);
  s.inject = {Inject(GetParam(), 1, 2)};
  auto runs = Train(s, [&](int rank) { return std::make_unique<FaultInjector>(s, rank, nullptr); });
  EXPECT_EQ(FirstDivergence(runs, 1, "param:"), -1) << "replicas stay identical";
  EXPECT_EQ(FirstDivergence(runs, 2, "param:"), -1) << "replicas stay identical";
  EXPECT_EQ(FirstDifference(runs[0], clean[0], "param:"), 2) << "and wrong from the onset";
}

INSTANTIATE_TEST_SUITE_P(Kinds, Zero1ShardInjectionTest,
                         ::testing::Values("stale_grad", "skip_grad_allreduce", "wrong_grad_scale"));

TEST(FaultInjectorTest, ABitflipWithoutATargetIsRefused) {
  Scenario s = BaseScenario(ModelKind::kMlp);
  Injection flip = Inject("bitflip", 1, 2);
  flip.location = SourceLocation{"s.yaml", 7, 5};
  flip.params["index"] = "8";
  s.inject = {flip};
  torch::nn::Linear linear(4, 2);  // weight: 8 elements, bias: 2
  Status status = FaultInjector(s, 1, nullptr).CheckTargets(*linear);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("s.yaml:7:5: inject[0]: bitflip index 8 is beyond every tensor"), std::string::npos)
      << status.message();
  s.inject[0].params["index"] = "7";
  EXPECT_TRUE(FaultInjector(s, 1, nullptr).CheckTargets(*linear).ok());
  s.inject[0].tensor = "nope*";
  status = FaultInjector(s, 1, nullptr).CheckTargets(*linear);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("matches no float32 parameter"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace lockstep
