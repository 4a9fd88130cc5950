// Writes what the native collective log hands over (NCCL's collectives, native_collective_log.h)
// into a rank's trace, as collective begin and end records: the trace owner (lockstep-rank, the
// Python probe) sets one as the log's observer once its trace is open.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "harness/core/status.h"
#include "harness/discovery/native_collective_log.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {

class NativeCollectiveTraceWriter : public NativeCollectiveObserver {
 public:
  // `writer` must outlive the time this is the log's observer (remove it first:
  // SetNativeCollectiveObserver(nullptr) returns only when no event is being delivered).
  // `wall_s` and `step` are the owner's clock and current step; both are called on the recorder's
  // thread.
  NativeCollectiveTraceWriter(TraceWriter* writer, std::function<double()> wall_s, std::function<int64_t()> step);

  void Begin(const CollectiveRecord& collective) override;
  void End(const std::string& group, uint64_t seq) override;

  // The first failed write (an observer cannot return one): the owner checks it at each step, so
  // a collective the trace missed never passes unseen.
  Status status() const;

 private:
  void Keep(const Status& written);

  TraceWriter* writer_;
  std::function<double()> wall_s_;
  std::function<int64_t()> step_;
  mutable std::mutex mu_;
  Status status_;
};

}  // namespace lockstep
