#include "checkers/checker_registry.h"

#include "checkers/buffers_checker.h"
#include "checkers/collective_order_checker.h"
#include "checkers/crash_checker.h"
#include "checkers/determinism_checker.h"
#include "checkers/discovery_count_checker.h"
#include "checkers/finite_checker.h"
#include "checkers/golden_checker.h"
#include "checkers/hang_checker.h"
#include "checkers/optimizer_state_checker.h"
#include "checkers/reference_checker.h"
#include "checkers/replica_weights_checker.h"
#include "checkers/startup_checker.h"
#include "checkers/synced_grads_checker.h"

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

struct Entry {
  CheckerFactory make;
  DefaultUse use;
};

// The one list of checkers. Each names itself (Checker::name()), so a name is written once.
constexpr Entry kCheckers[] = {
    {&Make<ReplicaWeightsChecker>, DefaultUse::kAlways},
    {&Make<SyncedGradsChecker>, DefaultUse::kAlways},
    {&Make<OptimizerStateChecker>, DefaultUse::kAlways},
    {&Make<BuffersChecker>, DefaultUse::kAlways},
    {&Make<CollectiveOrderChecker>, DefaultUse::kAlways},
    {&Make<DiscoveryCountChecker>, DefaultUse::kAlways},
    {&Make<FiniteChecker>, DefaultUse::kAlways},
    {&Make<HangChecker>, DefaultUse::kAlways},
    {&Make<CrashChecker>, DefaultUse::kAlways},
    {&Make<StartupChecker>, DefaultUse::kAlways},
    {&Make<ReferenceChecker>, DefaultUse::kWhenComparable},
    {&Make<DeterminismChecker>, DefaultUse::kOptIn},
    {&Make<GoldenChecker>, DefaultUse::kOptIn},
};

}  // namespace

std::vector<std::string> CheckerNames() {
  std::vector<std::string> names;
  for (const Entry& entry : kCheckers) names.emplace_back(entry.make()->name());
  return names;
}

std::unique_ptr<Checker> MakeChecker(std::string_view name) {
  for (const Entry& entry : kCheckers) {
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

std::vector<std::string> DefaultChecks(const Scenario& scenario) {
  // The 1-rank reference only means something when the N-rank run must reproduce it: dropout
  // masks and per-rank BatchNorm statistics depend on the split, and an injection changes the
  // run on purpose.
  const bool comparable = scenario.ranks > 1 && scenario.model.dropout == 0.0 &&
                          scenario.model.norm != NormKind::kBatchNorm && scenario.inject.empty();
  std::vector<std::string> checks;
  for (const Entry& entry : kCheckers) {
    if (entry.use == DefaultUse::kAlways || (entry.use == DefaultUse::kWhenComparable && comparable)) {
      checks.emplace_back(entry.make()->name());
    }
  }
  return checks;
}

}  // namespace lockstep
