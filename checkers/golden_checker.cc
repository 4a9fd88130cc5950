#include "checkers/golden_checker.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
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

class GoldenJudge : public StepJudge {
 public:
  GoldenJudge(const std::string& checker, const JudgeStart& start) : rtol_(start.tolerances.golden_rtol) {
    error_.checker = checker;
    error_.outcome = FindingOutcome::kError;
    tensors_.checker = checker;
    if (start.platform.empty()) {
      error_.message = "no platform fingerprint to pick a golden file by";
      return;
    }
    const std::string& id = start.scenario_name;
    path_ = GoldenPath(start.fixtures_dir, id, start.platform);
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) {
      error_.message = "no golden file " + path_.string() + " for platform " + start.platform +
                       "; run `lockstep bless` on scenario " + id + " to create it";
      error_.details["golden_file"] = path_.string();
      return;
    }
    Result<GoldenRecord> golden = ReadGolden(path_);
    if (!golden.ok()) {
      error_.message = "cannot read golden file: " + golden.status().message();
      return;
    }
    golden_ = std::move(golden).value();
    tensors_.step = golden_->final_step;
  }

  // Final tensors, at the golden final step, on every rank that recorded it.
  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    if (!golden_ || step != golden_->final_step) return;
    for (size_t r = 0; r < records.size(); ++r) {
      if (!records[r]) continue;
      std::map<std::string, const TensorRecord*> have;
      for (const TensorRecord& t : records[r]->tensors) have[Key(t.kind, t.name)] = &t;
      bool rank_differs = false;
      for (const GoldenTensor& want : golden_->final_tensors) {
        auto h = have.find(Key(want.kind, want.name));
        std::string what;
        if (h == have.end()) what = Key(want.kind, want.name) + " missing";
        else if (rtol_ > 0 ? !Within(h->second->norm, want.norm, rtol_) : h->second->digest != want.digest) {
          what = Key(want.kind, want.name) + (rtol_ > 0 ? " norm " + FormatExact(h->second->norm) + " vs golden " + FormatExact(want.norm)
                                                        : " digest " + h->second->digest.ToHex() + " vs golden " + want.digest.ToHex());
        }
        if (what.empty()) continue;
        rank_differs = true;
        if (tensors_.tensor.empty()) tensors_.tensor = want.name;
        if (listed_.insert(want.name).second) tensors_.tensors.push_back(want.name);
        if (parts_.size() < 5) parts_.push_back("rank " + std::to_string(r) + ": " + what);
      }
      if (rank_differs) tensors_.ranks.push_back(static_cast<int>(r));
    }
  }

  std::vector<Finding> Finish(const CheckContext& context) override {
    if (!golden_) return {error_};
    const std::string tolerance = rtol_ > 0 ? "relative tolerance " + FormatNumber(rtol_, 3) : "exact";
    std::vector<Finding> findings;

    // Loss curve: every golden step must be there and agree (the folded traces keep the losses).
    const std::map<int64_t, double> run = MeanLossCurve(context.traces);
    int differing = 0;
    Finding loss;
    loss.checker = tensors_.checker;
    for (const auto& [step, want] : golden_->loss) {
      auto it = run.find(step);
      std::string what;
      if (it == run.end()) what = "step " + std::to_string(step) + " is missing from the run (the golden file has loss " + FormatExact(want) + ")";
      else if (!Within(it->second, want, rtol_)) {
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
      loss.details["golden_file"] = path_.string();
      findings.push_back(std::move(loss));
    }
    if (!tensors_.ranks.empty()) {
      Finding tensors = tensors_;
      tensors.message = "final tensors at step " + std::to_string(golden_->final_step) + " differ from the golden file (" +
                        tolerance + "): " + internal::JoinCapped(parts_, 5);
      tensors.details["golden_file"] = path_.string();
      findings.push_back(std::move(tensors));
    }
    return findings;
  }

 private:
  double rtol_;
  Finding error_;  // why there is nothing to compare with, when there is not
  std::filesystem::path path_;
  std::optional<GoldenRecord> golden_;
  Finding tensors_;  // the final tensors' finding, but its message
  std::vector<std::string> parts_;
  std::set<std::string> listed_;
};

}  // namespace

std::vector<Finding> GoldenChecker::Check(const CheckContext& context) const {
  return JudgeInMemory(*StartJudge(JudgeStartFor(context)), name(), context);
}

std::unique_ptr<StepJudge> GoldenChecker::StartJudge(const JudgeStart& start) const {
  return std::make_unique<GoldenJudge>(std::string(name()), start);
}

}  // namespace lockstep
