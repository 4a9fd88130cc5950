#include "checkers/grad_presence_checker.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/step_judge.h"

namespace lockstep {
namespace {

// A parameter no value comparison spans every rank of: recorded as this rank's own piece, or
// compared only within a replica group (the probe writes no group for "every rank").
bool Sharded(const TensorRecord& t) { return !t.replicated || t.group != nullptr; }

// One parameter at one step: the ranks holding a piece of it, with and without its gradient.
struct Presence {
  std::string name;
  std::vector<int> with;
  std::vector<int> without;
};

// The parameters of the onset step that disagree, listed in the finding.
constexpr size_t kListed = 4;

class GradPresenceJudge : public StepJudge {
 public:
  explicit GradPresenceJudge(std::string checker) : checker_(std::move(checker)) {}

  void OnStep(int64_t step, const std::vector<const StepRecord*>& records) override {
    std::vector<Presence> params;
    std::unordered_map<std::string, size_t> index;
    std::unordered_set<std::string> grads;
    for (size_t r = 0; r < records.size(); ++r) {
      if (records[r] == nullptr) continue;
      grads.clear();
      for (const TensorRecord& t : records[r]->tensors) {
        if (t.kind == TensorKind::kGrad) grads.insert(t.name);
      }
      // No gradient recorded at all (no optimizer step was captured): nothing to say.
      if (grads.empty()) continue;
      for (const TensorRecord& t : records[r]->tensors) {
        if (t.kind != TensorKind::kParam || !Sharded(t) || t.numel == 0) continue;
        auto [it, added] = index.emplace(t.name, params.size());
        if (added) params.push_back(Presence{t.name, {}, {}});
        Presence& p = params[it->second];
        (grads.count(t.name) != 0 ? p.with : p.without).push_back(static_cast<int>(r));
      }
    }
    std::vector<Presence> split;
    for (Presence& p : params) {
      if (!p.with.empty() && !p.without.empty()) split.push_back(std::move(p));
    }
    if (split.empty()) return;
    if (onset_.empty()) {
      onset_step_ = step;
      onset_ = std::move(split);
      return;
    }
    ++later_steps_;
    last_step_ = step;
  }

  std::vector<Finding> Finish(const CheckContext&) override {
    if (onset_.empty()) return {};
    Finding f;
    f.checker = checker_;
    f.step = onset_step_;
    f.tensor = onset_.front().name;
    std::vector<std::string> listed;
    for (const Presence& p : onset_) {
      f.tensors.push_back(p.name);
      f.ranks.insert(f.ranks.end(), p.without.begin(), p.without.end());
      listed.push_back(p.name + " (a gradient on " + internal::RankPhrase(p.with) + "; none on " +
                       internal::RankPhrase(p.without) + ")");
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.ranks.erase(std::unique(f.ranks.begin(), f.ranks.end()), f.ranks.end());
    f.message = "sharded parameters received a gradient on some ranks and not on others at step " +
                std::to_string(onset_step_) + " (" + std::to_string(onset_.size()) + " parameter" +
                (onset_.size() == 1 ? "" : "s") + "): " + internal::JoinCapped(listed, kListed) +
                "; every rank holding a piece of a parameter must reduce its gradient, or the reduce-scatters "
                "of different parameters of the same shape pair up silently (a branch or layer chosen per rank?)";
    f.details["parameters"] = std::to_string(onset_.size());
    if (later_steps_ > 0) {
      f.details["later_steps"] = std::to_string(later_steps_);
      f.details["last_step"] = std::to_string(last_step_);
      f.message += "; again in " + std::to_string(later_steps_) + " later step" + (later_steps_ == 1 ? "" : "s") +
                   ", the last " + std::to_string(last_step_);
    }
    return {f};
  }

 private:
  std::string checker_;
  int64_t onset_step_ = 0;
  std::vector<Presence> onset_;  // the onset step's disagreeing parameters, in record order
  int64_t later_steps_ = 0;
  int64_t last_step_ = 0;
};

}  // namespace

std::vector<Finding> GradPresenceChecker::Check(const CheckContext& context) const {
  return JudgeInMemory(*StartJudge({}), name(), context);
}

std::unique_ptr<StepJudge> GradPresenceChecker::StartJudge(const JudgeStart& /*start*/) const {
  return std::make_unique<GradPresenceJudge>(std::string(name()));
}

}  // namespace lockstep
