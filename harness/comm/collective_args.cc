#include "harness/comm/collective_args.h"

#include "harness/capture/dtype_name.h"

namespace lockstep {
namespace {

Status CheckDense(const torch::Tensor& t, const char* what) {
  if (!t.defined()) return InvalidArgumentError(std::string(what) + " is an undefined tensor");
  if (t.is_sparse()) return InvalidArgumentError(std::string(what) + " is sparse; only dense tensors are supported");
  if (!t.is_contiguous()) return InvalidArgumentError(std::string(what) + " is not contiguous");
  return Status::Ok();
}

// Reductions of bool (and complex) have no agreed meaning across MPI, Gloo and NCCL.
Status CheckReducible(const torch::Tensor& t) {
  if (t.scalar_type() == c10::ScalarType::Bool || c10::isComplexType(t.scalar_type())) {
    return InvalidArgumentError("cannot reduce a " + DtypeName(t.scalar_type()) + " tensor");
  }
  return Status::Ok();
}

}  // namespace

std::string CallContext(int rank, const std::string& group, const std::string& call) {
  return "rank " + std::to_string(rank) + " group " + group + ": " + call;
}

Status CheckAllReduceArgs(const torch::Tensor& tensor) {
  LOCKSTEP_RETURN_IF_ERROR(CheckDense(tensor, "tensor"));
  return CheckReducible(tensor);
}

Status CheckAllGatherArgs(const torch::Tensor& input, const torch::Tensor& output, int group_size) {
  LOCKSTEP_RETURN_IF_ERROR(CheckDense(input, "input"));
  LOCKSTEP_RETURN_IF_ERROR(CheckDense(output, "output"));
  if (input.scalar_type() != output.scalar_type()) {
    return InvalidArgumentError("input is " + DtypeName(input.scalar_type()) + " but output is " +
                                DtypeName(output.scalar_type()));
  }
  if (input.device() != output.device()) {
    return InvalidArgumentError("input is on " + input.device().str() + " but output on " + output.device().str());
  }
  if (output.numel() != input.numel() * group_size) {
    return InvalidArgumentError("output has " + std::to_string(output.numel()) + " elements, expected " +
                                std::to_string(group_size) + " x " + std::to_string(input.numel()));
  }
  return Status::Ok();
}

Status CheckReduceScatterArgs(const torch::Tensor& input, const torch::Tensor& output, int group_size) {
  LOCKSTEP_RETURN_IF_ERROR(CheckDense(input, "input"));
  LOCKSTEP_RETURN_IF_ERROR(CheckDense(output, "output"));
  if (input.scalar_type() != output.scalar_type()) {
    return InvalidArgumentError("input is " + DtypeName(input.scalar_type()) + " but output is " +
                                DtypeName(output.scalar_type()));
  }
  if (input.device() != output.device()) {
    return InvalidArgumentError("input is on " + input.device().str() + " but output on " + output.device().str());
  }
  LOCKSTEP_RETURN_IF_ERROR(CheckReducible(input));
  if (input.numel() != output.numel() * group_size) {
    return InvalidArgumentError("input has " + std::to_string(input.numel()) + " elements, expected " +
                                std::to_string(group_size) + " x " + std::to_string(output.numel()));
  }
  return Status::Ok();
}

Status CheckBroadcastArgs(const torch::Tensor& tensor, int root, int group_size) {
  LOCKSTEP_RETURN_IF_ERROR(CheckDense(tensor, "tensor"));
  if (root < 0 || root >= group_size) {
    return InvalidArgumentError("root " + std::to_string(root) + " is outside the group of " +
                                std::to_string(group_size));
  }
  return Status::Ok();
}

Status CheckSplitArgs(int color, const std::string& name) {
  if (color < 0) return InvalidArgumentError("color must be >= 0, got " + std::to_string(color));
  if (name.empty()) return InvalidArgumentError("a sub-group needs a name");
  return Status::Ok();
}

void DivideInPlace(torch::Tensor& tensor, int64_t divisor) {
  if (c10::isIntegralType(tensor.scalar_type(), /*includeBool=*/false)) {
    tensor.div_(divisor, "trunc");
  } else {
    tensor.div_(divisor);
  }
}

}  // namespace lockstep
