// A checker is a pure function of the traces, the scenario and the fixtures. It never talks to
// MPI, so it is tested on canned traces (fixtures/traces/).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/result/finding.h"
#include "harness/result/launch_report.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_record.h"

namespace lockstep {

struct CheckContext {
  const Scenario& scenario;
  const std::vector<RankTrace>& traces;        // index = rank; may be shorter if a rank never wrote
  const LaunchReport& launch;                  // how the ranks ended (hang, crash, clean)
  const std::vector<RankTrace>* reference = nullptr;  // the 1-rank run, for `reference`
  // The 1-rank run that computes the global batch in the N ranks' pieces: its difference from
  // `reference` is the scenario's floating-point noise (`reference`'s tolerance).
  const std::vector<RankTrace>* reference_split = nullptr;
  const std::vector<RankTrace>* repeat = nullptr;     // a second run, for `determinism`
  std::filesystem::path fixtures_dir{};        // for `golden`
  std::string platform{};                      // platform fingerprint, for `golden`
};

class Checker {
 public:
  virtual ~Checker() = default;
  virtual std::string_view name() const = 0;
  virtual std::vector<Finding> Check(const CheckContext& context) const = 0;
  // What the checker needs from a scenario file besides the traces (its companion runs, its
  // tolerances, its golden file), or empty. `lockstep check` and `lockstep exec` have no scenario
  // and skip such a checker, with this as the reason.
  virtual std::string_view needs_scenario() const { return {}; }
  // Whether it judges how the launcher saw the ranks end (crash, hang): `lockstep check` sees
  // only the traces and skips it.
  virtual bool needs_launch() const { return false; }
};

}  // namespace lockstep
