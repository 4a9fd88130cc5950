// The finished result of one `lockstep run`: what reporters render and report.json stores
// (schema `lockstep.report/1`). Plain data; reporters never see traces or MPI.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/core/name_table.h"
#include "harness/result/finding.h"

namespace lockstep {

inline constexpr const char* kReportSchema = "lockstep.report/1";

// lit's result codes. An `expect:`-carrying scenario passes as kXfail only when exactly the
// expected findings occur; kXpass means the expected findings did not appear (a failure).
enum class Outcome { kPass, kFail, kXfail, kXpass, kError, kTimeout, kSkipped };
template <> const NameTable<Outcome>& NamesOf<Outcome>();
const char* ToString(Outcome outcome);
bool IsFailure(Outcome outcome);  // fail, xpass, error, timeout

// What a checker compared, so that a pass says what it judged: a replica checker counts the
// tensors of its kind that at least two ranks had to hold alike (replicated: every rank, or a
// replica group), the steps where it compared any, and the groups it compared them in. Zero
// tensors is a pass that checked nothing (a fully sharded program has no replicated parameter).
struct CheckerCoverage {
  std::string kind;        // the tensor kind, as the trace names it: "param", "grad", "buffer", "optimizer_state"
  int64_t tensors = 0;     // distinct tensors compared
  int64_t steps = 0;       // steps with at least one comparison
  int64_t groups = 0;      // distinct groups of ranks compared in (all ranks counts as one)
  int64_t comparisons = 0; // (step, tensor, group) cells compared
};

// One checker's verdict on one scenario (a JUnit testcase).
struct CheckerVerdict {
  std::string checker;
  Outcome outcome = Outcome::kPass;  // pass, fail, xfail, error, skipped
  double duration_s = 0.0;
  std::string skip_reason;
  std::optional<CheckerCoverage> judged;  // what it compared, where the checker counts it
};

// Per-rank series for plots and the divergence map. Filled from the traces once, after the run.
struct DivergenceCell {
  int64_t step = 0;
  std::string tensor;
  // groups of ranks that agree, each with its digest (hex); more than one group = divergent
  std::vector<std::pair<std::vector<int>, std::string>> groups;
};

struct CollectiveSummary {
  int rank = 0;
  std::string group;
  uint64_t seq = 0;
  std::string op;
  int64_t step = 0;
  double start_s = 0.0;
  std::optional<double> end_s;
};

struct ScenarioSeries {
  std::vector<int64_t> steps;                           // x axis
  std::map<int, std::vector<double>> loss_by_rank;      // rank -> loss per step (NaN for none)
  std::vector<std::string> tensors;                     // y axis of the divergence map
  std::vector<DivergenceCell> divergent_cells;          // only cells where ranks disagree
  int64_t divergent_cells_omitted = 0;                  // cells dropped by BuildSeries' cap
  std::vector<CollectiveSummary> last_collectives;      // last few per rank (hang timelines)
};

struct ScenarioResult {
  std::string id;
  std::string file;              // scenario file as given on the command line
  int line = 1;                  // line of the scenario (for annotations and JUnit)
  std::string description;
  std::string mode;              // "ddp", "zero1", "ddp/slices=2" ...
  std::string backend;
  int ranks = 0;
  int64_t steps = 0;
  Outcome outcome = Outcome::kPass;
  double duration_s = 0.0;
  std::string reason;            // for error/skipped/timeout/xpass: why
  std::vector<Finding> findings;
  std::vector<CheckerVerdict> checkers;
  std::map<int, std::string> rank_logs;  // rank -> excerpt of what it printed
  std::map<int, std::string> rank_hosts;  // rank -> the host it ran on (its trace's header)
  std::string run_dir;           // where its traces are, relative to the report
  ScenarioSeries series;
};

struct RunContext {
  std::map<std::string, std::string> versions;  // libtorch, mpi, nccl, cuda, lockstep
  std::string host;
  std::string git_sha;
  std::string backend;           // the --backend override, or "per-scenario"
  std::string launcher;
  std::string command_line;
  std::string started_at;        // ISO 8601 UTC
  double duration_s = 0.0;
};

struct RunResult {
  RunContext context;
  std::vector<ScenarioResult> scenarios;
};

struct OutcomeCounts {
  int total = 0, passed = 0, failed = 0, xfailed = 0, xpassed = 0, errors = 0, timeouts = 0, skipped = 0;
};
OutcomeCounts CountOutcomes(const RunResult& result);

}  // namespace lockstep
