// MakeModel (declared in model.h): the one place that picks the model class and makes its
// initialization a pure function of the seed.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <mutex>

#include "harness/trainer/attention/attention.h"
#include "harness/trainer/model.h"
#include "harness/trainer/models/mlp_model.h"
#include "harness/trainer/models/transformer_model.h"

namespace lockstep {
namespace {

// The C++ frontend's modules draw their default initialization from LibTorch's global CPU
// generator as they are constructed. We overwrite every parameter from our own generator, but
// the draws would still advance the global stream and so shift, e.g., dropout masks in code that
// runs later; keeping the global state as it was makes MakeModel free of side effects.
class ScopedGlobalCpuRngState {
 public:
  ScopedGlobalCpuRngState() : gen_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    state_ = gen_.get_state();
  }
  ~ScopedGlobalCpuRngState() {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_state(state_);
  }
  ScopedGlobalCpuRngState(const ScopedGlobalCpuRngState&) = delete;
  ScopedGlobalCpuRngState& operator=(const ScopedGlobalCpuRngState&) = delete;

 private:
  at::Generator gen_;
  at::Tensor state_;
};

}  // namespace

std::unique_ptr<Model> MakeModel(const ModelSpec& spec, uint64_t seed, torch::Device device,
                                 TrainingHooks* hooks) {
  // Parameters are drawn on the CPU from a generator seeded here, then moved: the same seed gives
  // bitwise the same model on every rank and on any device.
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::unique_ptr<Model> model;
  {
    // Ranks that run as threads of one process (the unit tests' thread backend) build their
    // models concurrently; one at a time, each save/construct/restore is whole.
    static std::mutex construct_mutex;
    std::lock_guard<std::mutex> one_at_a_time(construct_mutex);
    ScopedGlobalCpuRngState keep_global_rng;
    switch (spec.kind) {
      case ModelKind::kMlp:
        model = std::make_unique<MlpModel>(spec, gen);
        break;
      case ModelKind::kTransformer:
        model = std::make_unique<TransformerModel>(spec, gen, hooks);
        break;
    }
  }
  TORCH_CHECK(model != nullptr, "MakeModel: unknown model kind ", static_cast<int>(spec.kind));
  model->module().to(device);
  return model;
}

}  // namespace lockstep
