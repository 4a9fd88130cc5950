// A folder of rank-<r>.trace files (TraceFileName): which ranks it holds.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace lockstep {

// The rank of a file named TraceFileName(rank), if it is one ("rank-01.trace" is no rank's file).
std::optional<int> TraceFileRank(const std::string& name);

// The highest rank with a rank-<r>.trace file in `dir`, if any (other names do not count).
std::optional<int> HighestTraceRank(const std::filesystem::path& dir);

}  // namespace lockstep
