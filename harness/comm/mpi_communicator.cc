#include "harness/comm/mpi_communicator.h"

#include <climits>
#include <optional>
#include <utility>

#include "harness/capture/dtype_name.h"
#include "harness/comm/collective_args.h"

namespace lockstep {
namespace {

// The MPI type that reduces `dtype` element-wise. float16/bfloat16 have none in MPI 3.1: they are
// reduced in float32 (see NeedsFloatStaging).
std::optional<MPI_Datatype> ReduceType(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return MPI_FLOAT;
    case c10::ScalarType::Double: return MPI_DOUBLE;
    case c10::ScalarType::Long: return MPI_INT64_T;
    case c10::ScalarType::Int: return MPI_INT32_T;
    case c10::ScalarType::Short: return MPI_INT16_T;
    case c10::ScalarType::Char: return MPI_INT8_T;
    case c10::ScalarType::Byte: return MPI_UINT8_T;
    default: return std::nullopt;
  }
}

bool NeedsFloatStaging(c10::ScalarType dtype) {
  return dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16;
}

// Moves that do not look at values (gather, broadcast) only need the element width.
std::optional<MPI_Datatype> MoveType(c10::ScalarType dtype) {
  switch (c10::elementSize(dtype)) {
    case 1: return MPI_UINT8_T;
    case 2: return MPI_UINT16_T;
    case 4: return MPI_UINT32_T;
    case 8: return MPI_UINT64_T;
    case 16: return MPI_C_DOUBLE_COMPLEX;
    default: return std::nullopt;
  }
}

Status CheckCpu(const torch::Tensor& t) {
  if (!t.device().is_cpu()) {
    return InvalidArgumentError("the mpi backend works on CPU tensors; got one on " + t.device().str());
  }
  return Status::Ok();
}

Status CheckCount(int64_t count) {
  if (count > INT_MAX) {
    return InvalidArgumentError(std::to_string(count) + " elements exceed MPI's int count");
  }
  return Status::Ok();
}

int WorldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::string ErrorText(int mpi_error) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(mpi_error, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(mpi_error);
  return std::string(text, len);
}

}  // namespace

MpiCommunicator::MpiCommunicator(std::shared_ptr<MpiSession> session, MPI_Comm comm, std::string name)
    : session_(std::move(session)), comm_(comm), name_(std::move(name)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  world_rank_ = WorldRank();
  MPI_Comm_set_name(comm_, name_.c_str());
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::CreateWorld() {
  return Duplicate(MPI_COMM_WORLD, "world");
}

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Duplicate(MPI_Comm comm, const std::string& name) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<MpiSession> session, MpiSession::Acquire());
  const std::string context = CallContext(WorldRank(), name, "MPI_Comm_dup");
  MPI_Comm dup = MPI_COMM_NULL;
  // The source communicator may still abort on error; the duplicate is ours to configure.
  int rc = MPI_Comm_dup(comm, &dup);
  if (rc != MPI_SUCCESS) return CommunicationError(context + ": " + ErrorText(rc));
  rc = MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&dup);
    return CommunicationError(context + ": MPI_Comm_set_errhandler: " + ErrorText(rc));
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(session), dup, name));
}

Status MpiCommunicator::Check(int mpi_error, const char* call) const {
  if (mpi_error == MPI_SUCCESS) return Status::Ok();
  return CommunicationError(CallContext(world_rank_, name_, call) + ": " + ErrorText(mpi_error));
}

Status MpiCommunicator::AllReduce(torch::Tensor& tensor, ReduceOp op) {
  const char* call = ToString(CollectiveOp::kAllReduce);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckAllReduceArgs(tensor);
    if (args.ok()) args = CheckCpu(tensor);
    if (args.ok()) args = CheckCount(tensor.numel());
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    return ReduceInPlaceOrInto(tensor, tensor, op, /*scatter=*/false);
  });
}

Status MpiCommunicator::ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) {
  const char* call = ToString(CollectiveOp::kReduceScatter);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckReduceScatterArgs(input, output, size_);
    if (args.ok()) args = CheckCpu(input);
    if (args.ok()) args = CheckCount(input.numel());
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    return ReduceInPlaceOrInto(input, output, op, /*scatter=*/true);
  });
}

