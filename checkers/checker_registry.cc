#include "checkers/checker_registry.h"

#include "checkers/buffers_checker.h"
#include "checkers/checker_names.h"
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

}  // namespace

std::unique_ptr<Checker> MakeChecker(std::string_view name) {
  if (name == "replica_weights") return std::make_unique<ReplicaWeightsChecker>();
  if (name == "synced_grads") return std::make_unique<SyncedGradsChecker>();
  if (name == "optimizer_state") return std::make_unique<OptimizerStateChecker>();
  if (name == "buffers") return std::make_unique<BuffersChecker>();
  if (name == "collective_order") return std::make_unique<CollectiveOrderChecker>();
  if (name == "discovery_count") return std::make_unique<DiscoveryCountChecker>();
  if (name == "finite") return std::make_unique<FiniteChecker>();
  if (name == "hang") return std::make_unique<HangChecker>();
  if (name == "crash") return std::make_unique<CrashChecker>();
  if (name == "reference") return std::make_unique<ReferenceChecker>();
  if (name == "determinism") return std::make_unique<DeterminismChecker>();
  if (name == "golden") return std::make_unique<GoldenChecker>();
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

}  // namespace lockstep
