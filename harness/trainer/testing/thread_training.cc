#include "harness/trainer/testing/thread_training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "harness/capture/tensor_digest.h"
#include "harness/comm/thread_communicator.h"

namespace lockstep::trainer_testing {
namespace {

StepState Snapshot(Trainer& trainer, double loss) {
  StepState st;
  st.loss = loss;
  trainer.VisitState([&](const std::string& name, TensorKind kind, const torch::Tensor& t, bool replicated) {
    if (replicated) st.digests[std::string(ToString(kind)) + ":" + name] = DigestTensor(t).ToHex();
  });
  return st;
}

}  // namespace

Scenario BaseScenario(ModelKind kind) {
  Scenario s;
  s.name = "test";
  s.steps = 20;
  s.seed = 42;
  s.model.kind = kind;
  s.model.layers = 2;
  s.model.hidden = 32;
  s.model.heads = 4;
  s.model.seq_len = 12;
  s.model.vocab = 32;
  s.model.input_dim = 16;
  s.model.output_dim = 4;
  s.data.batch_per_rank = 4;
  s.optimizer.lr = 0.05;
  return s;
}

std::vector<RankRun> Train(const Scenario& scenario,
                           const std::function<std::unique_ptr<TrainingHooks>(int)>& make_hooks,
                           const StepObserver& observe) {
  torch::set_num_threads(1);
  std::vector<RankRun> runs(scenario.ranks);
  std::mutex mu;
  ThreadWorld world(scenario.ranks);
  world.Run([&](Communicator& comm) {
    std::unique_ptr<TrainingHooks> hooks = make_hooks ? make_hooks(comm.rank()) : nullptr;
    std::unique_ptr<Communicator> slice, cross;
    ProcessGroups groups;
    groups.world = &comm;
    groups.slice = &comm;
    groups.slices = scenario.slices;
    if (scenario.slices > 1) {
      const int per_slice = comm.size() / scenario.slices;
      auto s = comm.Split(comm.rank() / per_slice, comm.rank(), "slice");
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      slice = std::move(s).value();
      auto c = comm.Split(comm.rank() % per_slice, comm.rank(), "cross");
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      cross = std::move(c).value();
      groups.slice = slice.get();
      groups.cross = cross.get();
    }
    auto trainer = Trainer::Create(scenario, groups, torch::kCPU, hooks.get());
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    ASSERT_TRUE((*trainer)->Initialize().ok());
    RankRun run;
    run.push_back(Snapshot(**trainer, NAN));
    if (observe) observe(comm.rank(), 0, **trainer);
    for (int64_t step = 1; step <= scenario.steps; ++step) {
      auto stats = (*trainer)->Step(step);
      ASSERT_TRUE(stats.ok()) << stats.status().ToString();
      run.push_back(Snapshot(**trainer, stats->loss));
      if (observe) observe(comm.rank(), step, **trainer);
    }
    std::lock_guard<std::mutex> lock(mu);
    runs[comm.rank()] = std::move(run);
  });
  return runs;
}

}  // namespace lockstep::trainer_testing
