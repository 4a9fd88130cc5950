// harness/trace/trace_stream.h
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {
// One rank's trace read record by record with bounded memory (a 64 KiB read buffer and one
// record), any schema version the reader knows (lockstep.trace/1 and /2).
class RankTraceStream {
 public:
  // A missing file is not an error: the stream is at its end at once and trace().missing is set
  // (as ReadTraceDir does). Errors: unreadable file, not a trace, another major version.
  static Result<std::unique_ptr<RankTraceStream>> Open(const std::filesystem::path& path);
  // The next step record, whole (its tensors included). Every other record read on the way
  // (collectives, discoveries, heartbeats, logs, footer) is folded into trace() exactly as
  // ReadTrace folds it, and the step itself is appended to trace().steps WITHOUT its tensors.
  // nullopt: the end of the file (trace().truncated / truncation_note say whether the last record
  // was cut). Errors name file:line.
  Result<std::optional<StepRecord>> NextStep();
  const RankTrace& trace() const;
  RankTrace TakeTrace();   // moves the folded trace out (after the end)
};
// <dir>/rank-<r>.trace for r in [0, world_size), with ReadTraceDir's checks (header rank vs file name).
Result<std::vector<std::unique_ptr<RankTraceStream>>> OpenTraceDir(const std::filesystem::path& dir, int world_size);
}
