#include "checkers/stalled_params_checker.h"

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/step_judge.h"

namespace lockstep {
namespace {

// The relative spacing of a floating-point dtype's values (its machine epsilon): an update of
// at least eps x |x| moves x. nullopt for dtypes that do not train (integers, bool) or that
// lockstep does not know, whose parameters are never what should have moved.
std::optional<double> Epsilon(const std::string& dtype) {
  if (dtype == "float32") return std::ldexp(1.0, -23);
  if (dtype == "float64") return std::ldexp(1.0, -52);
  if (dtype == "bfloat16") return std::ldexp(1.0, -7);
  if (dtype == "float16") return std::ldexp(1.0, -10);
  if (dtype.rfind("float8_e4m3", 0) == 0) return std::ldexp(1.0, -3);
  if (dtype.rfind("float8_e5m2", 0) == 0) return std::ldexp(1.0, -2);
  return std::nullopt;
}

// A parameter as the previous record held it: all a later record is compared with.
struct ParamState {
  std::string name;
  Digest128 digest;
  int64_t numel = 0;
  std::string dtype;
};

enum class Stall { kNone, kWithGradients, kWithoutGradients };

// One stalled record, as the finding describes it.
struct StalledRecord {
  Stall kind = Stall::kNone;
  int64_t step = 0;
  size_t params = 0;  // parameters in the record
  size_t driven = 0;  // with a gradient that should have moved them (kWithGradients)
  std::string first;  // the first of those (kWithoutGradients: the first parameter)
  double first_grad_norm = 0.0;
  double lr = 0.0;
};

// One rank's parameters from its previous record, and its runs of stalled records.
struct RankState {
  std::vector<ParamState> prev;
  bool have_prev = false;
  int64_t prev_step = -1;
  std::optional<StalledRecord> run_first;  // the first record of the current run of stalled ones
  int64_t run_length = 0;
  std::optional<StalledRecord> stalled;    // the first run of two or more: the rank's finding
  bool stall_open = false;                 // that run is the current one
  int64_t stalled_until = 0;
  int64_t stalled_records = 0;
};

// A run of this many stalled records is stalled training; one alone may be a deliberate skip.
constexpr int64_t kStalledRun = 2;

class StalledParamsJudge : public StepJudge {
 public:
  explicit StalledParamsJudge(std::string checker) : checker_(std::move(checker)) {}

  void OnStep(int64_t /*step*/, const std::vector<const StepRecord*>& records) override {
    if (ranks_.size() < records.size()) ranks_.resize(records.size());
    for (size_t r = 0; r < records.size(); ++r) {
      if (records[r] != nullptr) OnRecord(ranks_[r], *records[r]);
    }
  }

  std::vector<Finding> Finish(const CheckContext&) override {
    Finding f;
    f.checker = checker_;
    const StalledRecord* first = nullptr;
    std::vector<std::string> later;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankState& s = ranks_[r];
      if (!s.stalled) continue;
      const int rank = static_cast<int>(r);
      f.ranks.push_back(rank);
      f.details["rank" + std::to_string(rank) + "_stalled_steps"] =
          std::to_string(s.stalled->step) + "-" + std::to_string(s.stalled_until);
      if (first == nullptr || s.stalled->step < first->step) first = &*s.stalled;
    }
    if (first == nullptr) return {};
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankState& s = ranks_[r];
      if (s.stalled && s.stalled->step != first->step) {
        later.push_back("rank " + std::to_string(r) + " from step " + std::to_string(s.stalled->step));
      }
    }
    // The steps of the first-stalled (lowest) rank's run.
    int64_t until = first->step;
    int64_t records = 0;
    for (const RankState& s : ranks_) {
      if (s.stalled && &*s.stalled == first) {
        until = s.stalled_until;
        records = s.stalled_records;
      }
    }
    f.step = first->step;
    f.tensor = first->first;
    if (!first->first.empty()) f.tensors = {first->first};
    const std::string steps = "steps " + std::to_string(first->step) + "-" + std::to_string(until) + ", " +
                              std::to_string(records) + " records";
    f.message = "stalled training from step " + std::to_string(first->step) + " on " + internal::RankPhrase(f.ranks) + ": ";
    if (first->kind == Stall::kWithoutGradients) {
      f.message += "the optimizer stepped after a loss was backpropagated, but not one of the " +
                   std::to_string(first->params) + " parameters it steps had a gradient, and none changed (" + steps +
                   ", lr " + internal::FormatNumber(first->lr) +
                   "): it holds tensors the backward pass never reaches (an optimizer built before the model was "
                   "wrapped or sharded, which replaced the parameters it holds?)";
      f.details["gradients"] = "none";
    } else {
      f.message += "not one of the " + std::to_string(first->params) + " parameters changed (" + steps + ") although " +
                   std::to_string(first->driven) + " had a gradient that should have moved them (first: " +
                   first->first + ", gradient norm " + internal::FormatNumber(first->first_grad_norm) + ", lr " +
                   internal::FormatNumber(first->lr) +
                   "): the optimizer's step changed nothing (does it hold other tensors than the model's, or is "
                   "its update overwritten before the next step?)";
      f.details["gradients"] = "non-zero";
    }
    if (!later.empty()) f.message += "; " + internal::JoinCapped(later, 8);
    return {f};
  }

