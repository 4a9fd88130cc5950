#include "checkers/internal/value_sides.h"

#include <algorithm>
#include <cassert>

namespace lockstep::internal {

void ValueSides::Add(const std::string& value, int rank) {
  ++ranks_;
  auto it = std::find_if(sides_.begin(), sides_.end(), [&](const ValueSide& s) { return s.value == value; });
  if (it == sides_.end()) sides_.push_back({value, {rank}});
  else it->ranks.push_back(rank);
}

const ValueSide& ValueSides::MostCommon() const {
  assert(!sides_.empty());
  // max_element keeps the first of equals.
  return *std::max_element(sides_.begin(), sides_.end(),
                           [](const ValueSide& a, const ValueSide& b) { return a.ranks.size() < b.ranks.size(); });
}

bool ValueSides::HasMajority() const { return !sides_.empty() && MostCommon().ranks.size() * 2 > ranks_; }

std::vector<int> ValueSides::OddRanks() const {
  const ValueSide* majority = HasMajority() ? &MostCommon() : nullptr;
  std::vector<int> odd;
  for (const ValueSide& s : sides_) {
    if (&s != majority) odd.insert(odd.end(), s.ranks.begin(), s.ranks.end());
  }
  std::sort(odd.begin(), odd.end());
  return odd;
}

}  // namespace lockstep::internal
