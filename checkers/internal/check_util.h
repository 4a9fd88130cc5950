// Small helpers the checkers share: rank lists in messages, numbers, trace lookups.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"

namespace lockstep::internal {

// "0,2,3"
std::string JoinRanks(const std::vector<int>& ranks);
// "rank 2" / "ranks 0,1,3"
std::string RankPhrase(const std::vector<int>& ranks);
// Like printf %.*g ("0.000412", "1.5e-08", "nan").
std::string FormatNumber(double v, int precision = 6);
// The shortest text that reads back as the same double ("0.1", "1.4285714285710001" never).
std::string FormatExact(double v);
// Items joined with ", ", at most `max_items`, then "and N more".
std::string JoinCapped(const std::vector<std::string>& items, size_t max_items);
// Items joined with "; " (for items with commas of their own), at most `max_items`, then
// "; and N more".
std::string JoinClauses(const std::vector<std::string>& items, size_t max_items);

// A trace with a header: the rank started writing. Missing files and files cut before their
// header carry nothing to compare.
bool HasData(const RankTrace& trace);

// step -> record of one rank (harness/trace/trace_record.h).
using ::lockstep::StepsByNumber;

// The last recorded step, if any.
std::optional<int64_t> LastStep(const RankTrace& trace);

// The rank ended its run on its own: its trace has a footer that reports no error. A footer with
// an error status (most often "communication: ...", the echo of a peer's death) ends a trace where
// the rank stopped on that error, like a trace cut by a kill: where it ends says nothing of how
// many steps the rank meant to run.
bool ExitedCleanly(const RankTrace& trace);

// The world size the checkers assume: the scenario's, or more when more traces came back.
int WorldSize(const Scenario& scenario, const std::vector<RankTrace>& traces);

// Equal as doubles, with NaN equal to NaN (a NaN loss at step 0 is the same NaN in every run).
bool SameDouble(double a, double b);

}  // namespace lockstep::internal
