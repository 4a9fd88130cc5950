// The `gloo` backend: LibTorch's c10d ProcessGroupGloo on CPU tensors, with a TCP or file store
// rendezvous (RendezvousOptions), so a machine without MPI can run multi-rank scenarios. Sub-groups
// are new ProcessGroupGloo instances over a PrefixStore named after the group. Compiled when
// LOCKSTEP_HAVE_GLOO; c10d and gloo types stay inside the .cc file.
#pragma once

#include <memory>
#include <string>

#include "harness/comm/communicator.h"
#include "harness/scenario/scenario.h"
#include "harness/comm/rendezvous_options.h"

namespace lockstep {

class GlooCommunicator final : public Communicator {
 public:
  // The world group. The transport binds to `bind_hostname` when given; otherwise to the interface
  // in GLOO_SOCKET_IFNAME, the loopback when MASTER_ADDR is a loopback address, or this host's name.
  static Result<std::unique_ptr<GlooCommunicator>> Create(const RendezvousOptions& options,
                                                          const std::string& bind_hostname = "");

  ~GlooCommunicator() override;
  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  const std::string& group_name() const override;
  std::string backend_name() const override { return ToString(Backend::kGloo); }

  Status AllReduce(torch::Tensor& tensor, ReduceOp op) override;
  Status AllGather(const torch::Tensor& input, torch::Tensor& output) override;
  Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) override;
  Status Broadcast(torch::Tensor& tensor, int root) override;
  Status Barrier() override;
  Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) override;

 private:
  struct State;
  explicit GlooCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace lockstep
