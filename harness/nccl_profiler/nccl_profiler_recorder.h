// What lockstep's NCCL profiler plugin does with NCCL's events, whatever the plugin ABI version
// (nccl_profiler_plugin.cc translates each version's descriptors into these calls):
//   - a communicator's init is a discovery call, `nccl.comm_init` (docs/CHECKERS.md#discovery_count);
//   - each collective is a begin and an end in the process's native collective log
//     (harness/discovery/native_collective_log.h), group `nccl:<commHash as 16 hex digits>`.
// Every function here is safe to call from NCCL's threads and never throws: a problem is said once
// on stderr ("lockstep nccl profiler: ...") and the event is dropped, NCCL carries on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep::nccl_profiler {

// The events the plugin asks NCCL for (the activation mask): collectives, and the kernel's
// per-channel events that say when a collective is done (nccl_profiler_recorder.cc says why).
int ActivationMask();

class CommProfile;

// `nccl:<hash>/<nranks>`, and ` (<name>)` when NCCL was given a communicator name: the `comm` of
// the `nccl.comm_init` discovery record.
std::string CommunicatorName(uint64_t comm_hash, const char* comm_name, int nranks);

// A communicator's init: records `nccl.comm_init` and returns its context for NCCL to hand back
// with its events, or null if it could not be made (said on stderr).
CommProfile* OpenCommunicator(uint64_t comm_hash, const char* comm_name, int nranks);
// Its finalize. Collectives still in flight keep what they need until they end.
void CloseCommunicator(CommProfile* comm);

// What a collective event's descriptor says, in any ABI version.
struct CollectiveStart {
  const char* func = nullptr;      // NCCL's name: "AllReduce"
  const char* datatype = nullptr;  // "ncclFloat32"
  size_t count = 0;                // NCCL's count argument
  int root = 0;
  int channels = 0;                // how many kernel-channel events will report its completion
};

// Event handles for NCCL (null: nothing followed, NCCL skips the event's stop).
void* StartCollective(CommProfile* comm, const CollectiveStart& collective);
void* StartKernelChannel(void* parent);  // `parent`: the collective's handle (or null, or a p2p's)
// NCCL needs a non-null group handle before it starts any collective event (NCCL 2.27, v4).
void* GroupHandle();
void StopEvent(void* handle);

}  // namespace lockstep::nccl_profiler
