#include "checkers/finite_checker.h"

#include <cmath>
#include <map>
#include <set>

#include "checkers/internal/check_util.h"

namespace lockstep {
namespace {

// What is not finite in one rank's step record.
std::vector<std::string> NonFinite(const StepRecord& s, std::string* first_tensor) {
  std::vector<std::string> what;
  if (s.step > 0 && !std::isfinite(s.loss)) what.push_back("loss " + internal::FormatNumber(s.loss));
  if (s.step > 0 && !std::isfinite(s.grad_norm)) what.push_back("grad norm " + internal::FormatNumber(s.grad_norm));
  for (const TensorRecord& t : s.tensors) {
    if (std::isfinite(t.norm)) continue;
    if (first_tensor->empty()) *first_tensor = t.name;
    what.push_back(std::string(ToString(t.kind)) + " " + t.name + " norm " + internal::FormatNumber(t.norm));
  }
  return what;
}

}  // namespace

std::vector<Finding> FiniteChecker::Check(const CheckContext& context) const {
  // step -> rank -> what is not finite
  std::map<int64_t, std::map<int, std::vector<std::string>>> bad;
  std::map<int64_t, std::string> first_tensor;
  for (size_t r = 0; r < context.traces.size(); ++r) {
    if (!internal::HasData(context.traces[r])) continue;
    for (const StepRecord& s : context.traces[r].steps) {
      std::string tensor;
      std::vector<std::string> what = NonFinite(s, &tensor);
      if (what.empty()) continue;
      bad[s.step][static_cast<int>(r)] = std::move(what);
      if (!tensor.empty() && first_tensor[s.step].empty()) first_tensor[s.step] = tensor;
    }
  }
  if (bad.empty()) return {};

  const auto& [step, by_rank] = *bad.begin();
  Finding f;
  f.checker = std::string(name());
  f.step = step;
  f.tensor = first_tensor[step];
  std::vector<std::string> parts;
  std::set<std::string> tensors;
  for (const auto& [rank, what] : by_rank) {
    f.ranks.push_back(rank);
    parts.push_back("rank " + std::to_string(rank) + ": " + internal::JoinCapped(what, 4));
  }
  for (const auto& [rank, what] : by_rank) {
    for (const TensorRecord& t : internal::StepsByNumber(context.traces[rank]).at(step)->tensors) {
      if (!std::isfinite(t.norm) && tensors.insert(t.name).second) f.tensors.push_back(t.name);
    }
  }
  f.message = "non-finite values at step " + std::to_string(step) + ": " + internal::JoinCapped(parts, 8);
  if (bad.size() > 1) {
    f.message += "; non-finite again at " + std::to_string(bad.size() - 1) + " later step" +
                 (bad.size() == 2 ? "" : "s") + " (last: " + std::to_string(bad.rbegin()->first) + ")";
    f.details["later_steps"] = std::to_string(bad.size() - 1);
  }
  return {f};
}

}  // namespace lockstep
