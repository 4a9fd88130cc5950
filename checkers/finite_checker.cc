#include "checkers/finite_checker.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "checkers/internal/check_util.h"
#include "checkers/step_judge.h"

namespace lockstep {
namespace {

// Whether the record's gradient norm is one to judge: a record that holds no gradient has none,
// and the probe writes NaN there (an optimizer that stepped over parameters without a gradient:
// `stalled_params` judges that, and a NaN here would name the wrong thing). An infinite norm is
// judged whatever the record holds.
bool GradNormJudged(const StepRecord& s) {
  if (s.step <= 0) return false;
  if (!std::isnan(s.grad_norm)) return true;
  for (const TensorRecord& t : s.tensors) {
    if (t.kind == TensorKind::kGrad) return true;
  }
  return false;
}

// What is not finite in one rank's step record.
std::vector<std::string> NonFinite(const StepRecord& s, std::string* first_tensor) {
  std::vector<std::string> what;
  if (s.step > 0 && s.loss_reported && !std::isfinite(s.loss)) what.push_back("loss " + internal::FormatNumber(s.loss));
  if (GradNormJudged(s) && !std::isfinite(s.grad_norm)) what.push_back("grad norm " + internal::FormatNumber(s.grad_norm));
  for (const TensorRecord& t : s.tensors) {
    if (std::isfinite(t.norm)) continue;
    if (first_tensor->empty()) *first_tensor = t.name;
    what.push_back(std::string(ToString(t.kind)) + " " + t.name + " norm " + internal::FormatNumber(t.norm));
  }
  return what;
}

// Whether NonFinite would name anything.
bool AnyNonFinite(const StepRecord& s) {
  if (s.step > 0 && s.loss_reported && !std::isfinite(s.loss)) return true;
  if (GradNormJudged(s) && !std::isfinite(s.grad_norm)) return true;
  for (const TensorRecord& t : s.tensors) {
    if (!std::isfinite(t.norm)) return true;
  }
  return false;
}

// Whether the record's only non-finite values are the step's loss and gradients: what a loss
// scaler's overflow leaves, before it decides to skip the update.
bool OnlyLossAndGradients(const StepRecord& s) {
  for (const TensorRecord& t : s.tensors) {
    if (!std::isfinite(t.norm) && t.kind != TensorKind::kGrad) return false;
  }
  return true;
}

// The first step with a non-finite value (what, per rank, and the tensors), and how many steps
// had one after it: nothing that grows with steps. A step whose non-finite loss and gradients
// changed no parameter on any rank was skipped, as a loss scaler skips an overflow (every rank
// alike: a skip on one rank alone shows in the replica checks) and is not a finding.
class FiniteJudge : public StepJudge {
 public:
  explicit FiniteJudge(std::string checker) : checker_(std::move(checker)) {}

  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    if (first_) {  // after the first, a step is only counted: no words for every NaN of a dead run
      for (const StepRecord* record : records) {
        if (record != nullptr && AnyNonFinite(*record)) {
          ++later_steps_;
          last_step_ = step;
          return;
        }
      }
      return;
    }
    const bool skipped = UpdateSkippedEverywhere(records);
    RememberParameters(records);
    std::map<int, std::vector<std::string>> by_rank;
    std::string first_tensor;
    std::vector<std::string> tensors;
    std::set<std::string> listed;
    for (size_t r = 0; r < records.size(); ++r) {
      if (records[r] == nullptr) continue;
      std::string tensor;
      std::vector<std::string> what = NonFinite(*records[r], &tensor);
      if (what.empty()) continue;
      by_rank[static_cast<int>(r)] = std::move(what);
      if (first_tensor.empty()) first_tensor = tensor;
      for (const TensorRecord& t : records[r]->tensors) {
        if (!std::isfinite(t.norm) && listed.insert(t.name).second) tensors.push_back(t.name);
      }
    }
    if (by_rank.empty() || skipped) return;
    first_ = step;
    by_rank_ = std::move(by_rank);
    first_tensor_ = std::move(first_tensor);
    tensors_ = std::move(tensors);
  }

  std::vector<Finding> Finish(const CheckContext&) override {
    if (!first_) return {};
    Finding f;
    f.checker = checker_;
    f.step = *first_;
    f.tensor = first_tensor_;
    f.tensors = tensors_;
    std::vector<std::string> parts;
    for (const auto& [rank, what] : by_rank_) {
      f.ranks.push_back(rank);
      parts.push_back("rank " + std::to_string(rank) + ": " + internal::JoinCapped(what, 4));
    }
    f.message = "non-finite values at step " + std::to_string(*first_) + ": " + internal::JoinCapped(parts, 8);
    if (later_steps_ > 0) {
      f.message += "; non-finite again at " + std::to_string(later_steps_) + " later step" +
                   (later_steps_ == 1 ? "" : "s") + " (last: " + std::to_string(last_step_) + ")";
      f.details["later_steps"] = std::to_string(later_steps_);
    }
    return {f};
  }

 private:
  // Whether every rank that recorded the step holds parameters, each with the digest it had at
  // the rank's previous record, and no non-finite value but its loss and gradients.
  bool UpdateSkippedEverywhere(const std::vector<const StepRecord*>& records) const {
    bool any = false;
    for (size_t r = 0; r < records.size(); ++r) {
      if (records[r] == nullptr) continue;
      if (r >= last_params_.size() || last_params_[r].empty() || !OnlyLossAndGradients(*records[r])) return false;
      for (const TensorRecord& t : records[r]->tensors) {
        if (t.kind != TensorKind::kParam) continue;
        auto it = last_params_[r].find(t.name);
        if (it == last_params_[r].end() || !(it->second == t.digest)) return false;
        any = true;
      }
    }
    return any;
  }
  void RememberParameters(const std::vector<const StepRecord*>& records) {
    if (last_params_.size() < records.size()) last_params_.resize(records.size());
    for (size_t r = 0; r < records.size(); ++r) {
      if (records[r] == nullptr) continue;
      last_params_[r].clear();
      for (const TensorRecord& t : records[r]->tensors) {
        if (t.kind == TensorKind::kParam) last_params_[r][t.name] = t.digest;
      }
    }
  }

  std::string checker_;
  std::vector<std::unordered_map<std::string, Digest128>> last_params_;  // per rank, until the first finding
  std::optional<int64_t> first_;
  std::map<int, std::vector<std::string>> by_rank_;  // at the first step
  std::string first_tensor_;
  std::vector<std::string> tensors_;
  int64_t later_steps_ = 0;
  int64_t last_step_ = 0;
};

}  // namespace

std::vector<Finding> FiniteChecker::Check(const CheckContext& context) const {
  return JudgeInMemory(*StartJudge({}), name(), context);
}

std::unique_ptr<StepJudge> FiniteChecker::StartJudge(const JudgeStart& /*start*/) const { return std::make_unique<FiniteJudge>(std::string(name())); }

}  // namespace lockstep