// The reduction itself for AllReduce (in place: input and output are the same tensor) and
// ReduceScatter. The sum is MPI's, the division for avg is local, so every rank divides the
// same bits by the same number.
Status MpiCommunicator::ReduceInPlaceOrInto(const torch::Tensor& input, torch::Tensor& output, ReduceOp op,
                                            bool scatter) {
  torch::NoGradGuard no_grad;
  const bool staged = NeedsFloatStaging(input.scalar_type());
  torch::Tensor in = staged ? input.to(torch::kFloat32) : input;
  torch::Tensor out = scatter ? (staged ? torch::empty({output.numel()}, in.options()) : output) : in;
  std::optional<MPI_Datatype> type = ReduceType(in.scalar_type());
  if (!type) {
    return InvalidArgumentError(CallContext(world_rank_, name_, ToString(scatter ? CollectiveOp::kReduceScatter
                                                                                  : CollectiveOp::kAllReduce)) +
                                ": the mpi backend cannot reduce " + DtypeName(input.scalar_type()));
  }
  MPI_Op mpi_op = op == ReduceOp::kMax ? MPI_MAX : MPI_SUM;
  if (scatter) {
    LOCKSTEP_RETURN_IF_ERROR(Check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(),
                                                            static_cast<int>(out.numel()), *type, mpi_op, comm_),
                                   "MPI_Reduce_scatter_block"));
  } else {
    LOCKSTEP_RETURN_IF_ERROR(Check(
        MPI_Allreduce(MPI_IN_PLACE, in.data_ptr(), static_cast<int>(in.numel()), *type, mpi_op, comm_),
        "MPI_Allreduce"));
  }
  if (op == ReduceOp::kAvg) DivideInPlace(out, size_);
  if (staged) output.copy_(out);
  return Status::Ok();
}

Status MpiCommunicator::AllGather(const torch::Tensor& input, torch::Tensor& output) {
  const char* call = ToString(CollectiveOp::kAllGather);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckAllGatherArgs(input, output, size_);
    if (args.ok()) args = CheckCpu(input);
    if (args.ok()) args = CheckCount(output.numel());
    std::optional<MPI_Datatype> type = MoveType(input.scalar_type());
    if (args.ok() && !type) args = InvalidArgumentError("no MPI type for " + DtypeName(input.scalar_type()));
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    const int n = static_cast<int>(input.numel());
    // In place when the input already is this rank's chunk of the output (MPI forbids aliasing).
    const auto* own_chunk = static_cast<const char*>(output.data_ptr()) + static_cast<int64_t>(rank_) * input.nbytes();
    const void* send = input.data_ptr() == own_chunk ? MPI_IN_PLACE : input.data_ptr();
    return Check(MPI_Allgather(send, n, *type, output.data_ptr(), n, *type, comm_), "MPI_Allgather");
  });
}

Status MpiCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  const char* call = ToString(CollectiveOp::kBroadcast);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckBroadcastArgs(tensor, root, size_);
    if (args.ok()) args = CheckCpu(tensor);
    if (args.ok()) args = CheckCount(tensor.numel());
    std::optional<MPI_Datatype> type = MoveType(tensor.scalar_type());
    if (args.ok() && !type) args = InvalidArgumentError("no MPI type for " + DtypeName(tensor.scalar_type()));
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    return Check(MPI_Bcast(tensor.data_ptr(), static_cast<int>(tensor.numel()), *type, root, comm_), "MPI_Bcast");
  });
}

Status MpiCommunicator::Barrier() { return Check(MPI_Barrier(comm_), "MPI_Barrier"); }

Result<std::unique_ptr<Communicator>> MpiCommunicator::Split(int color, int key, const std::string& name) {
  Status args = CheckSplitArgs(color, name);
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, "split"));
  MPI_Comm child = MPI_COMM_NULL;
  LOCKSTEP_RETURN_IF_ERROR(Check(MPI_Comm_split(comm_, color, key, &child), "MPI_Comm_split"));
  Status handler = Check(MPI_Comm_set_errhandler(child, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (!handler.ok()) {
    MPI_Comm_free(&child);
    return handler;
  }
  return std::unique_ptr<Communicator>(new MpiCommunicator(session_, child, name));
}

}  // namespace lockstep
