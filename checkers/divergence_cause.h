// Why the replicas probably diverged, read off the traces at the first divergent step and never
// guessed beyond them. A divergence finding says what differs (step, tensors, ranks); a cause
// says which known bug the records point to, e.g. "no gradient all-reduce was issued on any rank
// in step 1: the model is probably not wrapped in DDP". Each cause is one rule over the facts of
// that step (DivergenceFacts) that gives its line, or nothing when the records do not support it;
// a replica finding carries the first cause that holds (Finding::cause, docs/CHECKERS.md#causes).
// The rules are plain functions of data: each is tested to fire and to stay quiet on its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkers/replica_comparison.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

// What the records say about one step at which some replicated tensor differs across ranks.
struct DivergenceFacts {
  int64_t step = 0;
  int ranks_compared = 0;  // ranks that recorded the step
  // The divergent cells of every replicated kind at the step; a kind that agrees is absent.
  std::map<TensorKind, std::vector<TensorDivergence>> divergent;
  // How many reducing collectives (all_reduce, reduce_scatter, reduce) the ranks issued in the
  // step, all ranks together. Both writers of traces (lockstep-rank, the probe) record every
  // collective; the in-band comparison's one-step tables carry none, and its findings keep their
  // messages only (checkers/in_band_comparison.h), never a cause.
  int64_t reductions_in_step = 0;
  // Whether any rank recorded a broadcast of floating-point data at step 0: the initial state
  // sent from one rank to the others, as DDP's constructor (and lockstep-rank) do. A program that
  // never wrapped its model has none (a broadcast seed or flag is an integer).
  bool initial_broadcast = false;
  // The fewest replicated gradients any rank recorded at the step: gradients that agree say
  // something only where they were recorded (ZeRO's gradient shards are not replicated).
  int64_t synced_gradients_recorded = 0;
  // The steps recorded before this one (all agreed in the kind of the finding), and the last of
  // them at which every replicated parameter agreed too: weights that agreed there and differ
  // now changed in between; weights that differ at the first recorded step may have differed
  // from the start.
  int64_t steps_recorded_before = 0;
  std::optional<int64_t> parameters_last_agreed;
  // Per rank that watched its update (StepRecord::edited_after_update; the probe at 2 ranks): the
  // parameters it wrote after its optimizer step, before this record. A rank absent did not watch.
  std::map<int, std::vector<std::string>> edited_after_update;
  // The odd ranks whose divergent reduced gradients at this step are exactly what the reference
  // ranks reduced at the next step they recorded (RanksOneStepBehind): ranks that skipped an
  // optimizer step, so that their records are numbered one behind from here.
  std::vector<int> one_step_behind;
};

// The odd ranks of `facts`' divergent gradients (every one with a majority) whose digest equals
// the reference rank's digest of the same gradient in `next`, the records of the next step;
// empty unless every odd side of every divergent gradient is such a rank.
std::vector<int> RanksOneStepBehind(const DivergenceFacts& facts, const std::vector<const StepRecord*>& next);

// The ranks whose own records say they wrote the divergent parameters outside the update: for
// every divergent parameter without a majority that one side edited, the side (a group of equal
// digests) each of whose ranks recorded editing it, while every rank of the other sides watched
// and did not; nothing where the sides' records do not single one out, or two tensors name
// different sides. At 2 ranks this is the culprit the digests alone cannot give.
std::vector<int> RanksThatEditedAfterUpdate(const DivergenceFacts& facts);

// One cause: its name (docs/CHECKERS.md#causes lists them) and its rule.
struct DivergenceCause {
  std::string_view name;
  std::optional<std::string> (*explain)(const DivergenceFacts& facts);
};

// Every cause, in the order they are tried: the first that holds is the finding's.
const std::vector<DivergenceCause>& DivergenceCauses();

// The line of the first cause that holds, or nothing.
std::optional<std::string> ExplainDivergence(const DivergenceFacts& facts);

// The facts of `step` from the ranks' records of it (a StepJudge's OnStep): the divergent cells
// of every kind. The collectives come from the folded traces afterwards (AddCollectiveFacts).
DivergenceFacts DivergenceFactsAt(int64_t step, const std::vector<const StepRecord*>& records);
void AddCollectiveFacts(const std::vector<RankTrace>& traces, DivergenceFacts* facts);

}  // namespace lockstep
