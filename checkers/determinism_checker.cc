#include "checkers/determinism_checker.h"

#include <map>
#include <set>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

using internal::FormatExact;

// The differences between one rank's records of one step in the two runs.
struct StepDiff {
  std::vector<std::string> what;
  std::vector<std::string> tensors;  // "name" of differing tensors, recording order
};

StepDiff Compare(const StepRecord& a, const StepRecord& b) {
  StepDiff d;
  if (!internal::SameDouble(a.loss, b.loss)) {
    d.what.push_back("loss " + FormatExact(a.loss) + " vs " + FormatExact(b.loss));
  }
  if (!internal::SameDouble(a.grad_norm, b.grad_norm)) {
    d.what.push_back("grad norm " + FormatExact(a.grad_norm) + " vs " + FormatExact(b.grad_norm));
  }
  // Parameters and gradients share names: the kind is part of the key.
  std::map<std::pair<TensorKind, std::string>, const TensorRecord*> other;
  for (const TensorRecord& t : b.tensors) other[{t.kind, t.name}] = &t;
  for (const TensorRecord& t : a.tensors) {
    auto it = other.find({t.kind, t.name});
    if (it == other.end()) {
      d.tensors.push_back(t.name);
      d.what.push_back(std::string(ToString(t.kind)) + " " + t.name + " missing in the repeat");
      continue;
    }
    if (it->second->digest != t.digest) {
      d.tensors.push_back(t.name);
      d.what.push_back(std::string(ToString(t.kind)) + " " + t.name + " digest " + t.digest.ToHex() + " vs " +
                       it->second->digest.ToHex());
    }
    other.erase(it);
  }
  for (const auto& [key, t] : other) {
    d.tensors.push_back(t->name);
    d.what.push_back(std::string(ToString(key.first)) + " " + t->name + " only in the repeat");
  }
  return d;
}

}  // namespace

std::vector<Finding> DeterminismChecker::Check(const CheckContext& context) const {
  Finding f;
  f.checker = std::string(name());
  if (!context.repeat) {
    f.outcome = FindingOutcome::kError;
    f.message = "no repeat run to compare with";
    return {f};
  }
  const std::vector<RankTrace>& run = context.traces;
  const std::vector<RankTrace>& repeat = *context.repeat;
  if (run.size() != repeat.size()) {
    f.outcome = FindingOutcome::kError;
    f.message = "the repeat run has " + std::to_string(repeat.size()) + " ranks, the run " + std::to_string(run.size());
    return {f};
  }

  // step -> rank -> differences
  std::map<int64_t, std::map<int, StepDiff>> diffs;
  for (size_t r = 0; r < run.size(); ++r) {
    const auto a = internal::StepsByNumber(run[r]);
    const auto b = internal::StepsByNumber(repeat[r]);
    const bool a_done = run[r].footer.has_value(), b_done = repeat[r].footer.has_value();
    for (const auto& [step, rec] : a) {
      auto it = b.find(step);
      if (it == b.end()) {
        // A run cut short (crash, kill) lacks the later steps; only a finished run missing a step differs.
        if (b_done) diffs[step][static_cast<int>(r)].what.push_back("step only in the first run");
        continue;
      }
      StepDiff d = Compare(*rec, *it->second);
      if (!d.what.empty()) diffs[step][static_cast<int>(r)] = std::move(d);
    }
    for (const auto& [step, rec] : b) {
      if (!a.count(step) && a_done) diffs[step][static_cast<int>(r)].what.push_back("step only in the repeat");
    }
  }
  if (diffs.empty()) return {};

  const auto& [step, by_rank] = *diffs.begin();
  f.step = step;
  std::set<std::string> tensors;
  std::vector<std::string> parts;
  for (const auto& [rank, d] : by_rank) {
    f.ranks.push_back(rank);
    for (const std::string& t : d.tensors) {
      if (f.tensor.empty()) f.tensor = t;
      if (tensors.insert(t).second) f.tensors.push_back(t);
    }
    parts.push_back("rank " + std::to_string(rank) + ": " + internal::JoinCapped(d.what, 3));
  }
  f.message = "the repeat run differs from the first at step " + std::to_string(step) + ": " +
              internal::JoinCapped(parts, 4);
  if (diffs.size() > 1) {
    f.message += "; " + std::to_string(diffs.size() - 1) + " later step" + (diffs.size() == 2 ? "" : "s") + " differ too";
    f.details["later_steps"] = std::to_string(diffs.size() - 1);
  }
  return {f};
}

}  // namespace lockstep
