// Compares the traces of two runs of one scenario (tonight vs last good, mpi vs gloo, CPU vs GPU),
// rank by rank and step by step: each rank's loss and every tensor record (digest, and the norm
// that says by how much). The verdict is the FIRST step where anything differs, with every
// difference at that step, and a count of the later steps that differ too. A pure function of
// the traces: no files, no MPI (harness/diff/run_diff.h reads the run directories).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/trace/trace_record.h"

namespace lockstep {

// |a - b| / max(|a|, |b|); 0 when both are 0 (and when both are NaN or the same infinity, which
// compare as equal here); NaN when exactly one of them is not finite.
double RelativeDifference(double a, double b);

// Equal for the diff: the same bits (NaN equals NaN; +0 equals -0).
bool SameValue(double a, double b);

struct LossDifference {
  int rank = 0;
  double a = 0.0;
  double b = 0.0;
  double abs_diff = 0.0;  // |a - b|
  double rel_diff = 0.0;  // RelativeDifference(a, b)
};

// One rank's records of one tensor at one step. A record absent from one run is std::nullopt.
struct TensorRankDifference {
  int rank = 0;
  std::optional<TensorRecord> a;
  std::optional<TensorRecord> b;
  double norm_rel_diff = 0.0;  // RelativeDifference of the norms, when both records exist
  // Why they differ, for people: "digest", "only in A", "only in B", "dtype float32 vs bfloat16",
  // "numel 64 vs 128" (dtype and numel mismatches come before the digest).
  std::string what;
};

struct TensorDifference {
  std::string name;
  TensorKind kind = TensorKind::kParam;
  std::vector<TensorRankDifference> per_rank;  // ascending rank, only the ranks that differ
  std::vector<int> Ranks() const;
};

// A rank that recorded this step in one run but not in the other (it stopped earlier there).
struct StepGap {
  int rank = 0;
  bool missing_in_a = false;  // false: missing in B
  std::optional<int64_t> last_step;  // the last step that run recorded on this rank, if any
};

struct StepDifference {
  int64_t step = 0;
  std::vector<StepGap> gaps;              // ascending rank
  std::vector<LossDifference> losses;     // ascending rank
  std::vector<TensorDifference> tensors;  // in the order the ranks recorded them
};

struct ScenarioDiff {
  std::string id;
  int ranks_a = 0;
  int ranks_b = 0;
  int64_t steps_compared = 0;       // distinct steps that at least one rank recorded in both runs
  int64_t records_compared = 0;     // tensor records compared, over all ranks and steps
  int64_t differing_steps = 0;      // steps with any difference (first included)
  int64_t steps_in_one_run = 0;     // of those, steps no rank recorded in both runs (a gap only)
  std::optional<int64_t> last_differing_step;
  std::optional<StepDifference> first;  // the first step with a difference
  // Facts that qualify the comparison: truncated or missing traces, a world size mismatch.
  std::vector<std::string> notes;
  // Set by the run-directory diff when a run has no traces of the scenario (skipped, or its
  // ranks never started): "A", "B" or "both". Only id, the rank counts and notes are filled in then.
  std::string no_traces_in;

  enum class Verdict { kIdentical, kDifferent, kNotCompared };
  // Traces in only one run differ; traces in neither (a scenario both runs skipped), or traces
  // without a single step in common and no other difference, leave nothing to compare.
  Verdict verdict() const {
    if (no_traces_in == "both") return Verdict::kNotCompared;
    if (!no_traces_in.empty() || first.has_value() || ranks_a != ranks_b) return Verdict::kDifferent;
    if (steps_compared == 0) return Verdict::kNotCompared;
    return Verdict::kIdentical;
  }
};

struct DiffOptions {
  // false: a step that one run did not record on a rank is a difference only when that rank's
  // trace there ended cleanly (a footer). A run cut short by a crash or a kill lacks its later
  // steps; the `determinism` checker leaves that to `crash` and `hang`. `lockstep diff` shows it.
  bool gaps_of_unfinished_ranks = true;
};

// Compares rank r of `a` with rank r of `b` for every rank both runs have (a world size mismatch
// is a difference of its own, noted, and the common ranks are still compared).
ScenarioDiff DiffTraces(const std::string& id, const std::vector<RankTrace>& a, const std::vector<RankTrace>& b,
                        const DiffOptions& options = DiffOptions());

}  // namespace lockstep
