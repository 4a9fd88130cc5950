// Argument checks and error wording shared by every backend, so that a bad call reads the same
// whichever backend runs it, and a backend never hands a malformed buffer to MPI, Gloo or NCCL.
#pragma once

#include <torch/types.h>

#include <string>

#include "harness/comm/communicator.h"
#include "harness/core/status.h"

namespace lockstep {

// "rank 3 group slice1: all_reduce": the prefix of every error a communicator returns.
// `rank` is the caller's rank in the world, so that messages from sub-groups still name the process.
std::string CallContext(int rank, const std::string& group, const std::string& call);

// Each returns an InvalidArgument status without context; callers add CallContext.
Status CheckAllReduceArgs(const torch::Tensor& tensor);
Status CheckAllGatherArgs(const torch::Tensor& input, const torch::Tensor& output, int group_size);
Status CheckReduceScatterArgs(const torch::Tensor& input, const torch::Tensor& output, int group_size);
Status CheckBroadcastArgs(const torch::Tensor& tensor, int root, int group_size);
Status CheckSplitArgs(int color, const std::string& name);

// In place: tensor /= divisor. Integer tensors truncate, as ncclAvg does, so that every backend's
// avg of integers agrees.
void DivideInPlace(torch::Tensor& tensor, int64_t divisor);

}  // namespace lockstep

namespace lockstep {

// Runs `body` (returning Status); a LibTorch error (c10::Error) or any other exception thrown
// inside becomes a Communication status prefixed with the call context, so that no backend
// exception crosses the Communicator interface.
template <typename Body>
Status GuardCall(int rank, const std::string& group, const char* call, Body&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return CommunicationError(CallContext(rank, group, call) + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return CommunicationError(CallContext(rank, group, call) + ": " + e.what());
  }
}

}  // namespace lockstep
