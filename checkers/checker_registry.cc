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
#include "checkers/synced_grads_checker.h"

namespace lockstep {
namespace {

class UnknownChecker : public Checker {
 public:
  explicit UnknownChecker(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
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

// The one list of checkers. Each names itself (Checker::name()), so a name is written once.
constexpr CheckerFactory kCheckers[] = {
    &Make<ReplicaWeightsChecker>, &Make<SyncedGradsChecker>,     &Make<OptimizerStateChecker>,
    &Make<BuffersChecker>,        &Make<CollectiveOrderChecker>, &Make<DiscoveryCountChecker>,
    &Make<FiniteChecker>,         &Make<HangChecker>,            &Make<CrashChecker>,
    &Make<ReferenceChecker>,      &Make<DeterminismChecker>,     &Make<GoldenChecker>,
};

}  // namespace

std::vector<std::string> CheckerNames() {
  std::vector<std::string> names;
  for (CheckerFactory make : kCheckers) names.emplace_back(make()->name());
  return names;
}

std::unique_ptr<Checker> MakeChecker(std::string_view name) {
  for (CheckerFactory make : kCheckers) {
    std::unique_ptr<Checker> checker = make();
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
  std::vector<std::string> checks = {"replica_weights", "synced_grads",    "optimizer_state",
                                     "buffers",         "collective_order", "discovery_count",
                                     "finite",          "hang",             "crash"};
  // The 1-rank reference only means something when the N-rank run must reproduce it: dropout
  // masks and per-rank BatchNorm statistics depend on the split, and an injection changes the
  // run on purpose.
  const bool comparable = scenario.ranks > 1 && scenario.model.dropout == 0.0 &&
                          scenario.model.norm != NormKind::kBatchNorm && scenario.inject.empty();
  if (comparable) checks.push_back("reference");
  return checks;
}

}  // namespace lockstep
