// The symbols NCCL looks for in liblockstep_nccl_profiler.so (NCCL_PROFILER_PLUGIN=<path>):
// ncclProfiler_v5 (NCCL 2.28 and later) and ncclProfiler_v4 (NCCL 2.27), each a table of five
// functions that translate that version's descriptors for nccl_profiler_recorder.h. NCCL asks for
// the newest version it knows first, so each NCCL gets the table written for it.
//
// Nothing here may throw into NCCL or fail it: every function returns ncclSuccess (the recorder
// catches and says once on stderr what went wrong), and one that cannot make a communicator's
// context leaves the activation mask at 0, so NCCL makes no more events for us.
#include "harness/nccl_profiler/nccl_profiler_abi.h"
#include "harness/nccl_profiler/nccl_profiler_recorder.h"

namespace lockstep::nccl_profiler {
namespace {

using namespace nccl_abi;  // NOLINT: the ABI's own names read best unqualified here

constexpr const char* kPluginName = "lockstep";

ncclResult_t Init(void** context, int* activation_mask, const char* comm_name, uint64_t comm_hash, int nranks) {
  if (context == nullptr || activation_mask == nullptr) return ncclSuccess;
  CommProfile* comm = OpenCommunicator(comm_hash, comm_name, nranks);
  *context = comm;
  *activation_mask = comm != nullptr ? ActivationMask() : 0;
  return ncclSuccess;
}

// Any event type the mask did not ask for, or asked for only as a parent or a child, still gets a
// handle written: NCCL keeps what it finds in *handle and may stop it later.
template <typename Descr>
void* Start(void* context, const Descr& d) {
  switch (d.type) {
    case ncclProfileGroup: return GroupHandle();
    case ncclProfileColl: {
      CollectiveStart start;
      start.func = d.coll.func;
      start.datatype = d.coll.datatype;
      start.count = d.coll.count;
      start.root = d.coll.root;
      start.channels = d.coll.nChannels;
      return StartCollective(static_cast<CommProfile*>(context), start);
    }
    case ncclProfileKernelCh: return StartKernelChannel(d.parentObj);
    default: return nullptr;  // p2p, the v5 API events, proxy events
  }
}

template <typename Descr>
ncclResult_t StartEvent(void* context, void** handle, Descr* d) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = d != nullptr ? Start(context, *d) : nullptr;
  return ncclSuccess;
}

ncclResult_t Stop(void* handle) noexcept {
  StopEvent(handle);
  return ncclSuccess;
}

template <typename Args>
ncclResult_t RecordState(void*, ncclProfilerEventState_t, Args*) noexcept {
  return ncclSuccess;  // lockstep reads no state transitions
}

ncclResult_t Finalize(void* context) noexcept {
  CloseCommunicator(static_cast<CommProfile*>(context));
  return ncclSuccess;
}

ncclResult_t InitV4(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int, int nranks, int,
                    ncclDebugLogger_t) noexcept {
  return Init(context, mask, comm_name, comm_hash, nranks);
}

ncclResult_t InitV5(void** context, uint64_t comm_id, int* mask, const char* comm_name, int, int nranks, int,
                    ncclDebugLogger_t) noexcept {
  return Init(context, mask, comm_name, comm_id, nranks);
}

}  // namespace
}  // namespace lockstep::nccl_profiler

#define LOCKSTEP_EXPORT __attribute__((visibility("default")))

extern "C" {

LOCKSTEP_EXPORT lockstep::nccl_abi::ncclProfiler_v5_t ncclProfiler_v5 = {
    lockstep::nccl_profiler::kPluginName,
    lockstep::nccl_profiler::InitV5,
    lockstep::nccl_profiler::StartEvent<lockstep::nccl_abi::ncclProfilerEventDescr_v5_t>,
    lockstep::nccl_profiler::Stop,
    lockstep::nccl_profiler::RecordState<lockstep::nccl_abi::ncclProfilerEventStateArgs_v5_t>,
    lockstep::nccl_profiler::Finalize,
};

LOCKSTEP_EXPORT lockstep::nccl_abi::ncclProfiler_v4_t ncclProfiler_v4 = {
    lockstep::nccl_profiler::kPluginName,
    lockstep::nccl_profiler::InitV4,
    lockstep::nccl_profiler::StartEvent<lockstep::nccl_abi::ncclProfilerEventDescr_v4_t>,
    lockstep::nccl_profiler::Stop,
    lockstep::nccl_profiler::RecordState<lockstep::nccl_abi::ncclProfilerEventStateArgs_v4_t>,
    lockstep::nccl_profiler::Finalize,
};

}  // extern "C"
