#include "probe/recording_process_group.h"

#include <ATen/record_function.h>
#include <Python.h>

#include <optional>
#include <utility>

#include "harness/capture/dtype_name.h"
#include "probe/collective_site.h"
#include "probe/held_works.h"
#include "probe/work_completion.h"

namespace lockstep::probe {
namespace {

int64_t Numel(const std::vector<at::Tensor>& tensors) {
  int64_t n = 0;
  for (const at::Tensor& t : tensors) n += t.numel();
  return n;
}

const at::Tensor* First(const std::vector<at::Tensor>& tensors) { return tensors.empty() ? nullptr : &tensors.front(); }

// all_to_all_single's split sizes, which count rows of dim 0, in elements; no sizes: dim 0 split
// evenly over the group, as c10d does.
std::vector<int64_t> SplitElements(const at::Tensor& t, const std::vector<int64_t>& rows, int group_size) {
  if (!t.defined() || group_size <= 0) return {};
  const int64_t dim0 = t.dim() > 0 ? t.size(0) : 0;
  const int64_t per_row = dim0 > 0 ? t.numel() / dim0 : 0;
  std::vector<int64_t> out;
  if (rows.empty()) {
    out.assign(static_cast<size_t>(group_size), dim0 / group_size * per_row);
  } else {
    for (int64_t r : rows) out.push_back(r * per_row);
  }
  return out;
}

std::vector<int64_t> Numels(const std::vector<at::Tensor>& tensors) {
  std::vector<int64_t> out;
  for (const at::Tensor& t : tensors) out.push_back(t.defined() ? t.numel() : 0);
  return out;
}

// Which backend types a group holds. c10d::ProcessGroup keeps them in a protected map, and its one
// public query, getBackend(BackendType), throws for a type it does not hold: asking that way
// formats a torch error message (an integer through a stream) for every miss, inside the user's
// process. In an extension that carries its own libstdc++ that formatting crashed (issue 35), and
// finding things out by throwing is no way to ask anyway. A member pointer named through a derived
// class is the language's way to read a protected member of a base object; nothing is made of the
// derived type.
struct ProcessGroupBackends : c10d::ProcessGroup {
  static bool Holds(const c10d::ProcessGroup& group, c10d::ProcessGroup::BackendType type) {
    const auto& backends = group.*(&ProcessGroupBackends::backendTypeToBackend_);
    return backends.find(type) != backends.end();
  }
};

// A backend type `group` holds no backend for, to register a wrapper under.
std::optional<c10d::ProcessGroup::BackendType> UnusedBackendType(const c10d::ProcessGroup& group) {
  using Type = c10d::ProcessGroup::BackendType;
  for (Type t : {Type::CUSTOM, Type::UCC, Type::XCCL, Type::MPI, Type::NCCL, Type::GLOO}) {
    if (!ProcessGroupBackends::Holds(group, t)) return t;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> InstallRecordingBackends(c10d::ProcessGroup& group, const std::shared_ptr<ProbeSession>& session,
                                                  const std::string& name) {
  struct Made {
    c10d::Backend* inner;
    c10::intrusive_ptr<WrappedGroup> wrapper;
    c10d::ProcessGroup::BackendType type;
  };
  std::vector<Made> made;
  std::vector<std::string> wrapped;
  for (const c10::Device& device : group.getDeviceTypes()) {
    c10::intrusive_ptr<WrappedGroup> inner = group.getBackend(device.type());
    if (dynamic_cast<RecordingProcessGroup*>(inner.get()) != nullptr) continue;
    const Made* shared = nullptr;
    for (const Made& m : made) {
      if (m.inner == inner.get()) shared = &m;
    }
    if (shared != nullptr) {
      // Registered again under the shared wrapper's type: setBackend reuses the backend it holds.
      group.setBackend(device.type(), shared->type, shared->wrapper);
    } else {
      const std::optional<c10d::ProcessGroup::BackendType> type = UnusedBackendType(group);
      TORCH_CHECK(type.has_value(), "no free backend type left in group ", name, " to register the recording backend");
      c10::intrusive_ptr<WrappedGroup> wrapper = c10::make_intrusive<RecordingProcessGroup>(inner, session, name);
      group.setBackend(device.type(), *type, wrapper);
      made.push_back(Made{inner.get(), wrapper, *type});
    }
    wrapped.push_back(c10::DeviceTypeName(device.type(), /*lower_case=*/true));
  }
  return wrapped;
}

std::string ReduceName(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return "sum";
    case c10d::ReduceOp::AVG: return "avg";
    case c10d::ReduceOp::MAX: return "max";
    case c10d::ReduceOp::MIN: return "min";
    case c10d::ReduceOp::PRODUCT: return "product";
    case c10d::ReduceOp::BAND: return "band";
    case c10d::ReduceOp::BOR: return "bor";
    case c10d::ReduceOp::BXOR: return "bxor";
    case c10d::ReduceOp::PREMUL_SUM: return "premul_sum";
    default: return "unknown";
  }
}

RecordingProcessGroup::RecordingProcessGroup(c10::intrusive_ptr<WrappedGroup> inner,
                                             std::shared_ptr<ProbeSession> session, std::string group)
    : WrappedGroup(inner->getRank(), inner->getSize()),
      inner_(std::move(inner)),
      session_(std::move(session)),
      group_(std::move(group)) {
  // Made after the group was named (init_process_group and new_group name it before returning):
  // the group's name is read off its first backend, which is now this one.
  WrappedGroup::setGroupUid(inner_->getGroupUid());
  setGroupDesc(inner_->getGroupDesc());
}

RecordingProcessGroup::~RecordingProcessGroup() {
  // Destroying the group we wrap joins its worker threads (ProcessGroupGloo), and a worker may be
  // freeing a tensor that has a Python object, which takes the GIL. When the last reference goes
  // from Python (DDP's Reducer freed as the program's main() returns), this thread holds the GIL
  // and would wait forever for a worker that waits for it: a rank hung after its last step. torch's
  // own bindings drop the GIL to destroy a group; so does the wrapper.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* saved = PyEval_SaveThread();
    inner_.reset();
    PyEval_RestoreThread(saved);
  }
}

uint64_t RecordingProcessGroup::Begin(const char* op, const at::Tensor* first, int64_t count, int64_t root,
                                      const std::string& reduce) {
  RECORD_USER_SCOPE("lockstep.probe.collective_record");  // named in a torch profile (probe.py's _guard)
  CollectiveRecord r;
  r.group = group_;
  r.op = op;
  r.dtype = first && first->defined() ? DtypeName(first->scalar_type()) : "";
  r.count = count;
  r.root = static_cast<int>(root);
  r.reduce = reduce;
  r.where = CollectiveSite();
  return session_->CollectiveStarted(std::move(r));
}

uint64_t RecordingProcessGroup::BeginAllToAll(const at::Tensor* first, int64_t count, std::vector<int64_t> in_splits,
                                              std::vector<int64_t> out_splits) {
  RECORD_USER_SCOPE("lockstep.probe.collective_record");
  CollectiveRecord r;
  r.group = group_;
  r.op = "all_to_all";
  r.dtype = first && first->defined() ? DtypeName(first->scalar_type()) : "";
  r.count = count;
  // Where this rank's splits sit in its peers': the collective_args check pairs them by it.
  r.group_rank = getRank();
  r.in_splits = std::move(in_splits);
  r.out_splits = std::move(out_splits);
  r.where = CollectiveSite();
  return session_->CollectiveStarted(std::move(r));
}

WorkPtr RecordingProcessGroup::End(WorkPtr work, uint64_t seq) {
  RECORD_USER_SCOPE("lockstep.probe.collective_record");
  // The end is when the collective's result is ready, which for an asynchronous backend is after
  // this call returns (work_completion.h). The session may be gone by then.
  std::weak_ptr<ProbeSession> session = session_;
  WhenWorkEnds(work, [session, group = group_, seq] {
    if (auto s = session.lock()) s->CollectiveEnded(group, seq);
  });
  // The works of earlier collectives that no one else holds now go, on the caller's thread;
  // this one is held until then (held_works.h: a backend's worker must not drop it last).
  LetGoOfUnsharedWorks();
  HoldWork(work);
  return work;
}

WorkPtr RecordingProcessGroup::broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) {
  const uint64_t seq = Begin("broadcast", First(tensors), Numel(tensors), opts.rootRank, "");
  return End(inner_->broadcast(tensors, opts), seq);
}

WorkPtr RecordingProcessGroup::allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const uint64_t seq = Begin("all_reduce", First(tensors), Numel(tensors), -1, ReduceName(opts.reduceOp));
  return End(inner_->allreduce(tensors, opts), seq);
}

