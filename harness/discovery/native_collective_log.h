// The process's record of collectives seen by native recorders: the NCCL profiler plugin
// (harness/nccl_profiler/) sees every NCCL collective of the process, whoever called it (PyTorch,
// LibTorch C++, JAX), and hands it here. The trace owner of the process (lockstep-rank, the Python
// probe) observes this log and writes each event as a collective record, so a GPU program gets its
// collective fingerprints from NCCL itself beside the ones its own communicator records.
//
// Part of the shared process log (liblockstep_process_log.so), like discovery_log.h: a plugin that
// NCCL dlopens and the trace writer of the process must meet in one copy of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "harness/trace/trace_record.h"

namespace lockstep {

// Told of each event synchronously, on the recorder's thread (NCCL's proxy thread for ends), so
// it must be thread-safe. The observer stamps times and the step: only it knows the rank's clock
// and the training step.
class NativeCollectiveObserver {
 public:
  virtual ~NativeCollectiveObserver() = default;
  virtual void Begin(const CollectiveRecord& collective) = 0;
  virtual void End(const std::string& group, uint64_t seq) = 0;
};

// A collective began: group, seq, op, dtype, count, root and reduce filled; step, start_s and
// end_s are ignored.
void RecordNativeCollectiveBegin(const CollectiveRecord& collective);
void RecordNativeCollectiveEnd(const std::string& group, uint64_t seq);

// Events recorded before an observer is set are kept (the first kMaxPendingNativeCollectives;
// NCCL may start before the trace is open) and handed to it, in order, when it is set. A null
// observer removes it.
inline constexpr size_t kMaxPendingNativeCollectives = 4096;
void SetNativeCollectiveObserver(std::shared_ptr<NativeCollectiveObserver> observer);
// How many events were dropped because no observer was set and the pending list was full.
uint64_t DroppedNativeCollectives();

// Forgets the observer and the pending events.
void ResetNativeCollectivesForTest();

}  // namespace lockstep
