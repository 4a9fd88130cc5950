#include "harness/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstring>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "harness/capture/dtype_name.h"
#include "harness/comm/collective_args.h"
#include "harness/comm/mpi_communicator.h"
#include "harness/comm/rendezvous_store.h"

namespace lockstep {
namespace {

std::optional<ncclDataType_t> NcclType(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return ncclFloat32;
    case c10::ScalarType::Double: return ncclFloat64;
    case c10::ScalarType::Half: return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case c10::ScalarType::BFloat16: return ncclBfloat16;
#endif
    case c10::ScalarType::Long: return ncclInt64;
    case c10::ScalarType::Int: return ncclInt32;
    case c10::ScalarType::Char: return ncclInt8;
    case c10::ScalarType::Byte: return ncclUint8;
    case c10::ScalarType::Bool: return ncclUint8;  // moved, never reduced (CheckReducible)
    default: return std::nullopt;
  }
}

std::optional<ncclRedOp_t> NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kAvg:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
      return ncclAvg;
#else
      return std::nullopt;
#endif
  }
  return std::nullopt;
}

std::string NcclText(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  // The detailed reason ("peer rank 3 closed the connection") lives in NCCL's last-error slot.
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
#else
  (void)comm;
#endif
  return text;
}

int WorldRank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return -1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

}  // namespace

int NcclCommunicator::DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

