#include "checkers/checker_registry.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "checkers/buffers_checker.h"
#include "checkers/collective_args_checker.h"
#include "checkers/collective_order_checker.h"
#include "checkers/config_agreement_checker.h"
#include "checkers/crash_checker.h"
#include "checkers/determinism_checker.h"
#include "checkers/discovery_count_checker.h"
#include "checkers/finite_checker.h"
#include "checkers/forward_passes_checker.h"
#include "checkers/golden_checker.h"
#include "checkers/grad_presence_checker.h"
#include "checkers/group_agreement_checker.h"
#include "checkers/hang_checker.h"
#include "checkers/node_lost_checker.h"
#include "checkers/optimizer_settings_checker.h"
#include "checkers/optimizer_state_checker.h"
#include "checkers/reference_checker.h"
#include "checkers/replica_weights_checker.h"
#include "checkers/stalled_params_checker.h"
#include "checkers/startup_checker.h"
#include "checkers/synced_grads_checker.h"
#include "checkers/teardown_checker.h"
#include "checkers/tp_inputs_checker.h"

namespace lockstep {
namespace {

class UnknownChecker : public Checker {
 public:
  explicit UnknownChecker(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  bool reads_tensors() const override { return false; }  // it reads nothing: its finding says it is no checker
  std::vector<Finding> Check(const CheckContext&) const override {
    Finding f;
    f.checker = name_;
    f.outcome = FindingOutcome::kError;
    f.message = "no checker named '" + name_ + "'";
    return {f};
  }

 private:
  std::string name_;
};

template <typename T>
std::unique_ptr<Checker> Make() {
  return std::make_unique<T>();
}
using CheckerFactory = std::unique_ptr<Checker> (*)();

// When a scenario without `checks:` runs a checker (docs/SCENARIOS.md#checks).
enum class DefaultUse {
  kAlways,
  kWhenComparable,  // only when the N-rank run must reproduce the 1-rank run (see DefaultChecks)
  kOptIn,           // only when `checks:` or --check names it
};

// In-band use: a checker the ranks run themselves on one step's exchanged tables
// (`--compare in-band`, checkers/in_band_comparison.h).
enum class InBand { kNo, kYes };

struct Entry {
  CheckerFactory make;
  DefaultUse use;
  Symptoms sees;  // what it can see of an injected bug (harness/scenario/symptom.h)
  // The kind of the tensors its findings name (`lockstep repro` dumps them), if it names any.
  std::optional<TensorKind> tensors;
  InBand in_band;
  // How a launch ends that it judges whatever `checks:` lists (ChecksFor), if any.
  std::optional<LaunchEnding> judges_ending;
  std::vector<Companion> companions;  // the runs besides the scenario's own it compares with
};

// The one list of checkers. Each names itself (Checker::name()), so a name is written once.
const std::vector<Entry>& Checkers() {
  using namespace symptom;
  constexpr std::nullopt_t kNoTensors = std::nullopt;
  constexpr std::nullopt_t kNoEnding = std::nullopt;
  static const std::vector<Entry> kCheckers = {
      {&Make<ReplicaWeightsChecker>, DefaultUse::kAlways, kReplicaWeightsDiffer, TensorKind::kParam, InBand::kYes,
       kNoEnding, {}},
      {&Make<SyncedGradsChecker>, DefaultUse::kAlways, kSyncedGradsDiffer, TensorKind::kGrad, InBand::kYes, kNoEnding, {}},
      {&Make<OptimizerStateChecker>, DefaultUse::kAlways, kOptimizerStateDiffers, TensorKind::kOptimizerState,
       InBand::kYes, kNoEnding, {}},
      // Settings, not tensors: no injection of lockstep-rank's records them (its trainer writes `lr` only).
      {&Make<OptimizerSettingsChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      // Forward passes counted by the probe; lockstep-rank's trainer counts none (and skips no batch).
      {&Make<ForwardPassesChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      {&Make<BuffersChecker>, DefaultUse::kAlways, kBuffersDiffer, TensorKind::kBuffer, InBand::kYes, kNoEnding, {}},
      {&Make<CollectiveOrderChecker>, DefaultUse::kAlways, kCollectivesDiffer, kNoTensors, InBand::kNo, kNoEnding, {}},
      // An all_to_all's split sizes, which lockstep-rank's communicator never issues.
      {&Make<CollectiveArgsChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      // Tensor-parallel modules' inputs, which lockstep-rank's data-parallel trainer has none of.
      {&Make<TpInputsChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      {&Make<DiscoveryCountChecker>, DefaultUse::kAlways, kDiscoveryRepeated, kNoTensors, InBand::kNo, kNoEnding, {}},
      {&Make<FiniteChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      // Every rank stalls alike, which no injection of lockstep-rank's does (each breaks one rank).
      {&Make<StalledParamsChecker>, DefaultUse::kAlways, kNone, TensorKind::kParam, InBand::kNo, kNoEnding, {}},
      // Sharded parameters' gradient presence; lockstep-rank's trainer replicates every parameter.
      {&Make<GradPresenceChecker>, DefaultUse::kAlways, kNone, TensorKind::kGrad, InBand::kNo, kNoEnding, {}},
      {&Make<HangChecker>, DefaultUse::kAlways, kRankHangs, kNoTensors, InBand::kNo, LaunchEnding::kHang, {}},
      {&Make<CrashChecker>, DefaultUse::kAlways, kRankCrashes, kNoTensors, InBand::kNo, LaunchEnding::kCrash, {}},
      // A rank that died after its footer: a launch ending `crash` still, judged by `crash`, which
      // leaves such a rank to it; not an ending judge itself, so a scenario's `checks:` can leave it out.
      {&Make<TeardownChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      {&Make<StartupChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, LaunchEnding::kStartupTimeout, {}},
      // It judges a lost host whatever `checks:` lists; only a multi-host launch can end so.
      {&Make<NodeLostChecker>, DefaultUse::kOptIn, kNone, kNoTensors, InBand::kNo, LaunchEnding::kNodeLost, {}},
      {&Make<ConfigAgreementChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      // The process groups a program made (the probe's records); lockstep-rank's trainer makes none.
      {&Make<GroupAgreementChecker>, DefaultUse::kAlways, kNone, kNoTensors, InBand::kNo, kNoEnding, {}},
      // It compares every replica's tensors with the 1-rank run's too, so it sees a lone replica.
      {&Make<ReferenceChecker>, DefaultUse::kWhenComparable, kDriftFromCleanRun | kReplicaWeightsDiffer, kNoTensors,
       InBand::kNo, kNoEnding, {Companion::kReference, Companion::kReferenceSplit}},
      {&Make<DeterminismChecker>, DefaultUse::kOptIn, kNone, kNoTensors, InBand::kNo, kNoEnding, {Companion::kRepeat}},
      {&Make<GoldenChecker>, DefaultUse::kOptIn, kDriftFromCleanRun, kNoTensors, InBand::kNo, kNoEnding, {}},
  };
  return kCheckers;
}

}  // namespace

std::vector<std::string> CheckerNames() {
  std::vector<std::string> names;
  for (const Entry& entry : Checkers()) names.emplace_back(entry.make()->name());
  return names;
}

std::unique_ptr<Checker> MakeChecker(std::string_view name) {
  for (const Entry& entry : Checkers()) {
    std::unique_ptr<Checker> checker = entry.make();
    if (checker->name() == name) return checker;
  }
  return nullptr;
}

std::vector<std::unique_ptr<Checker>> MakeCheckers(const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<Checker>> out;
  for (const std::string& n : names) {
    std::unique_ptr<Checker> c = MakeChecker(n);
    out.push_back(c ? std::move(c) : std::make_unique<UnknownChecker>(n));
  }
  return out;
}

std::optional<TensorKind> TensorKindNamedBy(std::string_view checker) {
  for (const Entry& entry : Checkers()) {
    if (entry.make()->name() == checker) return entry.tensors;
  }
  return std::nullopt;
}

std::vector<std::string> InBandCheckerNames() {
  std::vector<std::string> names;
  for (const Entry& entry : Checkers()) {
    if (entry.in_band == InBand::kYes) names.emplace_back(entry.make()->name());
  }
  return names;
}

std::optional<std::string> CheckerJudging(LaunchEnding ending) {
  for (const Entry& entry : Checkers()) {
    if (entry.judges_ending == ending) return std::string(entry.make()->name());
  }
  return std::nullopt;
}

Symptoms SymptomsSeenBy(const std::vector<std::string>& checks) {
  Symptoms seen = symptom::kNone;
  for (const Entry& entry : Checkers()) {
    // A checker that judges how the launch ended runs whenever the launch ends so, listed or not.
    const bool runs = entry.judges_ending ||
                      std::find(checks.begin(), checks.end(), entry.make()->name()) != checks.end();
    if (runs) seen |= entry.sees;
  }
  return seen;
}

std::vector<std::pair<std::string, Companion>> CompanionRuns(const std::vector<std::string>& checks) {
  std::vector<std::pair<std::string, Companion>> runs;
  for (const Entry& entry : Checkers()) {
    const std::string name(entry.make()->name());
    if (std::find(checks.begin(), checks.end(), name) == checks.end()) continue;
    for (Companion companion : entry.companions) runs.emplace_back(name, companion);
  }
  return runs;
}

std::vector<std::string> CheckersSeeing(Symptoms symptoms) {
  std::vector<std::string> names;
  for (const Entry& entry : Checkers()) {
    if ((entry.sees & symptoms) != 0) names.emplace_back(entry.make()->name());
  }
  return names;
}

std::vector<std::string> DefaultChecks(const Scenario& scenario) {
  // The 1-rank reference only means something when the N-rank run must reproduce it: dropout
  // masks and per-rank BatchNorm statistics depend on the split, and an injection changes the
  // run on purpose.
  const bool comparable = scenario.ranks > 1 && scenario.model.dropout == 0.0 &&
                          scenario.model.norm != NormKind::kBatchNorm && scenario.inject.empty();
  std::vector<std::string> checks;
  for (const Entry& entry : Checkers()) {
    if (entry.use == DefaultUse::kAlways || (entry.use == DefaultUse::kWhenComparable && comparable)) {
      checks.emplace_back(entry.make()->name());
    }
  }
  return checks;
}

}  // namespace lockstep
