// The reference trainer's contract, on in-process thread ranks: replicas stay bitwise identical
// in every mode, and an N-rank run follows the 1-rank run of the same global batch.
#include "harness/trainer/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "harness/trainer/testing/thread_training.h"

namespace lockstep {
namespace {

using trainer_testing::BaseScenario;
using trainer_testing::RankRun;
using trainer_testing::Train;

// Mean loss over ranks per step: each rank's loss is the mean over its equal-sized local batch.
std::vector<double> GlobalLoss(const std::vector<RankRun>& runs) {
  std::vector<double> loss(runs[0].size(), 0.0);
  for (const auto& run : runs) {
    for (size_t s = 0; s < run.size(); ++s) loss[s] += run[s].loss / runs.size();
  }
  return loss;
}

void ExpectReplicasIdentical(const std::vector<RankRun>& runs) {
  for (size_t r = 1; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].size(), runs[0].size());
    for (size_t s = 0; s < runs[0].size(); ++s) {
      ASSERT_EQ(runs[r][s].digests, runs[0][s].digests) << "rank " << r << " differs from rank 0 after step " << s;
    }
  }
}

double MaxRelativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t s = 1; s < a.size(); ++s) worst = std::max(worst, std::abs(a[s] - b[s]) / std::abs(b[s]));
  return worst;
}

Scenario OneRank(Scenario s) {
  s.data.batch_per_rank *= s.ranks;
  s.ranks = 1;
  s.slices = 1;
  return s;
}

struct ModeCase {
  const char* name;
  ModelKind model;
  ParallelMode mode;
  int slices;
  OptimizerKind optimizer;
};

// Names the case in test output (and in ctest's test names) instead of dumping its bytes.
void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.name; }

class TrainerModeTest : public ::testing::TestWithParam<ModeCase> {};

// Documented tolerance (docs/SCENARIOS.md#reference): 1e-5 relative on the loss over 20 fp32
// steps; summation order is the only difference between the runs.
constexpr double kLossRtol = 1e-5;

TEST_P(TrainerModeTest, ReplicasIdenticalAndMatchOneRank) {
  const ModeCase& c = GetParam();
  Scenario s = BaseScenario(c.model);
  s.ranks = 4;
  s.slices = c.slices;
  s.parallel.mode = c.mode;
  s.optimizer.kind = c.optimizer;
  if (c.optimizer == OptimizerKind::kAdamW) s.optimizer.lr = 0.003;
  s.optimizer.clip_grad_norm = 1.0;
  s.optimizer.warmup_steps = 3;
  auto runs = Train(s);
  ExpectReplicasIdentical(runs);
  auto reference = Train(OneRank(s));
  EXPECT_LT(MaxRelativeDifference(GlobalLoss(runs), GlobalLoss(reference)), kLossRtol);
  // Training does something: the loss moved.
  EXPECT_NE(runs[0][1].loss, runs[0].back().loss);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, TrainerModeTest,
    ::testing::Values(ModeCase{"ddp_mlp", ModelKind::kMlp, ParallelMode::kDdp, 1, OptimizerKind::kSgd},
                      ModeCase{"ddp_transformer", ModelKind::kTransformer, ParallelMode::kDdp, 1, OptimizerKind::kAdamW},
                      ModeCase{"zero1_mlp", ModelKind::kMlp, ParallelMode::kZero1, 1, OptimizerKind::kAdamW},
                      ModeCase{"zero1_transformer", ModelKind::kTransformer, ParallelMode::kZero1, 1, OptimizerKind::kSgd},
                      ModeCase{"ddp_slices2_mlp", ModelKind::kMlp, ParallelMode::kDdp, 2, OptimizerKind::kSgd},
                      ModeCase{"ddp_slices2_transformer", ModelKind::kTransformer, ParallelMode::kDdp, 2, OptimizerKind::kSgd},
                      ModeCase{"zero1_slices2_mlp", ModelKind::kMlp, ParallelMode::kZero1, 2, OptimizerKind::kAdamW},
                      ModeCase{"zero1_slices2_transformer", ModelKind::kTransformer, ParallelMode::kZero1, 2, OptimizerKind::kAdamW}),
    [](const ::testing::TestParamInfo<ModeCase>& info) { return std::string(info.param.name); });

TEST(TrainerTest, Zero1MatchesDdpAndSlicesMatchFlat) {
  Scenario ddp = BaseScenario(ModelKind::kMlp);
  ddp.ranks = 4;
  ddp.optimizer.kind = OptimizerKind::kAdamW;
  ddp.optimizer.lr = 0.003;
  Scenario zero1 = ddp;
  zero1.parallel.mode = ParallelMode::kZero1;
  Scenario sliced = ddp;
  sliced.slices = 2;
  const auto ddp_loss = GlobalLoss(Train(ddp));
  EXPECT_LT(MaxRelativeDifference(GlobalLoss(Train(zero1)), ddp_loss), kLossRtol);
  EXPECT_LT(MaxRelativeDifference(GlobalLoss(Train(sliced)), ddp_loss), kLossRtol);
}

TEST(TrainerTest, GradAccumulationMatchesOneLargeBatch) {
  Scenario accum = BaseScenario(ModelKind::kMlp);
  accum.ranks = 2;
  accum.steps = 10;
  accum.parallel.grad_accum = 2;
  auto runs = Train(accum);
  ExpectReplicasIdentical(runs);
  // Two micro-batches of 4 per rank see the same 16 samples per step as one rank with 2 x 8.
  Scenario single = OneRank(accum);
  EXPECT_LT(MaxRelativeDifference(GlobalLoss(runs), GlobalLoss(Train(single))), kLossRtol);
}

TEST(TrainerTest, BatchNormBuffersStaySynced) {
  Scenario s = BaseScenario(ModelKind::kMlp);
  s.ranks = 2;
  s.steps = 5;
  s.model.norm = NormKind::kBatchNorm;
  auto runs = Train(s);
  ExpectReplicasIdentical(runs);
  bool has_buffer = false;
  for (const auto& [name, digest] : runs[0][1].digests) has_buffer |= name.rfind("buffer:", 0) == 0;
  EXPECT_TRUE(has_buffer);
}

}  // namespace
}  // namespace lockstep
