// One rank's trace read record by record with bounded memory: a 64 KiB read buffer, one record
// and the fold of everything but the steps' tensors. The streaming checkers judge a run step by
// step across its ranks through it, so their memory grows with ranks x tensors, not with steps.
// Any schema version the parser reads (harness/trace/trace_parser.h).
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_parser.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// How many of a rank's `log` records RankTrace::log_tail keeps (the last ones).
inline constexpr size_t kTraceLogTailLines = 200;

class RankTraceStream {
 public:
  // A missing file is not an error: the stream is at its end at once and trace().missing is set
  // (as ReadTraceDir does). Errors: a folder or another non-file, an unreadable file.
  static Result<std::unique_ptr<RankTraceStream>> Open(const std::filesystem::path& path);
  // Bytes already in memory; `file` names them in messages (ParseTrace, fuzz/).
  static std::unique_ptr<RankTraceStream> FromBytes(std::string_view data, std::string file);

  ~RankTraceStream();
  RankTraceStream(const RankTraceStream&) = delete;
  RankTraceStream& operator=(const RankTraceStream&) = delete;

  // The next step record, whole (its tensors included). Every other record read on the way
  // (collectives, discoveries, heartbeats, logs, footer) is folded into trace(), and the step
  // itself is appended to trace().steps without its tensors. nullopt: the end of the file
  // (trace().truncated and truncation_note say whether the last record was cut). Errors name
  // file:line: not a trace, another major version, a bad record (TraceParser::Parse).
  Result<std::optional<StepRecord>> NextStep();
  // The next record of any type, whole, folded into trace() as NextStep folds it; nullopt at the
  // end of the file. `lockstep trace dump` prints these.
  Result<std::optional<TraceRecord>> NextRecord();

  const RankTrace& trace() const { return trace_; }
  RankTrace TakeTrace() { return std::move(trace_); }

  // Reads up to the header (trace().header), so that a caller can check whose trace it is
  // before the steps. Done by the first NextStep otherwise.
  Status ReadHeader();

  // Keep each step's tensors in trace().steps too (ReadTrace: the whole trace in memory).
  void KeepTensors() { keep_tensors_ = true; }

 private:
  RankTraceStream(std::string file, int fd, std::string_view memory);
  // Reads more bytes into lines_; false at the end of the input.
  Result<bool> Fill();
  // Folds a copy of `record` into trace_ (a step: its scalars, or all of it with KeepTensors).
  void Fold(const TraceRecord& record);
  Status Finish();

  std::string file_;
  int fd_ = -1;               // the file, or -1 for bytes in memory
  std::string_view memory_;   // what is left of the bytes in memory
  bool data_ended_ = false;   // the file's zero tail was reached (TraceDataLength)
  TraceParser parser_;
  TraceLines lines_;
  bool at_end_ = false;
  bool keep_tensors_ = false;
  RankTrace trace_;
  std::map<std::pair<std::string, uint64_t>, size_t> open_collectives_;
  std::deque<std::string> log_tail_;

  friend Result<std::vector<std::unique_ptr<RankTraceStream>>> OpenTraceDir(const std::filesystem::path& dir,
                                                                            int world_size);
};

// <dir>/rank-<r>.trace for r in [0, world_size), index = rank. A file whose header names another
// rank is an error (files from another run mixed in); an empty file takes its rank from its name.
Result<std::vector<std::unique_ptr<RankTraceStream>>> OpenTraceDir(const std::filesystem::path& dir, int world_size);

}  // namespace lockstep
