// Appends one rank's trace (schema lockstep.trace/2, docs/TRACE.md) as JSON lines. Every record
// goes to the file descriptor with a single write(2) before the call returns, so it is in the
// kernel's page cache and survives a SIGKILL of the rank a moment later (not a machine crash:
// fsync per record would cost more than the step). No stdio buffering that a kill would lose.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// "rank-<r>.trace": the file name a rank writes in a scenario's run directory.
std::string TraceFileName(int rank);

// How TraceWriter::Open treats a file already there: replace it, or refuse (the launcher clears a
// run's traces before its ranks start, so a file there is another process writing the same rank:
// processes that hard-code world_size=1 all write rank-0.trace).
enum class TraceOpen { kReplace, kNew };

class TraceWriter {
 public:
  // Creates (truncates, or with kNew refuses an existing file: IoError naming it) the file,
  // creating missing parent directories, and writes the header with the current schema
  // (CurrentTraceSchema(), whatever header.schema says).
  static Result<std::unique_ptr<TraceWriter>> Open(const std::filesystem::path& path, const TraceHeader& header,
                                                   TraceOpen mode = TraceOpen::kReplace);

  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // The step's digests and norms as a packed table (harness/trace/tensor_table.h), preceded by a
  // `tensors` record naming them when they are not the tensors of the last one.
  Status WriteStep(const StepRecord& step);
  // Written (and in the page cache) before the collective starts: a hang shows where it waits.
  Status WriteCollectiveBegin(const CollectiveRecord& collective);
  Status WriteCollectiveEnd(const std::string& group, uint64_t seq, double end_s);
  Status WriteDiscovery(const DiscoveryRecord& discovery);
  Status WriteHeartbeat(int64_t step, double wall_s);
  Status WriteFooter(const TraceFooter& footer);
  Status WriteLog(const std::string& line);

  const std::filesystem::path& path() const { return path_; }

 private:
  TraceWriter(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  // Writes line_ (one whole record ending in '\n') with as few write(2) calls as the kernel allows.
  Status Flush();

  int fd_;
  std::filesystem::path path_;
  // Records may come from autograd hook threads as well as the training loop.
  std::mutex mu_;
  std::string line_;  // reused between records to avoid reallocating the step record
  std::vector<TensorRecord> layout_;  // the tensors of the last `tensors` record (digest, norm unused)
  // The replica groups written so far: id i + 1 is groups_[i]. A run defines a handful.
  std::vector<std::shared_ptr<const ReplicaGroup>> groups_;
};

}  // namespace lockstep
