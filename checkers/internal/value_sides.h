// Ranks grouped by a value each reported, and which ranks are odd: the agreement checks'
// (config_agreement: a header field; group_agreement: the n-th group each rank made).
#pragma once

#include <string>
#include <vector>

namespace lockstep::internal {

struct ValueSide {
  std::string value;
  std::vector<int> ranks;  // in the order they were added
};

class ValueSides {
 public:
  void Add(const std::string& value, int rank);

  // In the order each value was first added (by the lowest rank, when ranks are added in order).
  const std::vector<ValueSide>& sides() const { return sides_; }

  // The most common side; of equals, the first added.
  const ValueSide& MostCommon() const;
  // Whether the most common side holds more than half of the ranks added.
  bool HasMajority() const;
  // The ranks not on the majority's side; with no majority, nothing says which value is odd, so
  // every rank. Sorted.
  std::vector<int> OddRanks() const;

 private:
  std::vector<ValueSide> sides_;
  size_t ranks_ = 0;
};

}  // namespace lockstep::internal
