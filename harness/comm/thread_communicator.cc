#include "harness/comm/thread_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <optional>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "harness/capture/dtype_name.h"
#include "harness/comm/collective_args.h"

namespace lockstep {
namespace internal {

// What one rank asked for in a collective, published to its peers for the rendezvous.
struct ThreadCall {
  CollectiveOp op = CollectiveOp::kBarrier;
  bool is_split = false;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  int64_t count = 0;
  int root = -1;
  std::optional<ReduceOp> reduce;
  int color = 0;
  int key = 0;
  torch::Tensor input;  // a shallow handle; peers read it between the two barriers
  std::string fault;    // non-empty: an injected failure of this rank's call

  std::string Describe() const {
    if (is_split) return "split";
    std::ostringstream out;
    out << ToString(op);
    if (op != CollectiveOp::kBarrier) out << "(" << DtypeName(dtype) << " x " << count;
    if (reduce) out << ", " << ToString(*reduce);
    if (op == CollectiveOp::kBroadcast) out << ", root " << root;
    if (op != CollectiveOp::kBarrier) out << ")";
    return out.str();
  }
  bool Matches(const ThreadCall& o) const {
    if (is_split || o.is_split) return is_split == o.is_split;
    return op == o.op && dtype == o.dtype && count == o.count && root == o.root && reduce == o.reduce;
  }
};

struct ThreadGroupState {
  std::vector<int> world_ranks;  // member -> world rank
  uint64_t phase = 0;            // completed barrier phases
  int arrived = 0;
  std::vector<bool> here;        // arrived in the current phase
  std::vector<ThreadCall> calls;
  bool broken = false;
  std::string broken_reason;

  explicit ThreadGroupState(std::vector<int> ranks)
      : world_ranks(std::move(ranks)), here(world_ranks.size(), false), calls(world_ranks.size()) {}
  int size() const { return static_cast<int>(world_ranks.size()); }
};

// One lock and one condition variable for the whole world: these are unit-test worlds of a few
// ranks, where simplicity beats contention.
struct ThreadWorldState {
  int size;
  std::chrono::milliseconds timeout;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> departed;
  std::vector<std::string> pending_fault;
  std::shared_ptr<ThreadGroupState> world_group;
  // Children being created by a Split: (parent, split number, color) -> the new group.
  std::map<std::tuple<const ThreadGroupState*, uint64_t, int>, std::shared_ptr<ThreadGroupState>> splitting;

  ThreadWorldState(int n, std::chrono::milliseconds t)
      : size(n), timeout(t), departed(n, false), pending_fault(n) {}

  void ResetWorldGroup() {
    std::vector<int> ranks(size);
    for (int r = 0; r < size; ++r) ranks[r] = r;
    world_group = std::make_shared<ThreadGroupState>(std::move(ranks));
    std::fill(departed.begin(), departed.end(), false);
  }

  // Waits until every member of `g` arrived at the current phase. Called with `lock` held.
  Status Arrive(std::unique_lock<std::mutex>& lock, ThreadGroupState& g, int member, const std::string& context) {
    if (g.broken) return CommunicationError(context + ": group unusable after an earlier error: " + g.broken_reason);
    const uint64_t phase = g.phase;
    g.here[member] = true;
    if (++g.arrived == g.size()) {
      g.arrived = 0;
      std::fill(g.here.begin(), g.here.end(), false);
      ++g.phase;
      cv.notify_all();
      return Status::Ok();
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (g.phase != phase) return Status::Ok();
      if (g.broken) return CommunicationError(context + ": " + g.broken_reason);
      for (int m = 0; m < g.size(); ++m) {
        if (!g.here[m] && departed[g.world_ranks[m]]) {
          g.broken = true;
          g.broken_reason = "rank " + std::to_string(g.world_ranks[m]) + " left without joining this collective";
          cv.notify_all();
          return CommunicationError(context + ": " + g.broken_reason);
        }
      }
      if (cv.wait_until(lock, deadline) == std::cv_status::timeout && g.phase == phase && !g.broken) {
        std::string missing;
        for (int m = 0; m < g.size(); ++m) {
          if (!g.here[m]) missing += (missing.empty() ? "" : ", ") + std::to_string(g.world_ranks[m]);
        }
        g.broken = true;
        g.broken_reason = "timed out after " + std::to_string(timeout.count()) + " ms waiting for ranks [" +
                          missing + "]";
        cv.notify_all();
        return TimeoutError(context + ": " + g.broken_reason);
      }
    }
  }
};

}  // namespace internal

using internal::ThreadCall;
using internal::ThreadGroupState;
using internal::ThreadWorldState;

ThreadWorld::ThreadWorld(int size, std::chrono::milliseconds timeout)
    : state_(std::make_shared<ThreadWorldState>(std::max(size, 1), timeout)) {
  state_->ResetWorldGroup();
}

ThreadWorld::~ThreadWorld() = default;

int ThreadWorld::size() const { return state_->size; }

std::unique_ptr<ThreadCommunicator> ThreadWorld::Join(int rank) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->departed[rank] = false;
  return std::unique_ptr<ThreadCommunicator>(
      new ThreadCommunicator(state_, state_->world_group, rank, "world", /*owns_world_membership=*/true));
}

