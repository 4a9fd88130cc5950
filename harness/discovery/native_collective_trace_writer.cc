#include "harness/discovery/native_collective_trace_writer.h"

#include <utility>

namespace lockstep {

NativeCollectiveTraceWriter::NativeCollectiveTraceWriter(TraceWriter* writer, std::function<double()> wall_s,
                                                         std::function<int64_t()> step)
    : writer_(writer), wall_s_(std::move(wall_s)), step_(std::move(step)) {}

void NativeCollectiveTraceWriter::Begin(const CollectiveRecord& collective) {
  CollectiveRecord record = collective;
  record.step = step_();
  record.start_s = wall_s_();
  record.end_s.reset();
  Keep(writer_->WriteCollectiveBegin(record));
}

void NativeCollectiveTraceWriter::End(const std::string& group, uint64_t seq) {
  Keep(writer_->WriteCollectiveEnd(group, seq, wall_s_()));
}

Status NativeCollectiveTraceWriter::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void NativeCollectiveTraceWriter::Keep(const Status& written) {
  if (written.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = written.WithContext("collective record from NCCL");
}

}  // namespace lockstep