 private:
  void OnRecord(RankState& s, const StepRecord& record) {
    const Stall kind = Judge(s, record);
    if (kind == Stall::kNone) {
      s.run_first.reset();
      s.run_length = 0;
      s.stall_open = false;
      return;
    }
    if (s.run_length == 0) {
      s.run_first = pending_;
      s.run_first->kind = kind;
    }
    ++s.run_length;
    if (!s.stalled && s.run_length >= kStalledRun) {
      s.stalled = s.run_first;
      s.stall_open = true;
    }
    if (s.stall_open) {
      s.stalled_until = record.step;
      s.stalled_records = s.run_length;
    }
  }

  // Whether this record of the rank is stalled (and, in pending_, what it says); updates the
  // rank's previous parameters either way.
  Stall Judge(RankState& s, const StepRecord& record) {
    pending_ = StalledRecord{};
    pending_.step = record.step;
    pending_.lr = record.lr;
    std::unordered_map<std::string, double> grads;
    bool any_grad = false;
    bool non_finite_grad = false;
    for (const TensorRecord& t : record.tensors) {
      if (t.kind != TensorKind::kGrad) continue;
      any_grad = true;
      if (!std::isfinite(t.norm)) non_finite_grad = true;
      grads.emplace(t.name, t.norm);
    }
    const bool lr_moves = std::isfinite(record.lr) && record.lr > 0.0;

    // The parameters against the previous record's: in the same order as a rule, by name where not.
    const bool had_prev = s.have_prev;
    // The probe's step 0 holds the parameters of the models it knew as the first optimizer step
    // began: a model it learns of later (an FSDP or DDP module met at its first forward) adds
    // parameters that are not a changed model.
    const bool after_initial = had_prev && s.prev_step == 0;
    std::unordered_map<std::string, size_t> prev_index;
    bool indexed = false;
    bool moved = false;
    // The record's parameters; names are copied only where they are not the previous record's in
    // its order (a rank's records name the same parameters in the same order, step after step).
    std::vector<const TensorRecord*> now;
    now.reserve(s.prev.size());
    bool aligned = true;
    for (const TensorRecord& t : record.tensors) {
      if (t.kind != TensorKind::kParam) continue;
      const size_t i = now.size();
      const ParamState* before = nullptr;
      if (i < s.prev.size() && s.prev[i].name == t.name) {
        before = &s.prev[i];
      } else if (had_prev) {
        if (!indexed) {
          for (size_t k = 0; k < s.prev.size(); ++k) prev_index.emplace(s.prev[k].name, k);
          indexed = true;
        }
        auto it = prev_index.find(t.name);
        if (it != prev_index.end()) before = &s.prev[it->second];
        aligned = false;
      } else {
        aligned = false;
      }
      // A parameter new since the previous record, or of another shape or dtype: the model
      // changed, which is not a stall.
      if (had_prev && (before == nullptr ? !after_initial
                                         : before->numel != t.numel || before->dtype != t.dtype ||
                                               before->digest != t.digest)) {
        moved = true;
      }
      if (pending_.first.empty() && !any_grad) pending_.first = t.name;
      auto g = grads.find(t.name);
      const std::optional<double> eps = Epsilon(t.dtype);
      // Plain SGD's update, lr x |grad|, at least one rounding unit of the parameter: some element
      // of it moves by at least its own spacing, so the update cannot round away entirely.
      if (g != grads.end() && std::isfinite(g->second) && g->second > 0.0 && lr_moves && eps &&
          record.lr * g->second >= *eps * t.norm) {
        if (pending_.driven++ == 0) {
          pending_.first = t.name;
          pending_.first_grad_norm = g->second;
        }
      }
      now.push_back(&t);
      ++pending_.params;
    }
    if (aligned && now.size() == s.prev.size()) {
      for (size_t i = 0; i < now.size(); ++i) {
        s.prev[i].digest = now[i]->digest;
        s.prev[i].numel = now[i]->numel;
        s.prev[i].dtype = now[i]->dtype;
      }
    } else {
      s.prev.clear();
      for (const TensorRecord* t : now) s.prev.push_back(ParamState{t->name, t->digest, t->numel, t->dtype});
    }
    s.have_prev = true;
    s.prev_step = record.step;

    if (record.step < 1 || !lr_moves || non_finite_grad || pending_.params == 0 || moved) return Stall::kNone;
    // No gradient at all: torch's optimizers skip a parameter without one, so the step changed
    // nothing whether or not a previous record shows it.
    if (!any_grad) return record.loss_reported ? Stall::kWithoutGradients : Stall::kNone;
    return had_prev && pending_.driven > 0 ? Stall::kWithGradients : Stall::kNone;
  }

  std::string checker_;
  std::vector<RankState> ranks_;
  StalledRecord pending_;  // the record being judged
};

}  // namespace

std::vector<Finding> StalledParamsChecker::Check(const CheckContext& context) const {
  return JudgeInMemory(*StartJudge({}), name(), context);
}

std::unique_ptr<StepJudge> StalledParamsChecker::StartJudge(const JudgeStart& /*start*/) const {
  return std::make_unique<StalledParamsJudge>(std::string(name()));
}

}  // namespace lockstep
