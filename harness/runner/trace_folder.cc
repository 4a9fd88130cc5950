#include "harness/runner/trace_folder.h"

#include <algorithm>

#include "harness/trace/trace_writer.h"

namespace lockstep {

std::optional<int> TraceFileRank(const std::string& name) {
  const std::string prefix = "rank-", suffix = ".trace";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const int rank = std::stoi(digits);
  if (TraceFileName(rank) != name) return std::nullopt;
  return rank;
}

std::optional<int> HighestTraceRank(const std::filesystem::path& dir) {
  std::optional<int> highest;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (auto rank = TraceFileRank(entry.path().filename().string())) highest = std::max(highest.value_or(0), *rank);
  }
  return highest;
}

}  // namespace lockstep
