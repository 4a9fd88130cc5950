// The `threads` backend: every rank is a thread of one process (c10d's test style), so multi-rank
// logic is unit-tested without mpirun. Results are deterministic and bitwise identical on all
// ranks: each rank combines the contributions itself, in rank order.
//
//   ThreadWorld world(4);
//   world.Run([](Communicator& comm) { ... comm.AllReduce(t, ReduceOp::kSum) ... });
//
// Unlike MPI, a misuse is reported instead of hanging: ranks that call different collectives at
// the same point get a "collective mismatch" error, a rank that returns while the others wait in
// a collective makes their call fail, and a collective that does not complete within the world's
// timeout fails with a Timeout status naming the ranks that never arrived. After such an error
// the group is unusable (every later call fails), as a real job would be.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/comm/communicator.h"

namespace lockstep {

namespace internal {
struct ThreadWorldState;
struct ThreadGroupState;
struct ThreadCall;
}  // namespace internal

class ThreadCommunicator;

class ThreadWorld {
 public:
  explicit ThreadWorld(int size, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const;

  // Runs fn on size() threads, rank r with its own "world" communicator, and joins them. An
  // exception escaping fn on any rank is rethrown here once every thread has finished. Each Run
  // starts a fresh world group.
  void Run(const std::function<void(Communicator&)>& fn);
  // The same, collecting what fn returned on each rank (index = rank).
  std::vector<Status> RunEach(const std::function<Status(Communicator&)>& fn);

  // Like Run, handing each rank its world communicator to own (to wrap it, e.g. in a
  // RecordingCommunicator). The rank leaves the world when that communicator is destroyed.
  void RunOwned(const std::function<void(std::unique_ptr<Communicator>)>& fn);

  // The world communicator of `rank`, for callers that run their own threads. All size() ranks
  // must join before the first collective; a rank leaves the world when its communicator is
  // destroyed.
  std::unique_ptr<ThreadCommunicator> Join(int rank);

  // Fault hook: the next collective that world rank `rank` issues, on any of its groups, fails.
  // Its peers in that collective fail too, naming `rank` (as when a real peer errors out); no
  // rank's tensors are changed, and the group stays usable.
  void FailNextCall(int rank, const std::string& message);

 private:
  // Starts a fresh world group, runs body(rank, comm) on one thread per rank, joins them, and
  // rethrows the first exception.
  void RunThreads(const std::function<void(int, std::unique_ptr<ThreadCommunicator>&)>& body);

  std::shared_ptr<internal::ThreadWorldState> state_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ~ThreadCommunicator() override;
  ThreadCommunicator(const ThreadCommunicator&) = delete;
  ThreadCommunicator& operator=(const ThreadCommunicator&) = delete;

  int rank() const override { return member_; }
  int size() const override;
  const std::string& group_name() const override { return name_; }
  std::string backend_name() const override { return "threads"; }
  int world_rank() const { return world_rank_; }

  Status AllReduce(torch::Tensor& tensor, ReduceOp op) override;
  Status AllGather(const torch::Tensor& input, torch::Tensor& output) override;
  Status ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) override;
  Status Broadcast(torch::Tensor& tensor, int root) override;
  Status Barrier() override;
  Result<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& name) override;

 private:
  friend class ThreadWorld;
  using Call = internal::ThreadCall;

  ThreadCommunicator(std::shared_ptr<internal::ThreadWorldState> world,
                     std::shared_ptr<internal::ThreadGroupState> group, int member, std::string name,
                     bool owns_world_membership);
  // The rendezvous every collective goes through: publish `call`, wait for the group, check that
  // all ranks made the same call, run `compute` on everyone's contributions, wait again (so that
  // nobody's input is overwritten while a peer reads it), then `commit` the result locally.
  Status Collective(Call& call, const std::function<Status(const std::vector<Call>&)>& compute,
                    const std::function<void()>& commit);

  std::shared_ptr<internal::ThreadWorldState> world_;
  std::shared_ptr<internal::ThreadGroupState> group_;
  int member_;
  int world_rank_;
  std::string name_;
  bool owns_world_membership_;
  uint64_t splits_ = 0;
};

}  // namespace lockstep
