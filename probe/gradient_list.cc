#include "probe/gradient_list.h"

#include <string>
#include <utility>

namespace lockstep::probe {

Result<std::unique_ptr<GradientList>> GradientList::Make(std::shared_ptr<CaptureList> list,
                                                         std::vector<torch::Tensor> params,
                                                         std::vector<bool> present) {
  if (list == nullptr) return InvalidArgumentError("gradient list: no capture list");
  if (present.size() != params.size()) {
    return InvalidArgumentError("gradient list: " + std::to_string(present.size()) + " presence flags for " +
                                std::to_string(params.size()) + " parameters");
  }
  size_t n = 0;
  for (const bool p : present) n += p ? 1 : 0;
  if (n != list->size()) {
    return InvalidArgumentError("gradient list: " + std::to_string(n) + " gradients present for a list of " +
                                std::to_string(list->size()));
  }
  return std::unique_ptr<GradientList>(new GradientList(std::move(list), std::move(params), std::move(present)));
}

const torch::Tensor* GradientList::first_param() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (present_[i]) return &params_[i];
  }
  return nullptr;
}

Result<std::optional<Captured>> GradientList::Capture(bool may_defer) {
  // Read and checked before anything is digested: a list that no longer holds captures nothing.
  std::vector<torch::Tensor> grads;
  grads.reserve(list_->size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    if (g.defined() != present_[i]) return std::optional<Captured>();
    if (present_[i]) grads.push_back(g);
  }
  LOCKSTEP_ASSIGN_OR_RETURN(Captured captured, list_->Capture(grads, may_defer));
  return std::optional<Captured>(std::move(captured));
}

}  // namespace lockstep::probe
