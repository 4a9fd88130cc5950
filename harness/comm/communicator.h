// The one interface every backend implements (mpi, gloo, nccl, and the in-process thread
// backend used by unit tests). Collectives are named once: AllReduce, AllGather, ReduceScatter,
// Broadcast, Barrier. Every call is blocking and returns a Status that names the rank and the call;
// backend errors never escape as exceptions.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "harness/core/status.h"

namespace lockstep {

enum class ReduceOp { kSum, kAvg, kMax };
enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kBarrier };
const char* ToString(ReduceOp op);
const char* ToString(CollectiveOp op);

// What a collective call looks like from one rank: ranks of a group must produce equal
// fingerprints at equal seq, or the job is about to hang or compute garbage.
struct CollectiveFingerprint {
  std::string group;
  uint64_t seq = 0;
  CollectiveOp op = CollectiveOp::kBarrier;
  std::string dtype;
  int64_t count = 0;   // elements this rank contributes
  int root = -1;       // broadcast
  std::string reduce;  // "sum" | "avg" | "max" | ""
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "world" for the top group; sub-groups carry the name given to Split.
  virtual const std::string& group_name() const = 0;
  virtual std::string backend_name() const = 0;

  // In place on a contiguous tensor.
  virtual Status AllReduce(torch::Tensor& tensor, ReduceOp op) = 0;
  // output: contiguous, size() * input.numel() elements, rank r's input at [r*n, (r+1)*n).
  virtual Status AllGather(const torch::Tensor& input, torch::Tensor& output) = 0;
  // input: size() * output.numel() elements; rank r receives the reduction of chunk r.
  virtual Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) = 0;
  virtual Status Broadcast(torch::Tensor& tensor, int root) = 0;
  virtual Status Barrier() = 0;

  // Collective over this group: ranks passing the same color form a new group, ordered by key.
  // `name` identifies the group in traces ("slice0", "cross1").
  virtual Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) = 0;
};

}  // namespace lockstep
