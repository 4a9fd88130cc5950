#include "checkers/internal/check_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "harness/diff/trace_diff.h"
#include "harness/trace/footer_status.h"

namespace lockstep::internal {

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += ",";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string RankPhrase(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + JoinRanks(ranks);
}

std::string FormatNumber(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
  return buf;
}

std::string FormatExact(double v) {
  if (!std::isfinite(v)) return FormatNumber(v);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string JoinCapped(const std::vector<std::string>& items, size_t max_items) {
  std::string s;
  const size_t shown = std::min(items.size(), max_items);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) s += ", ";
    s += items[i];
  }
  if (items.size() > shown) s += " and " + std::to_string(items.size() - shown) + " more";
  return s;
}

std::string JoinClauses(const std::vector<std::string>& items, size_t max_items) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) s += (i ? "; " : "") + items[i];
  if (items.size() > max_items) s += "; and " + std::to_string(items.size() - max_items) + " more";
  return s;
}

bool HasData(const RankTrace& trace) { return !trace.missing && !trace.header.schema.empty(); }

std::optional<int64_t> LastStep(const RankTrace& trace) {
  if (trace.steps.empty()) return std::nullopt;
  int64_t last = trace.steps.front().step;
  for (const StepRecord& s : trace.steps) last = std::max(last, s.step);
  return last;
}

bool ExitedCleanly(const RankTrace& trace) { return trace.footer && !IsErrorFooterStatus(trace.footer->status); }

int WorldSize(const Scenario& scenario, const std::vector<RankTrace>& traces) {
  return std::max(scenario.ranks, static_cast<int>(traces.size()));
}

// The diff's equality (NaN equals NaN), so checkers and `lockstep diff` agree on "the same".
bool SameDouble(double a, double b) { return SameValue(a, b); }

}  // namespace lockstep::internal
