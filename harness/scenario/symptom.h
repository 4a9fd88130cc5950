// What a bug leaves in a run that some check can see. An injection kind says which symptoms it
// causes (harness/scenario/injection_kinds.h), a checker which it reads (its row in
// checkers/checker_registry.cc); validation refuses an injection none of whose symptoms any of
// the scenario's checks reads (docs/SCENARIOS.md#inject), so no injected scenario passes unseen.
#pragma once

#include <cstdint>

namespace lockstep {

// A set of symptoms, one bit each.
using Symptoms = std::uint32_t;

namespace symptom {
inline constexpr Symptoms kNone = 0;
inline constexpr Symptoms kReplicaWeightsDiffer = 1u << 0;  // a rank's replicated weights differ from the others'
inline constexpr Symptoms kSyncedGradsDiffer = 1u << 1;     // ... its gradients after the sync
inline constexpr Symptoms kOptimizerStateDiffers = 1u << 2; // ... its optimizer state
inline constexpr Symptoms kBuffersDiffer = 1u << 3;         // ... its buffers (BatchNorm statistics)
inline constexpr Symptoms kCollectivesDiffer = 1u << 4;     // the ranks' collective sequences differ
inline constexpr Symptoms kDiscoveryRepeated = 1u << 5;     // a discovery call where none belongs
inline constexpr Symptoms kRankHangs = 1u << 6;
inline constexpr Symptoms kRankCrashes = 1u << 7;
// The run's numbers leave the envelope of a clean run of the same scenario (the 1-rank
// reference, a golden file) while every replica agrees with the others: what a corrupted zero1
// shard update looks like once the all-gather has copied it to every rank.
inline constexpr Symptoms kDriftFromCleanRun = 1u << 8;
}  // namespace symptom

}  // namespace lockstep
