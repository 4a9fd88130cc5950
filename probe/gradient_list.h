// The gradients of an optimizer's parameters, read by the probe at every optimizer step without a
// Python object per gradient (issue 47, item 4): the list keeps the parameters and reads each
// one's `grad()` in C++, where the Python side read `p.grad` for every parameter of every step
// (a new tensor each step: zero_grad sets them to None) and converted each into an at::Tensor.
//
// A list is made for the parameters that had a gradient when it was made (their names and groups,
// a CaptureList of them). Which parameters hold one can change (a parameter unused in a step, a
// gradient the program sets to None): the list then answers that it no longer holds, and the
// probe lists the gradients anew (probe/lockstep/_capture_lists.py).
#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"
#include "probe/capture_list.h"

namespace lockstep::probe {

class GradientList {
 public:
  // `list` names the gradients of the parameters with `present[i]` true, in order; the list keeps
  // `params` alive. InvalidArgument when the counts disagree.
  static Result<std::unique_ptr<GradientList>> Make(std::shared_ptr<CaptureList> list,
                                                    std::vector<torch::Tensor> params, std::vector<bool> present);

  // The records of the gradients the parameters hold now; nullopt (nothing captured) when the
  // parameters holding one are not those the list was made for. Errors as CaptureList::Capture's.
  // `may_defer` as CaptureList::Capture's.
  Result<std::optional<Captured>> Capture(bool may_defer = false);

  bool deferrable() const { return list_->deferrable(); }
  void NoteDigestedAtOnce() { list_->NoteDigestedAtOnce(); }
  // A parameter with a gradient: where the gradients are (null: none present).
  const torch::Tensor* first_param() const;

 private:
  GradientList(std::shared_ptr<CaptureList> list, std::vector<torch::Tensor> params, std::vector<bool> present)
      : list_(std::move(list)), params_(std::move(params)), present_(std::move(present)) {}

  const std::shared_ptr<CaptureList> list_;
  const std::vector<torch::Tensor> params_;
  const std::vector<bool> present_;
};

}  // namespace lockstep::probe
