// The reference synchronized trainer: one rank's side of data-parallel training (ddp or zero1,
// flat or multi-slice) on the scenario's model and synthetic data. It owns no communicator and
// writes no trace: the rank program hands it the process groups and records what it exposes.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"
#include "harness/trainer/model.h"
#include "harness/trainer/parallel/process_groups.h"

namespace lockstep {

class TrainingHooks;
class DdpGradientSync;
class Zero1Optimizer;

struct StepStats {
  double loss = 0.0;       // this rank's mean loss over its micro-batches
  double grad_norm = 0.0;  // global norm of the synced gradient, before clipping
  double lr = 0.0;
};

// (name, kind, tensor, replicated): every tensor the checkers compare across ranks.
using TensorVisitor =
    std::function<void(const std::string&, TensorKind, const torch::Tensor&, bool replicated)>;

class Trainer {
 public:
  // `hooks` may be null (no injection). The data split uses world rank and size.
  static Result<std::unique_ptr<Trainer>> Create(const Scenario& scenario, ProcessGroups groups,
                                                 torch::Device device, TrainingHooks* hooks);
  ~Trainer();

  // Step 0: identical init everywhere, then the broadcast from rank 0 (as DDP does).
  Status Initialize();
  // Optimizer step `step` (1-based).
  Result<StepStats> Step(int64_t step);
  // Parameters, synced gradients, buffers and optimizer state, as they are now.
  void VisitState(const TensorVisitor& visit);

  Model& model() { return *model_; }

  // The split 1-rank reference (`lockstep-rank --reference-split`): every micro-batch is computed
  // in `pieces` parts, the data of the N-rank run's ranks, whose gradients are accumulated. Equal
  // to the plain 1-rank run in exact arithmetic; the difference is the scenario's rounding noise.
  void set_data_split(int pieces) { data_split_ = pieces < 1 ? 1 : pieces; }

 private:
  Trainer(const Scenario& scenario, ProcessGroups groups, torch::Device device, TrainingHooks* hooks);
  Status SyncBuffers(int64_t step);

  const Scenario& scenario_;
  ProcessGroups groups_;
  torch::Device device_;
  TrainingHooks* hooks_;
  std::unique_ptr<Model> model_;
  std::vector<std::string> param_names_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> buffer_names_;
  std::vector<torch::Tensor> buffers_;
  std::vector<torch::Tensor> synced_grads_;  // pre-clip copies, only when clipping changed .grad
  std::unique_ptr<DdpGradientSync> ddp_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // ddp
  std::unique_ptr<Zero1Optimizer> zero1_;
  int data_split_ = 1;
};

}  // namespace lockstep
