#include "checkers/golden_checker.h"

#include <cmath>
#include <map>
#include <set>

#include "checkers/golden_file.h"
#include "checkers/internal/check_util.h"
#include "checkers/loss_curve.h"

namespace lockstep {
namespace {

using internal::FormatExact;
using internal::FormatNumber;

bool Within(double value, double golden, double rtol) {
  if (rtol <= 0 || !std::isfinite(value) || !std::isfinite(golden)) return internal::SameDouble(value, golden);
  return std::fabs(value - golden) <= rtol * std::fabs(golden);
}

std::string Key(TensorKind kind, const std::string& name) { return std::string(ToString(kind)) + " " + name; }

}  // namespace

std::vector<Finding> GoldenChecker::Check(const CheckContext& context) const {
  Finding error;
  error.checker = std::string(name());
  error.outcome = FindingOutcome::kError;
  if (context.platform.empty()) {
    error.message = "no platform fingerprint to pick a golden file by";
    return {error};
  }
  const std::string& id = context.scenario.name;
  const std::filesystem::path path = GoldenPath(context.fixtures_dir, id, context.platform);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    error.message = "no golden file " + path.string() + " for platform " + context.platform +
                    "; run `lockstep bless` on scenario " + id + " to create it";
    error.details["golden_file"] = path.string();
    return {error};
  }
  Result<GoldenRecord> golden = ReadGolden(path);
  if (!golden.ok()) {
    error.message = "cannot read golden file: " + golden.status().message();
    return {error};
  }
  const double rtol = context.scenario.tolerances.golden_rtol;
  const std::string tolerance = rtol > 0 ? "relative tolerance " + FormatNumber(rtol, 3) : "exact";
  std::vector<Finding> findings;

  // Loss curve: every golden step must be there and agree.
  const std::map<int64_t, double> run = MeanLossCurve(context.traces);
  int differing = 0;
  Finding loss;
  loss.checker = std::string(name());
  for (const auto& [step, want] : golden->loss) {
    auto it = run.find(step);
    std::string what;
    if (it == run.end()) what = "step " + std::to_string(step) + " is missing from the run (the golden file has loss " + FormatExact(want) + ")";
    else if (!Within(it->second, want, rtol)) {
      what = "loss at step " + std::to_string(step) + " is " + FormatExact(it->second) + " but the golden file has " +
             FormatExact(want) + " (" + tolerance + ")";
    }
    if (what.empty()) continue;
    if (differing++ == 0) {
      loss.step = step;
      loss.message = what;
    }
  }
  if (differing > 0) {
    if (differing > 1) loss.message += "; " + std::to_string(differing - 1) + " more step(s) differ";
    loss.details["golden_file"] = path.string();
    findings.push_back(std::move(loss));
  }

  // Final tensors, at the golden final step, on every rank that recorded it.
  Finding tensors;
  tensors.checker = std::string(name());
  tensors.step = golden->final_step;
  std::vector<std::string> parts;
  std::set<std::string> listed;
  for (size_t r = 0; r < context.traces.size(); ++r) {
    if (!internal::HasData(context.traces[r])) continue;
    const auto steps = internal::StepsByNumber(context.traces[r]);
    auto it = steps.find(golden->final_step);
    if (it == steps.end()) continue;
    std::map<std::string, const TensorRecord*> have;
    for (const TensorRecord& t : it->second->tensors) have[Key(t.kind, t.name)] = &t;
    bool rank_differs = false;
    for (const GoldenTensor& want : golden->final_tensors) {
      auto h = have.find(Key(want.kind, want.name));
      std::string what;
      if (h == have.end()) what = Key(want.kind, want.name) + " missing";
      else if (rtol > 0 ? !Within(h->second->norm, want.norm, rtol) : h->second->digest != want.digest) {
        what = Key(want.kind, want.name) + (rtol > 0 ? " norm " + FormatExact(h->second->norm) + " vs golden " + FormatExact(want.norm)
                                                     : " digest " + h->second->digest.ToHex() + " vs golden " + want.digest.ToHex());
      }
      if (what.empty()) continue;
      rank_differs = true;
      if (tensors.tensor.empty()) tensors.tensor = want.name;
      if (listed.insert(want.name).second) tensors.tensors.push_back(want.name);
      if (parts.size() < 5) parts.push_back("rank " + std::to_string(r) + ": " + what);
    }
    if (rank_differs) tensors.ranks.push_back(static_cast<int>(r));
  }
  if (!tensors.ranks.empty()) {
    tensors.message = "final tensors at step " + std::to_string(golden->final_step) + " differ from the golden file (" +
                      tolerance + "): " + internal::JoinCapped(parts, 5);
    tensors.details["golden_file"] = path.string();
    findings.push_back(std::move(tensors));
  }
  return findings;
}

}  // namespace lockstep