void ThreadWorld::FailNextCall(int rank, const std::string& message) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->pending_fault[rank] = message.empty() ? "injected fault" : message;
}

void ThreadWorld::RunThreads(const std::function<void(int, std::unique_ptr<ThreadCommunicator>&)>& body) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->ResetWorldGroup();
  }
  const int n = state_->size;
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::unique_ptr<ThreadCommunicator>> comms;
  for (int r = 0; r < n; ++r) comms.push_back(Join(r));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r, comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
      comms[r].reset();  // leaving: peers still waiting on this rank fail instead of hanging
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::vector<Status> ThreadWorld::RunEach(const std::function<Status(Communicator&)>& fn) {
  std::vector<Status> results(state_->size);
  RunThreads([&](int rank, std::unique_ptr<ThreadCommunicator>& comm) { results[rank] = fn(*comm); });
  return results;
}

void ThreadWorld::Run(const std::function<void(Communicator&)>& fn) {
  RunThreads([&](int, std::unique_ptr<ThreadCommunicator>& comm) { fn(*comm); });
}

void ThreadWorld::RunOwned(const std::function<void(std::unique_ptr<Communicator>)>& fn) {
  RunThreads([&](int, std::unique_ptr<ThreadCommunicator>& comm) { fn(std::move(comm)); });
}

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadWorldState> world,
                                       std::shared_ptr<ThreadGroupState> group, int member, std::string name,
                                       bool owns_world_membership)
    : world_(std::move(world)),
      group_(std::move(group)),
      member_(member),
      world_rank_(group_->world_ranks[member]),
      name_(std::move(name)),
      owns_world_membership_(owns_world_membership) {}

ThreadCommunicator::~ThreadCommunicator() {
  if (!owns_world_membership_) return;
  std::lock_guard<std::mutex> lock(world_->mu);
  world_->departed[world_rank_] = true;
  world_->cv.notify_all();
}

int ThreadCommunicator::size() const { return group_->size(); }

Status ThreadCommunicator::Collective(Call& call, const std::function<Status(const std::vector<Call>&)>& compute,
                                      const std::function<void()>& commit) {
  const char* call_name = call.is_split ? "split" : ToString(call.op);
  const std::string context = CallContext(world_rank_, name_, call_name);
  ThreadGroupState& g = *group_;
  std::unique_lock<std::mutex> lock(world_->mu);
  if (!call.is_split && !world_->pending_fault[world_rank_].empty()) {
    call.fault = std::move(world_->pending_fault[world_rank_]);
    world_->pending_fault[world_rank_].clear();
  }
  g.calls[member_] = std::move(call);
  LOCKSTEP_RETURN_IF_ERROR(world_->Arrive(lock, g, member_, context));

  // Every rank sees the same published calls here, so every rank reaches the same verdict.
  Status verdict;
  for (int m = 0; m < g.size() && verdict.ok(); ++m) {
    if (g.calls[m].fault.empty()) continue;
    verdict = m == member_ ? CommunicationError(context + ": " + g.calls[m].fault)
                           : CommunicationError(context + ": peer rank " + std::to_string(g.world_ranks[m]) +
                                                " failed: " + g.calls[m].fault);
  }
  for (int m = 1; m < g.size() && verdict.ok(); ++m) {
    if (!g.calls[m].Matches(g.calls[0])) {
      verdict = CommunicationError(context + ": collective mismatch: rank " + std::to_string(g.world_ranks[0]) +
                                   " calls " + g.calls[0].Describe() + " but rank " +
                                   std::to_string(g.world_ranks[m]) + " calls " + g.calls[m].Describe());
    }
  }
  lock.unlock();
  // Nobody writes the published calls between the two barriers, so they are read without the lock.
  if (verdict.ok()) {
    verdict = GuardCall(world_rank_, name_, call_name, [&]() -> Status {
      torch::NoGradGuard no_grad;
      return compute(g.calls);
    });
  }
  lock.lock();
  LOCKSTEP_RETURN_IF_ERROR(world_->Arrive(lock, g, member_, context));
  lock.unlock();
  if (verdict.ok()) {
    verdict = GuardCall(world_rank_, name_, call_name, [&]() -> Status {
      torch::NoGradGuard no_grad;
      commit();
      return Status::Ok();
    });
  }
  return verdict;
}

namespace {

torch::Tensor Flat(const torch::Tensor& t) { return t.reshape({-1}); }

// Combines the contributions in member order, the same order on every rank.
torch::Tensor Reduce(const std::vector<torch::Tensor>& parts, ReduceOp op) {
  torch::Tensor acc = parts[0].clone();
  for (size_t i = 1; i < parts.size(); ++i) {
    if (op == ReduceOp::kMax) {
      acc = torch::maximum(acc, parts[i]);
    } else {
      acc.add_(parts[i]);
    }
  }
  if (op == ReduceOp::kAvg) DivideInPlace(acc, static_cast<int64_t>(parts.size()));
  return acc;
}

}  // namespace

