// The process's record of its discovery calls: every call that finds devices, ranks or peers, or
// builds a communicator (docs/CHECKERS.md#discovery_count lists which, and why each counts).
// The recorders feed it: lockstep's own topology routine, the native recorders
// (harness/native_recorders/: the PMPI wrappers, the CUPTI subscriber), NCCL's profiler plugin
// and the Python probe's torch.distributed hooks. The trace writer of the process observes it,
// so each call becomes a `discovery` record as it happens; calls made before the trace was open
// (MPI_Init runs first) are kept and handed over when the observer is set.
//
// A call in the middle of training (pytorch/xla#8812: tracing flash attention ran MegaScale
// discovery again and multi-slice jobs failed) is told apart from start-up by the phase the
// process is in, which the training loop sets.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/trace/trace_record.h"

namespace lockstep {

// The phase and optimizer step that calls from now on belong to: ("startup", 0) until the first
// optimizer step is done, then ("step", k). Set by the training loop (lockstep-rank, the probe).
void SetDiscoveryContext(const std::string& phase, int64_t step);

// Within its scope, calls are recorded with `phase` instead (e.g. "attention_forward"), at the
// current step. Restores the previous phase when it ends.
class ScopedDiscoveryPhase {
 public:
  explicit ScopedDiscoveryPhase(const std::string& phase);
  ~ScopedDiscoveryPhase();
  ScopedDiscoveryPhase(const ScopedDiscoveryPhase&) = delete;
  ScopedDiscoveryPhase& operator=(const ScopedDiscoveryPhase&) = delete;

 private:
  std::string previous_;
};

// Records one call of `name` in the current phase and step. `where` and `comm` may be empty.
void RecordDiscovery(const std::string& name, const std::string& where = "", const std::string& comm = "");
// The same at an explicit phase and step (a caller that knows better than the context).
void RecordDiscoveryAt(const std::string& name, const std::string& phase, int64_t step, const std::string& where = "",
                       const std::string& comm = "");

// Every call so far, in order (call numbers from 1), and how many.
std::vector<DiscoveryRecord> DiscoveryCalls();
int DiscoveryCount();

// Called synchronously, on the calling thread, for each call recorded after it is set; the calls
// recorded before are handed to it at once, in order. An empty function removes it.
void SetDiscoveryObserver(std::function<void(const DiscoveryRecord&)> observer);

// Forgets the calls, the observer and the context.
void ResetDiscoveryForTest();

}  // namespace lockstep