NcclCommunicator::NcclCommunicator(ncclComm* comm, CUstream_st* stream, float* scratch, int device, int rank,
                                   int size, int world_rank, std::string name)
    : comm_(comm),
      stream_(stream),
      scratch_(scratch),
      device_(device),
      rank_(rank),
      size_(size),
      world_rank_(world_rank),
      name_(std::move(name)) {}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (scratch_ != nullptr) cudaFree(scratch_);
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Init(const void* unique_id, int device, int rank,
                                                                 int size, int world_rank, const std::string& name) {
  const std::string context = CallContext(world_rank, name, "nccl init");
  const int devices = DeviceCount();
  if (devices == 0) return UnavailableError(context + ": no CUDA device is visible");
  if (device < 0 || device >= devices) {
    return InvalidArgumentError(context + ": device " + std::to_string(device) + " outside the " +
                                std::to_string(devices) + " visible devices");
  }
  cudaError_t cuda = cudaSetDevice(device);
  if (cuda != cudaSuccess) return CommunicationError(context + ": cudaSetDevice: " + cudaGetErrorString(cuda));
  ncclUniqueId id;
  std::memcpy(&id, unique_id, sizeof(id));
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRank(&comm, size, id, rank);
  if (result != ncclSuccess) {
    return CommunicationError(CallContext(world_rank, name, "ncclCommInitRank") + ": " + NcclText(result, comm));
  }
  return Adopt(comm, device, rank, size, world_rank, name, context);
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Adopt(ncclComm* comm, int device, int rank, int size,
                                                                  int world_rank, const std::string& name,
                                                                  const std::string& context) {
  // A blocking stream: it waits for work queued on the legacy default stream, where a LibTorch
  // that does not switch streams produced the tensors.
  cudaStream_t stream = nullptr;
  float* scratch = nullptr;
  cudaError_t cuda = cudaStreamCreate(&stream);
  if (cuda == cudaSuccess) cuda = cudaMalloc(reinterpret_cast<void**>(&scratch), sizeof(float));
  if (cuda != cudaSuccess) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    ncclCommDestroy(comm);
    return CommunicationError(context + ": " + cudaGetErrorString(cuda));
  }
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(comm, stream, scratch, device, rank, size, world_rank, name));
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateOverStore(const RendezvousOptions& options,
                                                                            int device) {
  if (DeviceCount() == 0) return UnavailableError(CallContext(options.rank, "world", "nccl init") + ": no CUDA device is visible");
  LOCKSTEP_ASSIGN_OR_RETURN(c10::intrusive_ptr<c10d::Store> store, CreateRendezvousStore(options));
  const std::string key = "lockstep/nccl/world/unique_id";
  ncclUniqueId id;
  try {
    if (options.rank == 0) {
      ncclResult_t result = ncclGetUniqueId(&id);
      if (result != ncclSuccess) {
        return CommunicationError(CallContext(options.rank, "world", "ncclGetUniqueId") + ": " +
                                  NcclText(result, nullptr));
      }
      const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
      store->set(key, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
    } else {
      std::vector<uint8_t> bytes = store->get(key);  // waits for rank 0, up to the store timeout
      if (bytes.size() != sizeof(id)) {
        return CommunicationError(CallContext(options.rank, "world", "nccl bootstrap") + ": the unique id in the store has " +
                                  std::to_string(bytes.size()) + " bytes, expected " + std::to_string(sizeof(id)));
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
  } catch (const c10::Error& e) {
    return CommunicationError(CallContext(options.rank, "world", "nccl bootstrap") + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return CommunicationError(CallContext(options.rank, "world", "nccl bootstrap") + ": " + e.what());
  }
  // The store (rank 0 serves it) stays alive until every rank is past ncclCommInitRank.
  return Init(&id, device, options.rank, options.world_size, options.rank, "world");
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateOverMpi(MpiCommunicator& mpi, int device) {
  const int world_rank = WorldRank();
  if (DeviceCount() == 0) {
    return UnavailableError(CallContext(world_rank, mpi.group_name(), "nccl init") + ": no CUDA device is visible");
  }
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclResult_t generated = ncclSuccess;
  if (mpi.rank() == 0) generated = ncclGetUniqueId(&id);
  // Broadcast even when generation failed, so that no peer waits forever; the bytes are zero then
  // and every rank sees the failure below through the broadcast flag.
  int ok = generated == ncclSuccess ? 1 : 0;
  int rc = MPI_Bcast(&ok, 1, MPI_INT, 0, mpi.comm());
  if (rc == MPI_SUCCESS) rc = MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi.comm());
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return CommunicationError(CallContext(world_rank, mpi.group_name(), "MPI_Bcast") + ": " + std::string(text, len));
  }
  if (!ok) {
    return CommunicationError(CallContext(world_rank, mpi.group_name(), "ncclGetUniqueId") +
                              (mpi.rank() == 0 ? ": " + NcclText(generated, nullptr) : ": failed on rank 0"));
  }
  return Init(&id, device, mpi.rank(), mpi.size(), world_rank, mpi.group_name());
}

Status NcclCommunicator::Finish(const char* call) {
  cudaError_t cuda = cudaStreamSynchronize(stream_);
  if (cuda != cudaSuccess) {
    return CommunicationError(CallContext(world_rank_, name_, call) + ": cudaStreamSynchronize: " +
                              cudaGetErrorString(cuda));
  }
  ncclResult_t async = ncclSuccess;
  ncclResult_t result = ncclCommGetAsyncError(comm_, &async);
  if (result == ncclSuccess) result = async;
  if (result != ncclSuccess) return CommunicationError(CallContext(world_rank_, name_, call) + ": " + NcclText(result, comm_));
  return Status::Ok();
}

#define LOCKSTEP_NCCL_CALL(call_name, expr)                                                          \
  do {                                                                                               \
    ncclResult_t lockstep_nccl_ = (expr);                                                            \
    if (lockstep_nccl_ != ncclSuccess) {                                                             \
      return CommunicationError(CallContext(world_rank_, name_, call_name) + ": " +                 \
                                NcclText(lockstep_nccl_, comm_));                                    \
    }                                                                                                \
  } while (0)

namespace {

Status Prepare(int device, c10::ScalarType dtype, std::optional<ncclDataType_t>* type) {
  *type = NcclType(dtype);
  if (!*type) return InvalidArgumentError("NCCL has no type for " + DtypeName(dtype));
  cudaError_t cuda = cudaSetDevice(device);
  if (cuda != cudaSuccess) return CommunicationError(std::string("cudaSetDevice: ") + cudaGetErrorString(cuda));
  return Status::Ok();
}

}  // namespace

Status NcclCommunicator::AllReduceRaw(void* data, int64_t count, c10::ScalarType dtype, ReduceOp op) {
  const char* call = "ncclAllReduce";
  std::optional<ncclDataType_t> type;
  Status prepared = Prepare(device_, dtype, &type);
  if (!prepared.ok()) return prepared.WithContext(CallContext(world_rank_, name_, call));
  std::optional<ncclRedOp_t> nccl_op = NcclOp(op);
  if (!nccl_op) return UnavailableError(CallContext(world_rank_, name_, call) + ": ncclAvg needs NCCL >= 2.10");
  LOCKSTEP_NCCL_CALL(call, ncclAllReduce(data, data, static_cast<size_t>(count), *type, *nccl_op, comm_, stream_));
  return Finish(call);
}

Status NcclCommunicator::AllGatherRaw(const void* input, void* output, int64_t count_per_rank,
                                      c10::ScalarType dtype) {
  const char* call = "ncclAllGather";
  std::optional<ncclDataType_t> type;
  Status prepared = Prepare(device_, dtype, &type);
  if (!prepared.ok()) return prepared.WithContext(CallContext(world_rank_, name_, call));
  LOCKSTEP_NCCL_CALL(call, ncclAllGather(input, output, static_cast<size_t>(count_per_rank), *type, comm_, stream_));
  return Finish(call);
}

Status NcclCommunicator::ReduceScatterRaw(const void* input, void* output, int64_t count_per_rank,
                                          c10::ScalarType dtype, ReduceOp op) {
  const char* call = "ncclReduceScatter";
  std::optional<ncclDataType_t> type;
  Status prepared = Prepare(device_, dtype, &type);
  if (!prepared.ok()) return prepared.WithContext(CallContext(world_rank_, name_, call));
  std::optional<ncclRedOp_t> nccl_op = NcclOp(op);
  if (!nccl_op) return UnavailableError(CallContext(world_rank_, name_, call) + ": ncclAvg needs NCCL >= 2.10");
  LOCKSTEP_NCCL_CALL(call, ncclReduceScatter(input, output, static_cast<size_t>(count_per_rank), *type, *nccl_op,
                                             comm_, stream_));
  return Finish(call);
}

Status NcclCommunicator::BroadcastRaw(void* data, int64_t count, c10::ScalarType dtype, int root) {
  const char* call = "ncclBroadcast";
  std::optional<ncclDataType_t> type;
  Status prepared = Prepare(device_, dtype, &type);
  if (!prepared.ok()) return prepared.WithContext(CallContext(world_rank_, name_, call));
  LOCKSTEP_NCCL_CALL(call, ncclBroadcast(data, data, static_cast<size_t>(count), *type, root, comm_, stream_));
  return Finish(call);
}

Status NcclCommunicator::CheckTensor(const torch::Tensor& t, const char* call) const {
  if (!t.device().is_cuda() || t.device().index() != device_) {
    return InvalidArgumentError(CallContext(world_rank_, name_, call) + ": the nccl backend works on tensors on cuda:" +
                                std::to_string(device_) + "; got one on " + t.device().str());
  }
  return Status::Ok();
}

Status NcclCommunicator::AllReduce(torch::Tensor& tensor, ReduceOp op) {
  const char* call = ToString(CollectiveOp::kAllReduce);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckAllReduceArgs(tensor);
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    LOCKSTEP_RETURN_IF_ERROR(CheckTensor(tensor, call));
    return AllReduceRaw(tensor.data_ptr(), tensor.numel(), tensor.scalar_type(), op);
  });
}

Status NcclCommunicator::AllGather(const torch::Tensor& input, torch::Tensor& output) {
  const char* call = ToString(CollectiveOp::kAllGather);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckAllGatherArgs(input, output, size_);
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    LOCKSTEP_RETURN_IF_ERROR(CheckTensor(input, call));
    return AllGatherRaw(input.data_ptr(), output.data_ptr(), input.numel(), input.scalar_type());
  });
}

