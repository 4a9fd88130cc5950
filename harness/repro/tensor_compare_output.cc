#include "harness/repro/tensor_compare_output.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "harness/result/json_number.h"

namespace lockstep {
namespace {

std::string RankList(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::string IndexText(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string Elements(int64_t n) { return std::to_string(n) + (n == 1 ? " differing element" : " differing elements"); }

void TensorText(const TensorComparison& t, std::string& out) {
  out += t.Key() + "  " + t.dtype + " " + IndexText(t.shape);
  if (!t.compared) {
    out += ": not compared (" + t.not_compared_reason + ")\n";
    return;
  }
  if (!t.Differs()) {
    out += ": identical on " + RankList(t.ranks) + "\n";
    return;
  }
  out += "\n";
  if (!t.missing_ranks.empty()) out += "  missing on " + RankList(t.missing_ranks) + " (replicated: every rank should have saved it)\n";
  if (t.differing_ranks.empty()) return;
  std::vector<int> odd;
  for (const auto& d : t.differing_ranks) odd.push_back(d.rank);
  out += "  " + RankList(odd) + (odd.size() == 1 ? " differs" : " differ") + " from " +
         (t.majority ? "the majority, " + RankList(t.reference_ranks)
                     : RankList(t.reference_ranks) + " (no majority: the lowest rank's group is the reference)") +
         "\n";
  for (const auto& d : t.differing_ranks) {
    out += "  rank " + std::to_string(d.rank) + ": ";
    if (!d.problem.empty()) {
      out += "not comparable element-wise: " + d.problem + "\n";
      continue;
    }
    out += Elements(d.differing_elements) + " of " + std::to_string(t.numel) + ", max abs diff " +
           Number(d.max_abs_diff) + ", max rel diff " + Number(d.max_rel_diff) + "\n";
  }
  if (t.differing_ranks.size() > 1) out += "  " + Elements(t.differing_elements) + " in all (on any rank)\n";
  if (!t.first_differences.empty()) {
    out += "  first differing " + std::string(t.first_differences.size() == 1 ? "index" : "indices") + ":\n";
    for (const auto& e : t.first_differences) {
      out += "    " + IndexText(e.index) + ":";
      for (const auto& v : e.values) out += "  rank " + std::to_string(v.rank) + " " + v.text;
      out += "\n";
    }
  }
}

}  // namespace

std::string TensorComparisonText(const TensorDumpComparison& comparison) {
  std::string out = "tensors saved after step " + std::to_string(comparison.step) + " by " +
                    RankList(comparison.ranks) + " in " + comparison.dir.string() + "\n";
  int compared = 0;
  for (const auto& t : comparison.tensors) {
    TensorText(t, out);
    compared += t.compared ? 1 : 0;
  }
  const int differing = comparison.DifferingCount();
  if (differing > 0) {
    out += std::to_string(differing) + " of " + std::to_string(compared) + (compared == 1 ? " tensor differs" : " tensors differ") +
           " across ranks\n";
  } else {
    out += "no difference: " + std::to_string(compared) + (compared == 1 ? " tensor" : " tensors") +
           " identical across ranks\n";
  }
  return out;
}

nlohmann::ordered_json TensorComparisonJson(const TensorDumpComparison& comparison) {
  nlohmann::ordered_json j;
  j["schema"] = kTensorCompareSchema;
  j["dir"] = comparison.dir.string();
  j["step"] = comparison.step;
  j["ranks"] = comparison.ranks;
  j["differing_tensors"] = comparison.DifferingCount();
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const auto& t : comparison.tensors) {
    nlohmann::ordered_json tj;
    tj["key"] = t.Key();
    tj["kind"] = t.kind;
    tj["name"] = t.name;
    tj["dtype"] = t.dtype;
    tj["shape"] = t.shape;
    tj["numel"] = t.numel;
    tj["ranks"] = t.ranks;
    tj["missing_ranks"] = t.missing_ranks;
    tj["compared"] = t.compared;
    if (!t.compared) tj["not_compared_reason"] = t.not_compared_reason;
    tj["differs"] = t.Differs();
    tj["reference_ranks"] = t.reference_ranks;
    tj["majority"] = t.majority;
    tj["differing_elements"] = t.differing_elements;
    tj["max_abs_diff"] = JsonNumber<nlohmann::ordered_json>(t.max_abs_diff);
    tj["max_rel_diff"] = JsonNumber<nlohmann::ordered_json>(t.max_rel_diff);
    nlohmann::ordered_json per_rank = nlohmann::ordered_json::array();
    for (const auto& d : t.differing_ranks) {
      nlohmann::ordered_json dj;
      dj["rank"] = d.rank;
      dj["differing_elements"] = d.differing_elements;
      dj["max_abs_diff"] = JsonNumber<nlohmann::ordered_json>(d.max_abs_diff);
      dj["max_rel_diff"] = JsonNumber<nlohmann::ordered_json>(d.max_rel_diff);
      if (!d.problem.empty()) dj["problem"] = d.problem;
      per_rank.push_back(std::move(dj));
    }
    tj["differing_ranks"] = std::move(per_rank);
    nlohmann::ordered_json first = nlohmann::ordered_json::array();
    for (const auto& e : t.first_differences) {
      nlohmann::ordered_json ej;
      ej["index"] = e.index;
      ej["flat_index"] = e.flat_index;
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      for (const auto& v : e.values) {
        values.push_back({{"rank", v.rank}, {"value", JsonNumber<nlohmann::ordered_json>(v.value)}, {"text", v.text}});
      }
      ej["values"] = std::move(values);
      first.push_back(std::move(ej));
    }
    tj["first_differences"] = std::move(first);
    tensors.push_back(std::move(tj));
  }
  j["tensors"] = std::move(tensors);
  return j;
}

}  // namespace lockstep
