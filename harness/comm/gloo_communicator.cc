#include "harness/comm/gloo_communicator.h"

// Debian's Torch CMake config does not export the define that c10d's Gloo header is guarded by;
// the library itself is built with it (ProcessGroupGloo's symbols are in libtorch_cpu.so).
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "harness/comm/collective_args.h"
#include "harness/comm/rendezvous_store.h"

namespace lockstep {

struct GlooCommunicator::State {
  c10::intrusive_ptr<c10d::Store> store;  // the rendezvous store, shared by every group
  std::string prefix;                     // this group's keys in `store`
  c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> options;  // transport device and timeout
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::string name;
  int rank = 0;
  int size = 1;
  int world_rank = 0;
  uint64_t splits = 0;
};

namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

std::shared_ptr<::gloo::transport::Device> MakeDevice(const RendezvousOptions& options,
                                                      const std::string& bind_hostname) {
  if (!bind_hostname.empty()) return c10d::ProcessGroupGloo::createDeviceForHostname(bind_hostname);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0') {
    std::string first(ifname);
    first = first.substr(0, first.find(','));
    return c10d::ProcessGroupGloo::createDeviceForInterface(first);
  }
  if (options.store_file.empty() && IsLoopback(options.master_addr)) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> MakeGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                     const std::string& prefix, int rank, int size,
                                                     const c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>& options) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  // Blocks until every member connected (a full mesh through the store), up to options->timeout.
  return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
}

Status CheckCpu(const torch::Tensor& t) {
  if (!t.device().is_cpu()) {
    return InvalidArgumentError("the gloo backend works on CPU tensors; got one on " + t.device().str());
  }
  return Status::Ok();
}

c10d::ReduceOp ToGloo(ReduceOp op) {
  // Gloo has no average: avg is a sum here, divided afterwards by the caller.
  return op == ReduceOp::kMax ? c10d::ReduceOp(c10d::ReduceOp::MAX) : c10d::ReduceOp(c10d::ReduceOp::SUM);
}

// Errors surface from wait() as the exception stored in the Work; they are caught by GuardCall.
void Wait(const c10::intrusive_ptr<c10d::Work>& work) { work->wait(); }

void AllGatherInto(c10d::ProcessGroupGloo& group, const torch::Tensor& input, torch::Tensor& output) {
  const int64_t n = input.numel();
  std::vector<std::vector<at::Tensor>> outputs(1);
  torch::Tensor flat_out = output.view({-1});
  for (int r = 0; r < group.getSize(); ++r) outputs[0].push_back(flat_out.narrow(0, r * n, n));
  std::vector<at::Tensor> inputs{input.reshape({-1})};
  Wait(group.allgather(outputs, inputs));
}

}  // namespace

GlooCommunicator::GlooCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}
GlooCommunicator::~GlooCommunicator() = default;

int GlooCommunicator::rank() const { return state_->rank; }
int GlooCommunicator::size() const { return state_->size; }
const std::string& GlooCommunicator::group_name() const { return state_->name; }

