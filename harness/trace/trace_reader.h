// Reads per-rank traces back whole (docs/TRACE.md), for the users that need a run in memory
// (diff, repro, bless, the probe's tests); the checkers stream (harness/trace/trace_stream.h).
// Both go through the one parser (harness/trace/trace_parser.h), so they read every version
// alike. Built for traces of ranks that died: a file cut inside a record is read up to the last
// whole record and marked `truncated`; a missing file in a run directory is an empty trace
// marked `missing`. Only a major schema version this lockstep does not read, a file that is not
// a trace, or an unreadable file is an error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/status.h"
#include "harness/trace/trace_parser.h"
#include "harness/trace/trace_record.h"
#include "harness/trace/trace_stream.h"

namespace lockstep {

// What ReadTrace takes in at most: it holds the whole trace in memory (a long run of a large
// model stays far below; the streaming reader has no such bound).
inline constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{4} << 30;

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
