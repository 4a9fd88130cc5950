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
  // A number that is the same at the end of two steps only when VisitState visits the same
  // tensors at both: the same objects, with the same storage, shape and dtype, under the same
  // names, kinds and order (their values change). A capture may keep what it derived from the
  // tensors (where their bytes are, their records' descriptions) while it stays (issue 47:
  // StepRecorder::Capture). A new one after Initialize(), at the start of every step (a step that
  // fails leaves it), and at the end of a step that made or replaced a tensor of the state: the
  // first step's gradients and optimizer state, the pre-clip copies of the first step that clips
  // after one that did not (or the other way), a step whose gradients were not the DDP sync's kept
  // ones. (zero1's gradient shard is one tensor for the whole run.)
  uint64_t StateEpoch() const { return state_epoch_; }

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
  // Pre-clip copies of the synced gradients, recorded instead of .grad when `clipped_` (this step's
  // clipping changed .grad); kept and overwritten from step to step.
  std::vector<torch::Tensor> synced_grads_;
  bool clipped_ = false;
  uint64_t state_epoch_ = 0;
  // At the end of the last step that succeeded: its epoch (0: none since Initialize), whether it
  // clipped, the optimizer's count of parameters with state.
  uint64_t last_epoch_ = 0;
  bool last_clipped_ = false;
  size_t last_state_count_ = 0;
  std::unique_ptr<DdpGradientSync> ddp_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // ddp
  std::unique_ptr<Zero1Optimizer> zero1_;
  int data_split_ = 1;
};

}  // namespace lockstep