Result<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Create(const RendezvousOptions& options,
                                                                   const std::string& bind_hostname) {
  LOCKSTEP_ASSIGN_OR_RETURN(c10::intrusive_ptr<c10d::Store> store, CreateRendezvousStore(options));
  auto state = std::make_unique<State>();
  state->store = store;
  state->prefix = "lockstep/gloo/world";
  state->name = "world";
  state->rank = options.rank;
  state->size = options.world_size;
  state->world_rank = options.rank;
  Status status = GuardCall(options.rank, "world", "ProcessGroupGloo", [&]() -> Status {
    state->options = c10d::ProcessGroupGloo::Options::create(options.timeout);
    state->options->devices.push_back(MakeDevice(options, bind_hostname));
    state->group = MakeGroup(store, state->prefix, options.rank, options.world_size, state->options);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return std::unique_ptr<GlooCommunicator>(new GlooCommunicator(std::move(state)));
}

Status GlooCommunicator::AllReduce(torch::Tensor& tensor, ReduceOp op) {
  State& s = *state_;
  const char* call = ToString(CollectiveOp::kAllReduce);
  return GuardCall(s.world_rank, s.name, call, [&]() -> Status {
    Status args = CheckAllReduceArgs(tensor);
    if (args.ok()) args = CheckCpu(tensor);
    if (!args.ok()) return args.WithContext(CallContext(s.world_rank, s.name, call));
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions opts;
    opts.reduceOp = ToGloo(op);
    Wait(s.group->allreduce(tensors, opts));
    if (op == ReduceOp::kAvg) DivideInPlace(tensor, s.size);
    return Status::Ok();
  });
}

Status GlooCommunicator::AllGather(const torch::Tensor& input, torch::Tensor& output) {
  State& s = *state_;
  const char* call = ToString(CollectiveOp::kAllGather);
  return GuardCall(s.world_rank, s.name, call, [&]() -> Status {
    Status args = CheckAllGatherArgs(input, output, s.size);
    if (args.ok()) args = CheckCpu(input);
    if (!args.ok()) return args.WithContext(CallContext(s.world_rank, s.name, call));
    torch::NoGradGuard no_grad;
    AllGatherInto(*s.group, input, output);
    return Status::Ok();
  });
}

Status GlooCommunicator::ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) {
  State& s = *state_;
  const char* call = ToString(CollectiveOp::kReduceScatter);
  return GuardCall(s.world_rank, s.name, call, [&]() -> Status {
    Status args = CheckReduceScatterArgs(input, output, s.size);
    if (args.ok()) args = CheckCpu(input);
    if (!args.ok()) return args.WithContext(CallContext(s.world_rank, s.name, call));
    torch::NoGradGuard no_grad;
    at::Tensor flat_in = input.reshape({-1}).contiguous();
    at::Tensor flat_out = output.is_contiguous() ? output.view({-1}) : torch::empty({output.numel()}, output.options());
    c10d::ReduceScatterOptions opts;
    opts.reduceOp = ToGloo(op);
    Wait(s.group->_reduce_scatter_base(flat_out, flat_in, opts));
    if (!output.is_contiguous()) output.copy_(flat_out.view_as(output));
    if (op == ReduceOp::kAvg) DivideInPlace(output, s.size);
    return Status::Ok();
  });
}

Status GlooCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  State& s = *state_;
  const char* call = ToString(CollectiveOp::kBroadcast);
  return GuardCall(s.world_rank, s.name, call, [&]() -> Status {
    Status args = CheckBroadcastArgs(tensor, root, s.size);
    if (args.ok()) args = CheckCpu(tensor);
    if (!args.ok()) return args.WithContext(CallContext(s.world_rank, s.name, call));
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    Wait(s.group->broadcast(tensors, opts));
    return Status::Ok();
  });
}

Status GlooCommunicator::Barrier() {
  State& s = *state_;
  return GuardCall(s.world_rank, s.name, ToString(CollectiveOp::kBarrier), [&]() -> Status {
    Wait(s.group->barrier());
    return Status::Ok();
  });
}

Result<std::unique_ptr<Communicator>> GlooCommunicator::Split(int color, int key, const std::string& name) {
  State& s = *state_;
  Status args = CheckSplitArgs(color, name);
  if (!args.ok()) return args.WithContext(CallContext(s.world_rank, s.name, "split"));
  auto child = std::make_unique<State>();
  Status status = GuardCall(s.world_rank, s.name, "split", [&]() -> Status {
    // Everyone learns everyone's (color, key) through the parent group, then each color builds
    // its own group; the split number keeps the store keys of repeated splits apart.
    torch::Tensor mine = torch::tensor({static_cast<int64_t>(color), static_cast<int64_t>(key)}, torch::kInt64);
    torch::Tensor all = torch::empty({2 * s.size}, torch::kInt64);
    AllGatherInto(*s.group, mine, all);
    const uint64_t split = s.splits++;
    std::vector<std::pair<int64_t, int>> members;  // (key, parent rank), MPI_Comm_split's order
    auto values = all.accessor<int64_t, 1>();
    for (int r = 0; r < s.size; ++r) {
      if (values[2 * r] == color) members.emplace_back(values[2 * r + 1], r);
    }
    std::sort(members.begin(), members.end());
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].second == s.rank) child->rank = static_cast<int>(i);
    }
    child->size = static_cast<int>(members.size());
    child->store = s.store;
    child->prefix = s.prefix + "/split" + std::to_string(split) + "/" + name + "/color" + std::to_string(color);
    child->options = s.options;
    child->name = name;
    child->world_rank = s.world_rank;
    child->group = MakeGroup(child->store, child->prefix, child->rank, child->size, child->options);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return std::unique_ptr<Communicator>(new GlooCommunicator(std::move(child)));
}

}  // namespace lockstep