Status ThreadCommunicator::AllReduce(torch::Tensor& tensor, ReduceOp op) {
  Status args = CheckAllReduceArgs(tensor);
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, ToString(CollectiveOp::kAllReduce)));
  Call call;
  call.op = CollectiveOp::kAllReduce;
  call.dtype = tensor.scalar_type();
  call.count = tensor.numel();
  call.reduce = op;
  call.input = tensor;
  torch::Tensor result;
  return Collective(
      call,
      [&](const std::vector<Call>& calls) {
        std::vector<torch::Tensor> parts;
        for (const Call& c : calls) parts.push_back(c.input);
        result = Reduce(parts, op);
        return Status::Ok();
      },
      [&] { tensor.copy_(result); });
}

Status ThreadCommunicator::AllGather(const torch::Tensor& input, torch::Tensor& output) {
  Status args = CheckAllGatherArgs(input, output, size());
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, ToString(CollectiveOp::kAllGather)));
  Call call;
  call.op = CollectiveOp::kAllGather;
  call.dtype = input.scalar_type();
  call.count = input.numel();
  call.input = input;
  torch::Tensor result;
  return Collective(
      call,
      [&](const std::vector<Call>& calls) {
        std::vector<torch::Tensor> parts;
        for (const Call& c : calls) parts.push_back(Flat(c.input));
        result = torch::cat(parts);
        return Status::Ok();
      },
      [&] { output.view({-1}).copy_(result); });
}

Status ThreadCommunicator::ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) {
  Status args = CheckReduceScatterArgs(input, output, size());
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, ToString(CollectiveOp::kReduceScatter)));
  Call call;
  call.op = CollectiveOp::kReduceScatter;
  call.dtype = input.scalar_type();
  call.count = input.numel();
  call.reduce = op;
  call.input = input;
  torch::Tensor result;
  const int64_t chunk = output.numel();
  return Collective(
      call,
      [&](const std::vector<Call>& calls) {
        std::vector<torch::Tensor> parts;
        for (const Call& c : calls) parts.push_back(Flat(c.input).narrow(0, member_ * chunk, chunk));
        result = Reduce(parts, op);
        return Status::Ok();
      },
      [&] { output.view({-1}).copy_(result); });
}

Status ThreadCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  Status args = CheckBroadcastArgs(tensor, root, size());
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, ToString(CollectiveOp::kBroadcast)));
  Call call;
  call.op = CollectiveOp::kBroadcast;
  call.dtype = tensor.scalar_type();
  call.count = tensor.numel();
  call.root = root;
  call.input = tensor;
  torch::Tensor result;
  return Collective(
      call,
      [&](const std::vector<Call>& calls) {
        if (member_ != root) result = calls[root].input.clone();
        return Status::Ok();
      },
      [&] {
        if (member_ != root) tensor.copy_(result);
      });
}

Status ThreadCommunicator::Barrier() {
  Call call;
  call.op = CollectiveOp::kBarrier;
  return Collective(
      call, [](const std::vector<Call>&) { return Status::Ok(); }, [] {});
}

Result<std::unique_ptr<Communicator>> ThreadCommunicator::Split(int color, int key, const std::string& name) {
  Status args = CheckSplitArgs(color, name);
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, "split"));
  Call call;
  call.is_split = true;
  call.color = color;
  call.key = key;
  const uint64_t split = splits_++;
  const ThreadGroupState* parent = group_.get();
  std::shared_ptr<ThreadGroupState> child;
  int child_member = 0;
  Status status = Collective(
      call,
      [&](const std::vector<Call>& calls) {
        // Members of my color, ordered by key and then by parent rank (MPI_Comm_split's rule).
        std::vector<std::pair<int, int>> order;  // (key, parent member)
        for (int m = 0; m < static_cast<int>(calls.size()); ++m) {
          if (calls[m].color == color) order.emplace_back(calls[m].key, m);
        }
        std::sort(order.begin(), order.end());
        std::vector<int> ranks;
        for (size_t i = 0; i < order.size(); ++i) {
          if (order[i].second == member_) child_member = static_cast<int>(i);
          ranks.push_back(group_->world_ranks[order[i].second]);
        }
        std::lock_guard<std::mutex> lock(world_->mu);
        auto& slot = world_->splitting[{parent, split, color}];
        if (!slot) slot = std::make_shared<ThreadGroupState>(std::move(ranks));
        child = slot;
        return Status::Ok();
      },
      [&] {
        // Every member picked up its child before the second barrier; the table entries can go.
        if (member_ != 0) return;
        std::lock_guard<std::mutex> lock(world_->mu);
        for (auto it = world_->splitting.begin(); it != world_->splitting.end();) {
          if (std::get<0>(it->first) == parent && std::get<1>(it->first) == split) {
            it = world_->splitting.erase(it);
          } else {
            ++it;
          }
        }
      });
  if (!status.ok()) return status;
  return std::unique_ptr<Communicator>(new ThreadCommunicator(world_, child, child_member, name, false));
}

}  // namespace lockstep