Status NcclCommunicator::ReduceScatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) {
  const char* call = ToString(CollectiveOp::kReduceScatter);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckReduceScatterArgs(input, output, size_);
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    LOCKSTEP_RETURN_IF_ERROR(CheckTensor(input, call));
    return ReduceScatterRaw(input.data_ptr(), output.data_ptr(), output.numel(), input.scalar_type(), op);
  });
}

Status NcclCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  const char* call = ToString(CollectiveOp::kBroadcast);
  return GuardCall(world_rank_, name_, call, [&]() -> Status {
    Status args = CheckBroadcastArgs(tensor, root, size_);
    if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, call));
    LOCKSTEP_RETURN_IF_ERROR(CheckTensor(tensor, call));
    return BroadcastRaw(tensor.data_ptr(), tensor.numel(), tensor.scalar_type(), root);
  });
}

Status NcclCommunicator::Barrier() {
  // NCCL has no barrier: a one-element all-reduce that every rank must join, then a sync.
  return AllReduceRaw(scratch_, 1, c10::ScalarType::Float, ReduceOp::kSum);
}

Result<std::unique_ptr<Communicator>> NcclCommunicator::Split(int color, int key, const std::string& name) {
  Status args = CheckSplitArgs(color, name);
  if (!args.ok()) return args.WithContext(CallContext(world_rank_, name_, "split"));
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  cudaError_t cuda = cudaSetDevice(device_);
  if (cuda != cudaSuccess) {
    return CommunicationError(CallContext(world_rank_, name_, "split") + ": cudaSetDevice: " + cudaGetErrorString(cuda));
  }
  ncclComm_t child = nullptr;
  LOCKSTEP_NCCL_CALL("ncclCommSplit", ncclCommSplit(comm_, color, key, &child, nullptr));
  int child_rank = 0;
  int child_size = 1;
  ncclCommUserRank(child, &child_rank);
  ncclCommCount(child, &child_size);
  LOCKSTEP_ASSIGN_OR_RETURN(
      std::unique_ptr<NcclCommunicator> split,
      Adopt(child, device_, child_rank, child_size, world_rank_, name, CallContext(world_rank_, name_, "split")));
  return std::unique_ptr<Communicator>(std::move(split));
#else
  (void)key;
  return UnavailableError(CallContext(world_rank_, name_, "split") + ": ncclCommSplit needs NCCL >= 2.18");
#endif
}

#undef LOCKSTEP_NCCL_CALL

}  // namespace lockstep
