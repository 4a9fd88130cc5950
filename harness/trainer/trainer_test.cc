// The reference trainer's contract, on in-process thread ranks: replicas stay bitwise identical
// in every mode, and an N-rank run follows the 1-rank run of the same global batch.
#include "harness/trainer/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

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

// What VisitState visits, as the state epoch vouches for it: each tensor's name, kind, object,
// storage, shape and dtype.
struct Visited {
  std::string name;
  TensorKind kind;
  const void* impl;
  const void* data;
  std::vector<int64_t> sizes;
  c10::ScalarType dtype;
  bool operator==(const Visited& o) const {
    return name == o.name && kind == o.kind && impl == o.impl && data == o.data && sizes == o.sizes && dtype == o.dtype;
  }
};

std::vector<Visited> VisitedBy(Trainer& trainer) {
  std::vector<Visited> out;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool) {
    out.push_back(Visited{name, kind, t.defined() ? t.unsafeGetTensorImpl() : nullptr,
                          t.defined() ? t.const_data_ptr() : nullptr, t.defined() ? t.sizes().vec() : std::vector<int64_t>{},
                          t.defined() ? t.scalar_type() : c10::ScalarType::Undefined});
  });
  return out;
}

// Each rank's state epoch and visited tensors after every step (index = step).
struct EpochRun {
  std::vector<uint64_t> epochs;
  std::vector<std::vector<Visited>> visited;
};

std::vector<EpochRun> EpochsOf(const Scenario& s) {
  std::vector<EpochRun> runs(s.ranks);
  Train(s, {}, [&](int rank, int64_t, Trainer& trainer) {
    runs[rank].epochs.push_back(trainer.StateEpoch());
    runs[rank].visited.push_back(VisitedBy(trainer));
  });
  return runs;
}

// The epoch's word (Trainer::StateEpoch): two steps with the same epoch visit the same tensors.
// And where it is kept: a DDP run's state is the same tensors from its first step on (the kept
// gradients, the pre-clip copies, the optimizer state made at step 1), and so is zero1's (one
// gradient shard for the run, the skip_grad_allreduce injection's local shard copied into it), so
// a capture lists it once; step 0 and step 1 never share one.
TEST(TrainerStateEpochTest, AnEpochKeptMeansTheSameTensorsAndDdpKeepsItFromStepOne) {
  struct Case {
    const char* name;
    ParallelMode mode;
    OptimizerKind optimizer;
    double clip;
    int accum;
    bool batch_norm;
    bool kept;  // the epoch stays from step 1 on
  };
  const Case cases[] = {
      {"ddp_sgd", ParallelMode::kDdp, OptimizerKind::kSgd, 0.0, 1, false, true},
      {"ddp_adamw_accum_batchnorm", ParallelMode::kDdp, OptimizerKind::kAdamW, 0.0, 2, true, true},
      {"ddp_adamw_clip_every_step", ParallelMode::kDdp, OptimizerKind::kAdamW, 1e-6, 1, false, true},
      {"ddp_adamw_clip_some_steps", ParallelMode::kDdp, OptimizerKind::kAdamW, 0.9, 1, false, false},
      {"zero1_adamw", ParallelMode::kZero1, OptimizerKind::kAdamW, 0.0, 1, false, true},
      {"zero1_sgd_clip", ParallelMode::kZero1, OptimizerKind::kSgd, 1e-6, 1, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario s = BaseScenario(ModelKind::kMlp);
    s.ranks = 2;
    s.steps = 6;
    s.parallel.mode = c.mode;
    s.parallel.grad_accum = c.accum;
    s.optimizer.kind = c.optimizer;
    s.optimizer.clip_grad_norm = c.clip;
    if (c.batch_norm) s.model.norm = NormKind::kBatchNorm;
    const std::vector<EpochRun> runs = EpochsOf(s);
    for (int r = 0; r < s.ranks; ++r) {
      const EpochRun& run = runs[r];
      ASSERT_EQ(run.epochs.size(), static_cast<size_t>(s.steps + 1));
      EXPECT_NE(run.epochs[0], run.epochs[1]) << "rank " << r;
      int kept = 0;
      for (size_t step = 1; step < run.epochs.size(); ++step) {
        if (run.epochs[step] != run.epochs[step - 1]) continue;
        ++kept;
        EXPECT_TRUE(run.visited[step] == run.visited[step - 1]) << "rank " << r << ": step " << step
                                                                 << " kept the epoch of a state of other tensors";
      }
      if (c.kept) {
        EXPECT_EQ(kept, s.steps - 1) << "rank " << r;
      }
    }
  }
}

// The norm of the gradients VisitState records (the synced ones, before any clipping).
double RecordedGradNorm(Trainer& trainer) {
  double sq = 0;
  trainer.VisitState([&](const std::string&, TensorKind kind, const torch::Tensor& t, bool) {
    if (kind == TensorKind::kGrad) sq += t.to(torch::kFloat64).pow(2).sum().item<double>();
  });
  return std::sqrt(sq);
}

// A clipping threshold the gradient norm crosses from one step to the next switches what is
// recorded as the gradients (the pre-clip copies or .grad): a new epoch at each switch.
TEST(TrainerStateEpochTest, ASwitchBetweenClippedAndUnclippedStepsIsANewEpoch) {
  Scenario s = BaseScenario(ModelKind::kMlp);
  s.ranks = 1;
  s.steps = 10;
  s.optimizer.kind = OptimizerKind::kAdamW;
  std::vector<double> norms;  // a run without clipping: the threshold in the norms' range
  Train(s, {}, [&](int, int64_t step, Trainer& trainer) {
    if (step > 0) norms.push_back(RecordedGradNorm(trainer));
  });
  std::sort(norms.begin(), norms.end());
  s.optimizer.clip_grad_norm = norms[norms.size() / 2];
  std::vector<uint64_t> epochs;
  std::vector<bool> clipped;  // as the trainer decides it (Trainer::Step)
  Train(s, {}, [&](int, int64_t step, Trainer& trainer) {
    epochs.push_back(trainer.StateEpoch());
    clipped.push_back(step > 0 && s.optimizer.clip_grad_norm / (RecordedGradNorm(trainer) + 1e-6) < 1.0);
  });
  int switches = 0;
  for (size_t step = 2; step < epochs.size(); ++step) {
    if (clipped[step] == clipped[step - 1]) continue;
    ++switches;
    EXPECT_NE(epochs[step], epochs[step - 1]) << "step " << step;
  }
  EXPECT_GT(switches, 0) << "the threshold never switched clipping on or off: the test shows nothing";
}

}  // namespace
}  // namespace lockstep
