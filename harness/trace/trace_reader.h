// Reads per-rank traces back (schema lockstep.trace/1, docs/TRACE.md). Built for traces of ranks
// that died: a file cut inside a record is read up to the last whole record and marked
// `truncated`; a missing file is an empty trace marked `missing`. Only a different major schema
// version, a file that is not a trace, or an unreadable file is an error.
#pragma once

#include <filesystem>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// How many of a rank's `log` records RankTrace::log_tail keeps (the last ones).
inline constexpr size_t kTraceLogTailLines = 200;

Result<RankTrace> ReadTrace(const std::filesystem::path& path);

// Reads <dir>/rank-<r>.trace for r in [0, world_size); the result has world_size entries, index =
// rank. A file whose header names another rank is an error (files from another run mixed in).
Result<std::vector<RankTrace>> ReadTraceDir(const std::filesystem::path& dir, int world_size);

}  // namespace lockstep
