#include "checkers/config_agreement_checker.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkers/internal/check_util.h"
#include "checkers/internal/value_sides.h"
#include "harness/trace/trace_fields.h"

namespace lockstep {
namespace {

constexpr const char* kUnset = "(unset)";

// A field of the header and every rank's value of it (index = rank; absent ranks left out).
struct Field {
  std::string name;  // "backend", "versions.nccl", "environment.NCCL_ALGO"
  std::vector<std::pair<int, std::string>> values;
};

// The fields to compare, in a stable order: the scalars, then each map's keys as any rank has them.
std::vector<Field> FieldsOf(const std::vector<RankTrace>& traces) {
  std::vector<const RankTrace*> present;
  for (const RankTrace& t : traces) {
    if (internal::HasData(t)) present.push_back(&t);  // a trace cut before its header has no world to compare
  }
  std::vector<Field> fields;
  auto scalar = [&](const char* name, auto value_of) {
    Field f{name, {}};
    for (const RankTrace* t : present) f.values.emplace_back(t->header.rank, value_of(t->header));
    fields.push_back(std::move(f));
  };
  scalar(trace_field::kBackend, [](const TraceHeader& h) { return h.backend; });
  scalar(trace_field::kWorldSize, [](const TraceHeader& h) { return std::to_string(h.world_size); });
  auto map = [&](const char* prefix, std::map<std::string, std::string> TraceHeader::*member) {
    std::map<std::string, Field> by_key;
    for (const RankTrace* t : present) {
      for (const auto& [key, value] : t->header.*member) by_key.emplace(key, Field{std::string(prefix) + "." + key, {}});
    }
    for (auto& [key, f] : by_key) {
      for (const RankTrace* t : present) {
        const auto& values = t->header.*member;
        auto it = values.find(key);
        f.values.emplace_back(t->header.rank, it == values.end() ? kUnset : it->second);
      }
      fields.push_back(std::move(f));
    }
  };
  map(trace_field::kVersions, &TraceHeader::versions);
  map(trace_field::kEnvironment, &TraceHeader::environment);
  return fields;
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

std::vector<Finding> ConfigAgreementChecker::Check(const CheckContext& context) const {
  std::vector<Finding> findings;
  for (const Field& field : FieldsOf(context.traces)) {
    // Each value with the ranks that hold it, in the order of the lowest rank holding it.
    internal::ValueSides sides;
    for (const auto& [rank, value] : field.values) sides.Add(value, rank);
    if (sides.sides().size() < 2) continue;
    const internal::ValueSide& most = sides.MostCommon();
    Finding f;
    f.checker = std::string(name());
    f.message = field.name + " differs across ranks before step 1: ";
    bool first = true;
    for (const internal::ValueSide& side : sides.sides()) {
      if (&side == &most) continue;
      f.message += std::string(first ? "" : "; ") + RanksText(side.ranks) +
                   (side.ranks.size() == 1 ? " has " : " have ") + "\"" + side.value + "\"";
      first = false;
    }
    f.message += " where " + RanksText(most.ranks) + (most.ranks.size() == 1 ? " has " : " have ") + "\"" +
                 most.value + "\"";
    f.details["field"] = field.name;
    f.ranks = sides.OddRanks();
    if (sides.HasMajority()) {
      f.details["majority"] = most.value;
    } else {
      // No majority: nothing says which value is the odd one, so every rank is named.
      f.message += "; no majority among " + std::to_string(field.values.size()) +
                   " ranks: every rank that disagrees is named";
      f.details["majority"] = "none";
      f.details["most_common"] = most.value;
    }
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace lockstep