WorkPtr RecordingProcessGroup::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                   const c10d::AllreduceCoalescedOptions& opts) {
  const uint64_t seq = Begin("all_reduce", First(tensors), Numel(tensors), -1, ReduceName(opts.reduceOp));
  return End(inner_->allreduce_coalesced(tensors, opts), seq);
}

WorkPtr RecordingProcessGroup::reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  const uint64_t seq = Begin("reduce", First(tensors), Numel(tensors), opts.rootRank, ReduceName(opts.reduceOp));
  return End(inner_->reduce(tensors, opts), seq);
}

WorkPtr RecordingProcessGroup::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                         std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  const uint64_t seq = Begin("all_gather", First(inputs), Numel(inputs), -1, "");
  return End(inner_->allgather(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::_allgather_base(at::Tensor& output, at::Tensor& input,
                                               const c10d::AllgatherOptions& opts) {
  const uint64_t seq = Begin("all_gather", &input, input.numel(), -1, "");
  return End(inner_->_allgather_base(output, input, opts), seq);
}

WorkPtr RecordingProcessGroup::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::AllgatherOptions& opts) {
  const uint64_t seq = Begin("all_gather", First(inputs), Numel(inputs), -1, "");
  return End(inner_->allgather_coalesced(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                      const c10d::GatherOptions& opts) {
  const uint64_t seq = Begin("gather", First(inputs), Numel(inputs), opts.rootRank, "");
  return End(inner_->gather(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                       const c10d::ScatterOptions& opts) {
  // What this rank receives: the root's inputs exist on the root only.
  const uint64_t seq = Begin("scatter", First(outputs), Numel(outputs), opts.rootRank, "");
  return End(inner_->scatter(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::reduce_scatter(std::vector<at::Tensor>& outputs,
                                              std::vector<std::vector<at::Tensor>>& inputs,
                                              const c10d::ReduceScatterOptions& opts) {
  int64_t count = 0;
  for (const auto& list : inputs) count += Numel(list);
  const at::Tensor* first = inputs.empty() ? nullptr : First(inputs.front());
  const uint64_t seq = Begin("reduce_scatter", first, count, -1, ReduceName(opts.reduceOp));
  return End(inner_->reduce_scatter(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                    const c10d::ReduceScatterOptions& opts) {
  const uint64_t seq = Begin("reduce_scatter", &input, input.numel(), -1, ReduceName(opts.reduceOp));
  return End(inner_->_reduce_scatter_base(output, input, opts), seq);
}

WorkPtr RecordingProcessGroup::allreduce_sparse(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const uint64_t seq = Begin("all_reduce", First(tensors), Numel(tensors), -1, ReduceName(opts.reduceOp));
  return End(inner_->allreduce_sparse(tensors, opts), seq);
}

// One record for the coalesced batch, as for allgather_coalesced: what every rank must agree on is
// the batch's dtype and total count.
WorkPtr RecordingProcessGroup::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::AllgatherOptions& opts) {
  const uint64_t seq = Begin("all_gather", First(inputs), Numel(inputs), -1, "");
  return End(inner_->allgather_into_tensor_coalesced(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::ReduceScatterOptions& opts) {
  const uint64_t seq = Begin("reduce_scatter", First(inputs), Numel(inputs), -1, ReduceName(opts.reduceOp));
  return End(inner_->reduce_scatter_tensor_coalesced(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::alltoall_base(at::Tensor& output, at::Tensor& input,
                                             std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
                                             const c10d::AllToAllOptions& opts) {
  const uint64_t seq = BeginAllToAll(&input, input.numel(), SplitElements(input, input_splits, getSize()),
                                     SplitElements(output, output_splits, getSize()));
  return End(inner_->alltoall_base(output, input, output_splits, input_splits, opts), seq);
}

WorkPtr RecordingProcessGroup::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::AllToAllOptions& opts) {
  const uint64_t seq = BeginAllToAll(First(inputs), Numel(inputs), Numels(inputs), Numels(outputs));
  return End(inner_->alltoall(outputs, inputs, opts), seq);
}

WorkPtr RecordingProcessGroup::barrier(const c10d::BarrierOptions& opts) {
  const uint64_t seq = Begin("barrier", nullptr, 0, -1, "");
  return End(inner_->barrier(opts), seq);
}

void RecordingProcessGroup::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const uint64_t seq = Begin("barrier", nullptr, 0, -1, "");
  inner_->monitoredBarrier(opts, wait_all_ranks);
  session_->CollectiveEnded(group_, seq);
}

}  // namespace lockstep::probe
