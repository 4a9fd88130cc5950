// One traced process's trace: the project's TraceWriter, the step the program is in, and the
// per-group sequence numbers of the collectives it issues. Shared by the Python-facing module
// (step records, heartbeats, footer) and every RecordingProcessGroup (collective records), which
// may call it from c10d's and autograd's threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "harness/core/status.h"
#include "harness/discovery/native_collective_trace_writer.h"
#include "harness/trace/trace_record.h"
#include "harness/trace/trace_writer.h"
#include "probe/deferred_steps.h"

namespace lockstep::probe {

class ProbeSession {
 public:
  // Opens `path` (created, truncated) and writes the header.
  static Result<std::shared_ptr<ProbeSession>> Open(const std::string& path, const TraceHeader& header);

  // The optimizer step the program is in: collectives issued now are recorded with it.
  void set_step(int64_t step) { step_.store(step, std::memory_order_relaxed); }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }

  // Seconds since the session opened (the trace's wall_s).
  double WallSeconds() const;

  Status WriteStep(const StepRecord& record);
  Status WriteHeartbeat();
  Status WriteFooter(const TraceFooter& footer);
  Status WriteLog(const std::string& line);

  // A collective of `group` is about to start: writes its begin record with the next seq of that
  // group and returns the seq for CollectiveEnded.
  uint64_t CollectiveStarted(CollectiveRecord record);
  void CollectiveEnded(const std::string& group, uint64_t seq);

  // Replica groups (trace_record.h's ReplicaGroup) by the small ids the Python side gives them:
  // DefineReplicaGroup(id, ...) once per group, ReplicaGroupById(id) per tensor (null: none, the
  // whole world; an id never defined is an error).
  void DefineReplicaGroup(int id, std::vector<int> ranks, std::string label);
  Result<std::shared_ptr<const ReplicaGroup>> ReplicaGroupById(int id) const;

  // A discovery call (harness/discovery), written as it is recorded.
  void WriteDiscovery(const DiscoveryRecord& record);

  // Writes what NCCL's profiler plugin saw (harness/discovery/native_collective_log.h) into this
  // trace: the module makes it the log's observer.
  NativeCollectiveTraceWriter& native_collectives() { return native_collectives_; }

  // The first error writing a collective or discovery record (they are written from threads and
  // callbacks that cannot return one); the Python side turns it into a `lockstep probe:` message.
  Status record_status() const;

  const std::string& path() const { return path_; }

  // Where captures go whose digests land later (LOCKSTEP_ASYNC_CAPTURE; null: none do). Set once,
  // right after Open, before any capture.
  void set_deferred(std::shared_ptr<DeferredSteps> deferred) { deferred_ = std::move(deferred); }
  const std::shared_ptr<DeferredSteps>& deferred() const { return deferred_; }

 private:
  ProbeSession(std::unique_ptr<TraceWriter> writer, std::string path);

  std::unique_ptr<TraceWriter> writer_;
  std::string path_;
  const int64_t start_ns_;
  std::atomic<int64_t> step_{0};
  mutable std::mutex mu_;  // seq_ and record_status_
  std::map<std::string, uint64_t> seq_;
  Status record_status_;
  std::vector<std::shared_ptr<const ReplicaGroup>> replica_groups_;  // [id]; [0] is null, the world
  NativeCollectiveTraceWriter native_collectives_;  // after writer_ and start_ns_, which it uses
  std::shared_ptr<DeferredSteps> deferred_;
};

}  // namespace lockstep::probe
