// The comparison engine behind replica_weights, synced_grads, optimizer_state and buffers: per
// step and tensor, group the ranks by digest; the first divergent step becomes one finding that
// names every divergent tensor there and the odd ranks by majority vote.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkers/checker.h"
#include "checkers/step_judge.h"
#include "harness/result/finding.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// Ranks that agree on one tensor at one step. `digest` is empty for the ranks that did not
// record the tensor (as replicated) at a step they did record.
struct DigestGroup {
  std::vector<int> ranks;
  std::optional<Digest128> digest;
  double norm = 0.0;
};

// One (step, tensor, replica group) cell where the ranks disagree.
struct TensorDivergence {
  int64_t step = 0;
  std::string tensor;
  TensorKind kind = TensorKind::kParam;
  // The replica group the ranks were compared in (trace_record.h); null: every rank of the step.
  std::shared_ptr<const ReplicaGroup> group;
  std::vector<DigestGroup> groups;  // largest first; equal sizes: the one with the lowest rank first
  bool has_majority = false;        // groups[0] holds more than half of the compared ranks
  std::vector<int> odd_ranks;       // ranks outside groups[0] (the reference group)
};

// Every divergent cell of `kind` (replicated tensors only), by step, tensors in recording order.
// Ranks are compared at the steps they recorded; a rank that died early is not compared after.
// A tensor with replica groups is compared within each group it names, among the members that
// recorded the step (one that lacks it is missing); one without, across all of them.
std::vector<TensorDivergence> FindDivergences(const std::vector<RankTrace>& traces, TensorKind kind);

// What the comparisons covered, summed over the steps fed: a cell counts where at least two ranks
// that must agree held the tensor. Memory grows with tensors and groups, never with steps.
struct ComparedCells {
  std::set<std::string> tensors;
  std::set<std::vector<int>> groups;  // a replica group's ranks; {} for "every rank of the step"
  int64_t steps = 0;
  int64_t cells = 0;
};

// The divergent cells of `kind` at one step: records[r] is rank r's record of it, or null.
// Fewer than two records: none. FindDivergences is this, step after step. `compared`, when
// given, gains what this step compared.
std::vector<TensorDivergence> DivergencesAtStep(int64_t step, const std::vector<const StepRecord*>& records,
                                                TensorKind kind, ComparedCells* compared = nullptr);

// Below this relative norm difference a divergence is called rounding-level in the message.
inline constexpr double kRoundingLevelRelDiff = 1e-5;

struct ReplicaComparison {
  std::string checker;  // finding.checker
  TensorKind kind;
  std::string noun;     // "parameters", "gradients after sync", ...
};

// At most one finding: the first divergent step (later divergent steps are counted in it).
// The judge keeps the first divergent step's cells and a count of the later ones, so its memory
// does not grow with steps.
std::unique_ptr<StepJudge> StartReplicaJudge(const ReplicaComparison& what);
// The same judge driven over the traces in memory (JudgeInMemory).
std::vector<Finding> CompareReplicas(const CheckContext& context, const ReplicaComparison& what);

}  // namespace lockstep
