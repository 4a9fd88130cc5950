// Appends one rank's trace (schema lockstep.trace/2, docs/TRACE.md) as JSON lines. A record is
// stored into a shared mapping of the file before the call returns (mapped_append_file.h: no
// system call, no page fault on the caller's thread while the file's helper keeps ahead), so it is
// in the kernel's page cache and survives a SIGKILL of the rank a moment later, as a write(2) was
// (not a machine crash: fsync per record would cost more than the step). No stdio buffering that
// a kill would lose. A trace being written, or left by a killed rank, ends at its first zero byte
// (TraceDataLength); closing the writer cuts the file to what was written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/mapped_append_file.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// "rank-<r>.trace": the file name a rank writes in a scenario's run directory.
std::string TraceFileName(int rank);

// How TraceWriter::Open treats a file already there: replace it, or refuse (the launcher clears a
// run's traces before its ranks start, so a file there is another process writing the same rank:
// processes that hard-code world_size=1 all write rank-0.trace).
enum class TraceOpen { kReplace, kNew };

// How far ahead of its records a trace's file is kept ready (mapped_append_file.h; tests make it
// small, so that the file grows often).
inline constexpr size_t kTraceMapChunkBytes = 1u << 20;

class TraceWriter {
 public:
  // Creates (truncates, or with kNew refuses an existing file: IoError naming it) the file,
  // creating missing parent directories, and writes the header with the current schema
  // (CurrentTraceSchema(), whatever header.schema says).
  static Result<std::unique_ptr<TraceWriter>> Open(const std::filesystem::path& path, const TraceHeader& header,
                                                   TraceOpen mode = TraceOpen::kReplace,
                                                   size_t map_chunk_bytes = kTraceMapChunkBytes);

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
  // Whether records are stored into a mapping (false: written with write(2)).
  bool mapped() const { return file_->mapped(); }

 private:
  TraceWriter(std::unique_ptr<MappedAppendFile> file, std::filesystem::path path)
      : file_(std::move(file)), path_(std::move(path)) {}
  // Appends line_ (one whole record ending in '\n').
  Status Flush() { return file_->Append(line_); }

  std::unique_ptr<MappedAppendFile> file_;
  std::filesystem::path path_;
  // Records may come from autograd hook threads as well as the training loop.
  std::mutex mu_;
  std::string line_;  // reused between records to avoid reallocating the step record
  // Whether `tensors` are those of the last `tensors` record: the same names, kinds, element
  // counts, dtypes, replication and groups, in the same order.
  bool SameLayout(const std::vector<TensorRecord>& tensors) const;
  // Keeps what a `tensors` record just said of `tensors` (`group_ids`: the id written for each).
  void KeepLayout(const std::vector<TensorRecord>& tensors, const std::vector<int64_t>& group_ids);
  // WriteStep's parts in line_: a `tensors` record of `tensors` (and the replica groups it names
  // first), and the step's optional members.
  void AppendLayoutRecords(const std::vector<TensorRecord>& tensors);
  void AppendOptionalStepMembers(const StepRecord& step);

  // The tensors of the last `tensors` record, flat (SameLayout reads it front to back).
  std::string layout_;
  // The layout_id of the last step record (StepRecord): a step with the same nonzero id has the
  // layout of layout_ without comparing it.
  uint64_t layout_id_ = 0;
  // The replica groups written so far: id i + 1 is groups_[i]. A run defines a handful.
  std::vector<std::shared_ptr<const ReplicaGroup>> groups_;
};

}  // namespace lockstep
