// Reads per-rank traces back (schema lockstep.trace/1, docs/TRACE.md). Built for traces of ranks
// that died: a file cut inside a record is read up to the last whole record and marked
// `truncated`; a missing file is an empty trace marked `missing`. Only a different major schema
// version, a file that is not a trace, or an unreadable file is an error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// How many of a rank's `log` records RankTrace::log_tail keeps (the last ones).
inline constexpr size_t kTraceLogTailLines = 200;

// What a reader takes in at most: a whole trace (a long run of a large model stays far below),
// and one record (a step lists every tensor of the model).
inline constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{4} << 30;
inline constexpr size_t kMaxTraceRecordBytes = size_t{64} << 20;

// A folder, a file larger than kMaxTraceBytes, a record nested deeper than kMaxJsonDepth, an
// integer field that is not a JSON integer in range: errors naming file:line, never a crash or a
// silent coercion.
Result<RankTrace> ReadTrace(const std::filesystem::path& path);
// The same on bytes already in memory; `file` names them in messages (and fuzz/ feeds it).
Result<RankTrace> ParseTrace(std::string_view data, const std::string& file);

// Reads <dir>/rank-<r>.trace for r in [0, world_size); the result has world_size entries, index =
// rank. A file whose header names another rank is an error (files from another run mixed in).
Result<std::vector<RankTrace>> ReadTraceDir(const std::filesystem::path& dir, int world_size);

}  // namespace lockstep
